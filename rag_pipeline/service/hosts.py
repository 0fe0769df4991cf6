"""The host names the service answers to: a request naming another in its ``Host`` header is
refused, so a web page that rebinds its own name to this machine's address (DNS rebinding)
reads nothing through a visitor's browser.

``serve`` on a loopback address answers to ``localhost``, ``127.0.0.1`` and ``::1`` (and the
address it is bound to), plus each ``--allowed-host`` (the name a proxy on the same machine
forwards). On any other address it answers to every name unless ``--allowed-host`` names
them (then to those, the loopback names and the bound address): the names a team reaches it
by are not the service's to guess.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from rag_pipeline.service.private_headers import PRIVATE_HEADERS

__all__ = ["HostCheck", "allowed_hosts", "host_of", "hosts_line", "is_loopback"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or ``localhost``) is this machine only."""
    address = _address(host)
    return host.lower() == "localhost" or (address is not None and address.is_loopback)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address (written any way, in brackets or not), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The names the service bound to ``bound`` answers to (each as :func:`host_of` reads a
    ``Host``: lower case, an IP address in its canonical form, no port), or None for every name
    (a non-loopback bind without ``extra``)."""
    names = {_allowed_name(name) for name in extra if name.strip()}
    if not names and not is_loopback(bound):
        return None
    # A page cannot make a browser send a loopback name or an address it did not type: the
    # rebinding page's own name is what its requests carry.
    return frozenset({*LOOPBACK_NAMES, _canonical(bound.lower()), *names})


def _allowed_name(name: str) -> str:
    """An ``--allowed-host`` as a ``Host`` of it reads (a name or an address, a port dropped).

    Raises:
        ValueError: It is no host name or address.
    """
    bare = name.strip().lower()
    address = _address(bare)
    if address is not None:
        return str(address)
    found = host_of(bare)
    if not found:
        raise ValueError(f"--allowed-host {name!r} is no host name or address (a name, an "
                         "address, optionally :PORT)")
    return found


_HOST = re.compile(r"\[(?P<ipv6>[0-9a-f:.]+)\](?::\d{1,5})?|(?P<name>[^:\[\]@/\s]+)(?::\d{1,5})?")


def host_of(header: str) -> str:
    """The name of a ``Host`` header (RFC 9110: a name or an address, an optional port), lower
    case and an IP address in its canonical form (``[::1]:8000`` -> ``::1``); ``""`` for a
    value that is no host (``[::1]evil``, ``localhost:evil``)."""
    match = _HOST.fullmatch(header.strip().lower())
    if match is None:
        return ""
    return _canonical(match["ipv6"] or match["name"])


def _canonical(host: str) -> str:
    address = _address(host)
    return host if address is None else str(address)


def hosts_line(allowed: frozenset[str] | None) -> str:
    """What ``serve`` prints at start about the names it answers to."""
    if allowed is None:
        return ("host names: any (`--allowed-host NAME` limits them, so that a web page that "
                "rebinds its name to this address reads nothing)")
    return (f"host names: {', '.join(sorted(allowed))} (a proxy that forwards another needs "
            "`--allowed-host NAME`)")


class HostCheck:
    """ASGI middleware: answers 421 with one JSON line to a request whose ``Host`` names no
    allowed host (``allowed`` None: every request passes)."""

    def __init__(self, app: Callable[..., Awaitable[None]], allowed: frozenset[str] | None) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http" or self.allowed is None:
            await self.app(scope, receive, send)
            return
        given = [value.decode("latin-1") for key, value in scope["headers"] if key == b"host"]
        if len(given) == 1 and host_of(given[0]) in self.allowed:
            await self.app(scope, receive, send)
            return
        named = (json.dumps(given[0]) if len(given) == 1 else "a request without a Host header"
                 if not given else f"{len(given)} Host headers")
        body = json.dumps({"error": f"this service does not answer to {named}: it answers to "
                                    f"{', '.join(sorted(self.allowed))} (`serve --allowed-host "
                                    "NAME` adds the name a proxy forwards)"}).encode("utf-8")
        await send({"type": "http.response.start", "status": 421,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode("ascii")),
                                *PRIVATE_HEADERS]})
        await send({"type": "http.response.body", "body": body})
