"""Template helpers shared by every page: the viewer's role and navigation links."""
from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from annotation import roles
from annotation.services.operations import describe

register = template.Library()


@register.simple_tag
def role_of(user) -> str | None:
    return roles.role_of(user)


@register.simple_tag(takes_context=True)
def nav_link(context, href: str, text: str, exact: bool = False, also: str = ""):
    """A navigation link marked aria-current when it leads to the page being shown, or (unless
    `exact`) to a section the page is in; `also` lists more section prefixes, space-separated."""
    path = context["request"].path
    current = (path == href if exact else path.startswith(href)) or any(path.startswith(p) for p in also.split())
    return format_html('<a href="{}"{}>{}</a>', href, mark_safe(' aria-current="page"') if current else "", text)


@register.filter
def percent(value, digits: int = 0) -> str:
    """0.1234 -> '12%' (or with `digits` decimals); a dash for None or a figure the result lacks
    (a proxy none of whose ranking tasks is complete stores only its task count)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "–"
    return f"{value * 100:.{int(digits)}f}%"


@register.filter
def label_name(value: str) -> str:
    return {"relevant": "Relevant", "not_relevant": "Not relevant", "ambiguous": "Ambiguous",
            "broken": "Clip doesn't play"}.get(value, value or "–")


@register.filter
def job_title(job) -> str:
    """A job in words, as its card says it (services/operations/describe.py)."""
    return describe.job_title(job)
