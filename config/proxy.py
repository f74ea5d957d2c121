"""What a trusted reverse proxy tells about the client (see CLIENT_IP_HEADER in settings)."""
from __future__ import annotations

import ipaddress

from django.conf import settings


def client_ip(request) -> str | None:
    """The client's address: the last entry the proxy appended to CLIENT_IP_HEADER when one is
    configured (entries before it come from the client and may be forged), else the connection's.
    Not an address (a broken or hostile header): the connection's, so nothing odd is stored."""
    if settings.CLIENT_IP_HEADER:
        last = request.META.get(settings.CLIENT_IP_HEADER, "").split(",")[-1].strip()
        try:
            return str(ipaddress.ip_address(last))
        except ValueError:
            pass
    return request.META.get("REMOTE_ADDR")
