"""Rate limits of the API and the pages: Django REST framework's throttles, with rates read when a
request arrives. Here, below api/ and frontend/, because the crowd pages count study links with the
API's arrival throttle (one count per address for both).

DRF's own classes copy DEFAULT_THROTTLE_RATES when their module is imported, so a changed setting
(a test's low rate, say) would go unnoticed; these read the current settings instead. A rate of
None turns that throttle off. The rates and what they protect are in config/settings.py."""
from __future__ import annotations

import ipaddress

from django.core.exceptions import ImproperlyConfigured
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

from config.proxy import client_ip


class _CurrentRate:
    scope: str

    def get_rate(self):
        rates = api_settings.DEFAULT_THROTTLE_RATES
        if self.scope not in rates:
            raise ImproperlyConfigured(f"no throttle rate for scope {self.scope!r} in DEFAULT_THROTTLE_RATES")
        return rates[self.scope]


class AnonThrottle(_CurrentRate, AnonRateThrottle):
    """Callers without credentials, by address (only endpoints open to them, such as the schema)."""


class UserThrottle(_CurrentRate, UserRateThrottle):
    """Every signed-in caller, by user: one count for their token and their browser session."""


class UploadThrottle(_CurrentRate, UserRateThrottle):
    """File uploads (multipart POSTs), by user: each one is stored and starts an import job."""

    scope = "uploads"

    def allow_request(self, request, view):
        if request.method != "POST" or not request.content_type.startswith("multipart/form-data"):
            return True
        return super().allow_request(request, view)


class CrowdArrivalThrottle(_CurrentRate, SimpleRateThrottle):
    """Study links and the API arrival, by client address whoever is signed in: each arrival can
    make an account (a rater in the pool) or try a resume code. The pages call it too (they are
    Django views: allow_request needs only the request)."""

    scope = "crowd_arrivals"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": arrival_ident(client_ip(request))}


def arrival_ident(address: str | None) -> str:
    """What the arrival throttle counts by: an IPv4 address, or an IPv6 address's /64 (one machine
    or home is given a whole /64, 2^64 addresses to rotate through)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return address or "unknown"
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/64", strict=False))


class InvitationIssueThrottle(_CurrentRate, UserRateThrottle):
    """New invitation links (creating a rater without a password, an admin's password reset), by
    admin: each one is a working way into an account for a week."""

    scope = "invitations_issued"

    def allow_request(self, request, view):
        if request.method != "POST":
            return True
        return super().allow_request(request, view)


class InvitationUseThrottle(_CurrentRate, SimpleRateThrottle):
    """The invitation page (open a link, set a password), by client address: every request is a
    guess at a token. The page calls it (a Django view: allow_request needs only the request)."""

    scope = "invitation_uses"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": arrival_ident(client_ip(request))}
