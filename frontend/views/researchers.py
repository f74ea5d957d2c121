"""The admin's researchers page: who has read access to the API, add one, remove one.
Changes go through /api/v1/researchers/ from the page script, so its rules and messages apply."""
from __future__ import annotations

from django.shortcuts import render

from annotation.page_access import page_for
from annotation.services.accounts.users import researchers


@page_for("admin")
def researcher_list(request):
    return render(request, "frontend/admin_ui/researchers.html", {"researchers": researchers()})
