"""Where the workers may send a request: one policy for machine judges and for clip media.

Every outbound request the platform makes on an admin's say-so (a judge's base URL, a clip's
media URL) passes `url_check` (the URL's text) and `address_check` (each address its host
resolves to), and is sent through `pinned_client` (or any httpx transport whose pool connects
through `pinned_backend`), which opens its sockets to the address that was checked, never to a
second resolution of the name (no DNS rebinding between check and connect).

The rules, each named in the error that applies it:

- **scheme**: http or https only.
- **text**: ASCII; no whitespace, control characters (CR, LF, ...) or backslash anywhere; no
  userinfo (`user:pass@`); no fragment; a query only where the caller allows one.
- **port**: the URL's explicit port, digits only, 1-65535, or the scheme's default (80, 443).
  Allowed: 80, 443, and what the operator lists in REJUDGE_OUTBOUND_PORTS (ports and ranges
  `8000-8099`). A range never admits the SERVICE_PORTS (PostgreSQL 5432, Redis 6379, SSH 22, ...):
  each must be listed on its own to be reachable, so that `1024-65535` does not open the database.
- **address**: the host is resolved once (getaddrinfo, so every spelling of an address,
  `localhost`, `[::1]`, `0x7f000001`, `2130706433`, `127.1`, `017700000001`, is read as the address
  it is, never matched as text), and every address it resolves to must be globally routable:
  loopback, private, link-local (with the cloud metadata range 169.254.0.0/16), unique-local,
  shared (100.64/10), multicast, unspecified and reserved addresses are refused, IPv6 addresses
  that stand for an IPv4 one (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, SIIT, 6to4 2002::/16,
  IPv4-compatible) as the IPv4 address they carry (a local-use NAT64 prefix 64:ff9b:1::/48
  always), unless the address lies in a network the operator
  lists in REJUDGE_OUTBOUND_ALLOW (e.g. `10.0.0.0/8,127.0.0.1/32`: a model server on the private
  network; the test servers on 127.0.0.1).
- **redirects** are not followed by the client; `download` follows them itself, each hop checked.

Error messages say which rule refused and never what a remote service answered beyond its status
code: a connection refused, reset or answered in something that is not HTTP are one message
(NOT_HTTP), so that the worker cannot be used as a port scanner.
"""
from __future__ import annotations

import ipaddress
import re
import socket
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

DEFAULT_PORTS = {"http": 80, "https": 443}
# Services a worker's network commonly holds whose port a range must never open (each may still be
# listed on its own in REJUDGE_OUTBOUND_PORTS).
SERVICE_PORTS = frozenset({
    21, 22, 23, 25, 53, 110, 111, 135, 139, 143, 389, 445, 465, 587, 636, 873, 993, 995, 1433, 1521, 2049, 2375, 2376,
    2379, 2380, 3306, 3389, 4369, 5432, 5433, 5672, 5984, 6379, 6380, 6443, 7000, 7001, 8500, 9042, 9092, 9200, 9300,
    10250, 11211, 15672, 25672, 26379, 27017, 27018, 50070,
})
NOT_HTTP = "did not answer with HTTP"
MAX_REDIRECTS = 5
_FORBIDDEN_TEXT = re.compile(r"[\x00-\x20\x7f\\]")
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<path>[^?#]*)"
                  r"(?:\?(?P<query>[^#]*))?(?P<fragment>#.*)?$", re.DOTALL)
_HOST_PORT = re.compile(r"^(?P<host>\[[^\]]*\]|[^:\[\]]*)(?::(?P<port>.*))?$")


class OutboundRefused(ValueError):
    """A URL or address the outbound policy refuses; the message names the rule."""


@dataclass(frozen=True)
class Target:
    """A URL that passed `url_check`: its parts, host lower-cased, port made explicit."""

    scheme: str
    host: str  # as written (a name, or an IP literal without brackets), lower-case
    port: int
    path: str
    query: str | None

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}" + (f"?{self.query}" if self.query is not None else "")


@dataclass(frozen=True)
class Policy:
    """The operator's exceptions to the rules: networks whose addresses are reachable although not
    public, and ports beyond 80 and 443."""

    allow_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    allow_ports: frozenset[int] = frozenset()
    allow_port_ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, networks: str = "", ports: str = "") -> Policy:
        """From REJUDGE_OUTBOUND_ALLOW (networks, comma or space separated) and
        REJUDGE_OUTBOUND_PORTS (ports and ranges a-b); a bad entry raises OutboundRefused naming it."""
        allowed = []
        for entry in re.split(r"[,\s]+", networks or ""):
            if entry:
                try:
                    allowed.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    raise OutboundRefused(f"REJUDGE_OUTBOUND_ALLOW: {entry!r} is not a network (e.g. 10.0.0.0/8)") from None
        single, ranges = set(), []
        for entry in re.split(r"[,\s]+", ports or ""):
            if not entry:
                continue
            match = re.fullmatch(r"(\d{1,5})(?:-(\d{1,5}))?", entry)
            low, high = (int(match.group(1)), int(match.group(2) or match.group(1))) if match else (0, 0)
            if not match or not 1 <= low <= high <= 65535:
                raise OutboundRefused(f"REJUDGE_OUTBOUND_PORTS: {entry!r} is not a port or a range a-b within 1-65535")
            if match.group(2):
                ranges.append((low, high))
            else:
                single.add(low)
        return cls(tuple(allowed), frozenset(single), tuple(ranges))

    def port_allowed(self, port: int) -> bool:
        if port in (80, 443) or port in self.allow_ports:
            return True
        return port not in SERVICE_PORTS and any(low <= port <= high for low, high in self.allow_port_ranges)

    def network_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(address.version == net.version and address in net for net in self.allow_networks)


def policy_from_settings() -> Policy:
    from django.conf import settings

    configured = getattr(settings, "REJUDGE_OUTBOUND", {})
    return Policy.parse(configured.get("ALLOW_NETWORKS", ""), configured.get("ALLOW_PORTS", ""))


def url_check(url: str, *, policy: Policy, allow_query: bool = True, what: str = "URL") -> Target:
    """The URL's text against the rules (no resolution: see `address_check`)."""
    if not isinstance(url, str) or not url:
        raise OutboundRefused(f"{what}: empty")
    if not url.isascii():
        raise OutboundRefused(f"{what}: only ASCII (write an internationalised host in its xn-- form, and "
                              "percent-encode the path)")
    if _FORBIDDEN_TEXT.search(url):
        raise OutboundRefused(f"{what}: no whitespace, control characters (CR, LF) or backslashes")
    match = _URL.match(url)
    scheme = (match.group("scheme") if match else url.split(":", 1)[0]).lower()
    if not match or scheme not in DEFAULT_PORTS:
        raise OutboundRefused(f"{what}: only http:// and https:// URLs are accepted")
    authority = match.group("authority")
    if "@" in authority:
        raise OutboundRefused(f"{what}: no credentials in the URL (user:password@); a judge's key goes in key_env")
    if match.group("fragment") is not None:
        raise OutboundRefused(f"{what}: no fragment (#...)")
    if match.group("query") is not None and not allow_query:
        raise OutboundRefused(f"{what}: no query (?...)")
    parts = _HOST_PORT.match(authority)
    host = (parts.group("host") if parts else "").lower()
    if host.startswith("["):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise OutboundRefused(f"{what}: {host!r} in brackets is not an IPv6 address") from None
    if not host or not re.fullmatch(r"[a-z0-9.:_-]+", host) or host.strip(".") == "":
        raise OutboundRefused(f"{what}: names no host")
    port_text = parts.group("port") if parts else None
    if port_text is None:
        port = DEFAULT_PORTS[scheme]
    elif not re.fullmatch(r"[0-9]{1,5}", port_text) or not 1 <= int(port_text) <= 65535:
        raise OutboundRefused(f"{what}: the port must be a number from 1 to 65535")
    else:
        port = int(port_text)
    if not policy.port_allowed(port):
        raise OutboundRefused(f"{what}: port {port} is not allowed (80 and 443, and the ports the operator lists in "
                              "REJUDGE_OUTBOUND_PORTS; a database's or cache's port must be listed on its own)")
    return Target(scheme, host, port, match.group("path"), match.group("query"))


# IPv6 prefixes whose last 32 bits are an IPv4 address a gateway translates to (NAT64's
# well-known prefix, RFC 6052; SIIT ::ffff:0:0:0/96), and the deprecated IPv4-compatible ::/96.
_EMBEDDING_IPV4 = tuple(ipaddress.ip_network(n) for n in ("64:ff9b::/96", "::ffff:0:0:0/96", "::/96"))
# NAT64 prefixes a network chooses itself (RFC 8215), where the IPv4 address may sit anywhere.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")


def _carried_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, SIIT, 6to4, IPv4-compatible):
    the policy judges it as that address (:: and ::1 are themselves)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if int(ip) > 1 and any(ip in net for net in _EMBEDDING_IPV4):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_refusal(address: str, policy: Policy) -> str | None:
    """Why `address` may not be reached (the rule's name), or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if policy.network_allowed(ip):
        return None
    carried = _carried_ipv4(ip)
    if carried is not None:
        ip = carried
        if policy.network_allowed(ip):
            return None
    checks = (("unspecified", ip.is_unspecified), ("loopback", ip.is_loopback),
              ("link-local (the cloud metadata range 169.254.0.0/16 among them)", ip.is_link_local),
              ("multicast", ip.is_multicast),
              ("unique-local", isinstance(ip, ipaddress.IPv6Address) and ip in ipaddress.ip_network("fc00::/7")),
              ("private", ip.is_private), ("not globally routable (reserved or shared)",
                                           not ip.is_global or (ip.version == 6 and ip in _LOCAL_NAT64)))
    for rule, applies in checks:
        if applies:
            return rule
    return None


Resolver = Callable[[str, int], Iterable[str]]


def system_resolver(host: str, port: int) -> list[str]:
    return [info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def address_check(target: Target, *, policy: Policy, resolver: Resolver = system_resolver, what: str = "URL") -> str:
    """Resolves the host once and returns the address to connect to; every address the name
    resolves to must pass (a name with one public and one internal address is refused)."""
    try:
        addresses = list(dict.fromkeys(resolver(target.host, target.port)))
    except (OSError, UnicodeError):
        addresses = []
    if not addresses:
        raise OutboundRefused(f"{what}: the host {target.host!r} does not resolve")
    for address in addresses:
        rule = address_refusal(address, policy)
        if rule:
            raise OutboundRefused(f"{what}: the host resolves to an address the outbound policy refuses: {rule} "
                                  "(REJUDGE_OUTBOUND_ALLOW lists the networks an operator allows)")
    return addresses[0]


def destination_check(url: str, *, policy: Policy | None = None, allow_query: bool = True, what: str = "URL",
                      resolver: Resolver = system_resolver) -> tuple[Target, str]:
    """`url_check` then `address_check`: the target and the checked address to connect to."""
    policy = policy if policy is not None else policy_from_settings()
    target = url_check(url, policy=policy, allow_query=allow_query, what=what)
    return target, address_check(target, policy=policy, resolver=resolver, what=what)


class PinnedBackend(httpcore.NetworkBackend):
    """httpcore's network backend, connecting each (host, port) to the address checked for it:
    pinned up front (`pin`), or, with `resolve_new`, checked and pinned at its first connection; a
    host neither pinned nor admitted is refused (OutboundRefused). The URL keeps the name, so the
    Host header, TLS's server name and the certificate check are the name's; only the socket goes
    to the checked address. Give it to an httpx transport's connection pool (`pinned_transport`,
    or a judge run's transport, runner/client.py)."""

    def __init__(self, *, policy: Policy, resolve_new: bool = False, resolver: Resolver = system_resolver,
                 inner: httpcore.NetworkBackend | None = None) -> None:
        self._policy = policy
        self._resolve_new = resolve_new
        self._resolver = resolver
        self._inner = inner or httpcore.SyncBackend()
        self._pins: dict[tuple[str, int], str] = {}

    def pin(self, target: Target, address: str) -> None:
        self._pins[(target.host, target.port)] = address

    def address_for(self, host: str, port: int) -> str:
        key = (host.lower().strip("[]"), port)
        if key not in self._pins:
            if not self._resolve_new:
                raise OutboundRefused(f"URL: {key[0]}:{port} is not the destination that was checked")
            if not self._policy.port_allowed(port):
                raise OutboundRefused(f"URL: port {port} is not allowed")
            target = Target("http", key[0], port, "", None)
            self._pins[key] = address_check(target, policy=self._policy, resolver=self._resolver)
        return self._pins[key]

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return self._inner.connect_tcp(self.address_for(host, port), port, timeout=timeout, local_address=local_address,
                                       socket_options=socket_options)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise OutboundRefused("URL: no unix sockets")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def pinned_backend(*, url: str | None = None, policy: Policy | None = None, allow_query: bool = True, what: str = "URL",
                   resolver: Resolver = system_resolver, inner: httpcore.NetworkBackend | None = None) -> PinnedBackend:
    """With `url`: a backend pinned to that URL's host alone, checked now (raising OutboundRefused
    naming the rule). Without: each host is checked at its first connection."""
    policy = policy if policy is not None else policy_from_settings()
    backend = PinnedBackend(policy=policy, resolve_new=url is None, resolver=resolver, inner=inner)
    if url is not None:
        target, address = destination_check(url, policy=policy, allow_query=allow_query, what=what, resolver=resolver)
        backend.pin(target, address)
    return backend


class PinnedTransport(httpx.HTTPTransport):
    """httpx's transport over a connection pool that connects through `backend` (httpx 0.28 takes
    no network backend, so the pool it made is replaced by one that does): the one place that
    replaces it, for fetching clips and for the judge client (runner/client.py, whose backend also
    keeps each request's deadline). No proxy or certificate settings are read from the environment."""

    def __init__(self, *, backend: httpcore.NetworkBackend, limits: httpx.Limits = httpx.Limits()) -> None:
        super().__init__(limits=limits, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=self._pool._ssl_context, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend)


def pinned_client(*, url: str | None = None, policy: Policy | None = None, allow_query: bool = True,
                  what: str = "URL", resolver: Resolver = system_resolver,
                  timeout: httpx.Timeout | float = 30.0) -> httpx.Client:
    """An httpx client under the policy (see `pinned_backend`) that follows no redirect."""
    backend = pinned_backend(url=url, policy=policy, allow_query=allow_query, what=what, resolver=resolver)
    return httpx.Client(transport=PinnedTransport(backend=backend), timeout=timeout, follow_redirects=False,
                        trust_env=False)


@dataclass
class Download:
    path: Path
    bytes: int
    content_type: str
    hops: list[str] = field(default_factory=list)


def download(url: str, dest: Path, *, max_bytes: int, deadline_seconds: float, policy: Policy | None = None,
             resolver: Resolver = system_resolver, what: str = "media URL") -> Download:
    """GETs `url` into `dest`, following at most MAX_REDIRECTS redirects, each hop checked as the
    first; at most `max_bytes` and `deadline_seconds` in all. Raises OutboundRefused naming the rule
    (a refused hop, the size, the time, a status other than 200, an answer that is not HTTP)."""
    policy = policy if policy is not None else policy_from_settings()
    started = time.monotonic()
    hops = []
    with pinned_client(policy=policy, resolver=resolver, timeout=httpx.Timeout(min(30.0, deadline_seconds))) as client:
        for _ in range(MAX_REDIRECTS + 1):
            destination_check(url, policy=policy, what=what, resolver=resolver)  # the hop's rule, before any byte
            hops.append(url)
            try:
                with client.stream("GET", url, headers={"Accept-Encoding": "identity"}) as response:
                    if response.is_redirect:
                        location = response.headers.get("Location", "")
                        if not location:
                            raise OutboundRefused(f"{what}: answered HTTP {response.status_code} without a Location")
                        url = urljoin(url, location)
                        continue
                    if response.status_code != 200:
                        raise OutboundRefused(f"{what}: answered HTTP {response.status_code}")
                    size = 0
                    with open(dest, "wb") as out:
                        for chunk in response.iter_raw(64 * 1024):
                            size += len(chunk)
                            if size > max_bytes:
                                raise OutboundRefused(f"{what}: larger than {max_bytes} bytes")
                            if time.monotonic() - started > deadline_seconds:
                                raise OutboundRefused(f"{what}: not received within {deadline_seconds:.0f}s")
                            out.write(chunk)
                    return Download(Path(dest), size, response.headers.get("Content-Type", ""), hops)
            except httpx.TimeoutException:
                raise OutboundRefused(f"{what}: no answer within the timeout") from None
            except httpx.InvalidURL:  # a Location httpx cannot read (`data:,x`): no HTTPError
                raise OutboundRefused(f"{what}: a redirect to a Location that is no http(s) URL") from None
            except httpx.HTTPError:
                raise OutboundRefused(f"{what}: {NOT_HTTP}") from None
    raise OutboundRefused(f"{what}: more than {MAX_REDIRECTS} redirects")


@contextmanager
def downloaded(url: str, *, what: str = "media URL", policy: Policy | None = None,
               resolver: Resolver = system_resolver) -> Iterator[Path]:
    """`download` into a temporary file (removed afterwards) under the REJUDGE_OUTBOUND limits:
    how a clip referenced by URL reaches ffmpeg, which itself reads local files only."""
    from django.conf import settings

    limits = getattr(settings, "REJUDGE_OUTBOUND", {})
    suffix = Path(urlsplit(url).path).suffix if url.isascii() else ""
    suffix = suffix if re.fullmatch(r"\.[A-Za-z0-9]{1,9}", suffix) else ""  # the file's name only: ffmpeg reads its bytes
    with tempfile.TemporaryDirectory(prefix="rejudge-fetch-") as folder:
        target = Path(folder) / f"media{suffix}"
        download(url, target, max_bytes=limits.get("MEDIA_MAX_BYTES", 1 << 30),
                 deadline_seconds=limits.get("MEDIA_DEADLINE_SECONDS", 300), policy=policy, resolver=resolver, what=what)
        yield target
