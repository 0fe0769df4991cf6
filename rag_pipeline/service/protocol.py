"""uvicorn's HTTP protocol with the limits a hostile client meets before the application does.

uvicorn (httptools) reads a request head and body for as long as the client takes, of any
size, and counts every open connection, one still sending its head included, against the one
``limit_concurrency`` that also bounds requests: 300 connections that send a header line every
2 s get every other client a 503 (from one address or from 300), and one 150 MiB header stalls
the event loop. :func:`guarded_protocol` returns the same protocol with six limits (run it
with ``limit_concurrency=None``: these replace it):

- a **deadline to read a request head** (``head_seconds``, from the connection or the end of
  the previous response): a head not complete by then is answered 408 and the connection closed;
- a **deadline to read a request body** (``body_seconds``, from the end of its head): a body not
  complete by then is answered 408 (unless the application has begun its reply), the
  application is told the client left, and the connection closed;
- a **head size limit** (``max_head_bytes``): a larger head is answered 431 and closed, read no
  further, whether it arrives byte by byte or in one write with the requests after it (counted
  as it arrives and again header by header as it is parsed, before any request is dispatched);
- a **per-client connection limit** (``per_client``, by remote address): one more connection
  from that address is answered 503 and closed at once, so one client cannot hold the
  connections that the others share. The addresses in ``shared_addresses`` (loopback: every
  local client and a local reverse proxy come from it) have no such limit: they share the
  connection limit with everyone, and the idle eviction below keeps it from starving them;
- a **connection limit** (``max_connections``, all addresses): a new connection at the limit
  closes the connection that has been idle longest (open, or kept alive after a response,
  without a byte of its next head), so silent connections never lock out new clients; when none
  is idle it is answered 503 and closed at once; connections already open keep being served;
- a **request limit** (``max_requests``: requests read whole whose response is not complete):
  one more is answered 503, a JSON error as every refusal here. A request still being read
  (its head or its body) holds no request slot, so slow clients from many addresses cost the
  others nothing but a socket each until their deadline.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import httptools
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from rag_pipeline.service.private_headers import PRIVATE_HEADERS

__all__ = ["ClientLimits", "guarded_protocol"]

LINGER_SECONDS = 1.0
"""How long a refused connection is drained after its reply before it is closed."""


@dataclass(frozen=True)
class ClientLimits:
    """What one client may do before its request reaches the application.

    Attributes:
        head_seconds: Seconds to send a whole request head (request line and headers).
        body_seconds: Seconds to send a whole request body, from the end of its head.
        max_head_bytes: Bytes a request head may hold.
        per_client: Connections open at once from one remote address.
        max_connections: Connections open at once from all addresses.
        max_requests: Requests being answered at once (read whole, response not complete).
        shared_addresses: Remote addresses without a per-client limit (loopback by default).
    """

    head_seconds: float = 5.0
    body_seconds: float = 10.0
    max_head_bytes: int = 16 * 1024
    per_client: int = 64
    max_connections: int = 1024
    max_requests: int = 256
    shared_addresses: frozenset[str] = field(
        default_factory=lambda: frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"}))

    def __post_init__(self) -> None:
        for name in ("head_seconds", "body_seconds"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_head_bytes < 1 or self.per_client < 1:
            raise ValueError("max_head_bytes and per_client must be at least 1")
        if self.max_connections < 1 or self.max_requests < 1:
            raise ValueError("max_connections and max_requests must be at least 1")


def _response(status: bytes, message: str) -> bytes:
    """A refusal the protocol writes itself (408, 431), carrying the headers every response of
    the service carries (:data:`~rag_pipeline.service.private_headers.PRIVATE_HEADERS`)."""
    body = f'{{"error": "{message}"}}'.encode("ascii")
    private = b"".join(name + b": " + value + b"\r\n" for name, value in PRIVATE_HEADERS)
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(body)).encode("ascii") + b"\r\n" + private + b"connection: close\r\n\r\n"
            + body)


def _busy(max_requests: int) -> ASGIApp:
    """The application for one request over ``max_requests``: a 503 with the service's error
    body and headers, the connection closed after it."""
    body = f'{{"error": "more than {max_requests} requests at once; try again"}}'.encode("ascii")

    async def busy(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode("ascii")),
                                *PRIVATE_HEADERS, (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    return busy


class _HeadTooLarge(Exception):
    """Raised from a parser callback: the head being parsed is over ``max_head_bytes``."""


def guarded_protocol(limits: ClientLimits) -> type[HttpToolsProtocol]:
    """An ``HttpToolsProtocol`` class (for ``uvicorn.Config(http=...)``) that enforces
    ``limits``; each class counts its own connections per client and its own requests."""
    open_by_client: Counter[str] = Counter()
    receiving = [0]
    """Requests whose head is read and whose body is not: running ASGI tasks that wait for
    the client, not counted against ``max_requests``."""
    idle: dict[GuardedProtocol, None] = {}
    """Connections without a byte of their next head, longest idle first (insertion order)."""
    over_max_requests = _busy(limits.max_requests)

    class GuardedProtocol(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._address = self.client[0] if self.client else ""
            self._refused = False
            self._in_head = True
            self._in_body = False
            self._head_bytes = 0
            self._parsed_head = 0
            self._over_after_response = False
            self._deadline: asyncio.TimerHandle | None = None
            if (self._address not in limits.shared_addresses
                    and open_by_client[self._address] >= limits.per_client):
                self._address = None
                self._refuse(b"503 Service Unavailable",
                             f"more than {limits.per_client} connections from one address")
                return
            if len(self.connections) > limits.max_connections:  # this one included
                oldest = next(iter(idle), None)
                if oldest is None:
                    self._address = None
                    self._refuse(b"503 Service Unavailable",
                                 f"more than {limits.max_connections} connections open")
                    return
                oldest._evict()
            open_by_client[self._address] += 1
            self._become_idle()
            self._arm(limits.head_seconds, self._head_too_slow)

        def _become_idle(self) -> None:
            idle.pop(self, None)
            idle[self] = None

        def _evict(self) -> None:
            """Closes this idle connection to make room for a new one (a client may close an
            idle keep-alive connection at any time, RFC 9112 section 9.6)."""
            idle.pop(self, None)
            self._in_head = False
            self._refused = True
            self._disarm()
            self.connections.discard(self)
            self.transport.close()

        def _arm(self, seconds: float, callback) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, callback)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _start_body(self) -> None:
            self._in_body = True
            receiving[0] += 1
            self._arm(limits.body_seconds, self._body_too_slow)

        def _end_body(self) -> None:
            """The body is read, or will not be: the request counts as being answered."""
            if self._in_body:
                self._in_body = False
                receiving[0] -= 1
                self._disarm()

        def _head_too_slow(self) -> None:
            self._deadline = None
            if self._in_head and not self.transport.is_closing():
                self._refuse(b"408 Request Timeout",
                             f"request head not received within {limits.head_seconds:g} s")

        def _body_too_slow(self) -> None:
            self._deadline = None
            if not self._in_body or self.transport.is_closing():
                return
            self._end_body()
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True  # the application's next receive() is a disconnect
                cycle.message_event.set()
            if cycle is not None and cycle.response_started:
                self.transport.close()
            else:
                self._refuse(b"408 Request Timeout",
                             f"request body not received within {limits.body_seconds:g} s")

        def _refuse(self, status: bytes, message: str, drain: bool = True) -> None:
            """Answers ``status`` and ends the connection: the reply, then a half-close (FIN),
            then for ``LINGER_SECONDS`` whatever the client still sends is read and dropped
            (``drain``; closing with unread bytes sends a reset that can destroy the reply) or
            not read at all (a client sending a huge head: it is blocked at once), then the
            socket closes. The connection no longer counts against ``max_connections``."""
            self._end_body()
            idle.pop(self, None)
            self._in_head = False
            self._refused = True
            self._disarm()
            self.connections.discard(self)
            if self.transport.is_closing():
                return
            if not drain:
                self.transport.pause_reading()
            self.transport.write(_response(status, message))
            if self.transport.can_write_eof():
                self.transport.write_eof()
                self._deadline = self.loop.call_later(LINGER_SECONDS, self.transport.close)
            else:
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            idle.pop(self, None)
            self._end_body()
            self._disarm()
            if self._address is not None:
                open_by_client[self._address] -= 1
                if open_by_client[self._address] <= 0:
                    del open_by_client[self._address]
                self._address = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused or self.transport.is_closing():
                return
            idle.pop(self, None)
            if self._in_head:
                self._head_bytes += len(data)
            if self._in_head and self._head_bytes > limits.max_head_bytes \
                    and b"\r\n\r\n" not in data:
                self._head_over()  # a head still growing: refused before it is parsed
                return
            # uvicorn's own data_received, with a head found too large by the parser's callbacks
            # (which httptools raises as a callback error) answered 431 instead of 400.
            self._unset_keepalive_if_required()
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserError as exc:
                if isinstance(exc.__context__, _HeadTooLarge):
                    self._head_over()
                    return
                msg = "Invalid HTTP request received."
                self.logger.warning(msg)
                self.send_400_response(msg)
                return
            except httptools.HttpParserUpgrade:
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                else:
                    self._unsupported_upgrade_warning()

        def _head_over(self) -> None:
            if self.cycle is not None and not self.cycle.response_complete:
                # A pipelined head: the request before it is answered first, then this one.
                self._over_after_response = True
                self.transport.pause_reading()
                return
            self._refuse(b"431 Request Header Fields Too Large",
                         f"request head over {limits.max_head_bytes} bytes", drain=False)

        def _count_head(self, size: int) -> None:
            self._parsed_head += size
            if self._parsed_head > limits.max_head_bytes:
                raise _HeadTooLarge

        def on_url(self, url: bytes) -> None:
            self._count_head(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count_head(len(name) + len(value) + 4)  # "name: value\r\n"
            super().on_header(name, value)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head = True
            self._head_bytes = 0
            self._parsed_head = 0

        def on_headers_complete(self) -> None:
            self._in_head = False
            self._disarm()
            busy = len(self.tasks) - receiving[0] >= limits.max_requests
            self._start_body()
            if not busy:
                super().on_headers_complete()
                return
            self.logger.warning("more than %d requests at once: answered 503", limits.max_requests)
            app, self.app = self.app, over_max_requests
            try:
                super().on_headers_complete()
            finally:
                self.app = app

        def on_message_complete(self) -> None:
            self._end_body()  # a no-op when the response came first (it ended the body)
            super().on_message_complete()

        def on_response_complete(self) -> None:
            if self._over_after_response:
                super().on_response_complete()
                self._over_after_response = False
                self._head_over()
                return
            pipelined = bool(self.pipeline)  # the next request's head is already read
            super().on_response_complete()
            if not pipelined and not self.transport.is_closing():
                self._end_body()  # answered before its body was read: the rest is not waited for
                self._in_head = True
                self._head_bytes = 0
                self._become_idle()
                self._arm(limits.head_seconds, self._head_too_slow)

    return GuardedProtocol
