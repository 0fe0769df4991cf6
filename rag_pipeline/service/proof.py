"""The service proves it is the ``serve`` its data folder's ``serve.json`` names: every response
to a request carrying a nonce header carries the HMAC of that nonce under the record's secret
(:func:`rag_pipeline.core.runtime.serve_record.serve_proof`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from rag_pipeline.core.runtime.serve_record import (
    MAX_NONCE_CHARS,
    NONCE_HEADER,
    PROOF_HEADER,
    serve_proof,
)

__all__ = ["ServeProof"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]


class ServeProof:
    """ASGI middleware: adds the proof header to the response of a request with a nonce (of at
    most ``MAX_NONCE_CHARS``); any other request passes untouched."""

    def __init__(self, app: Callable[..., Awaitable[None]], secret: str) -> None:
        self.app = app
        self.secret = secret

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Send) -> None:
        nonce = None
        if scope["type"] == "http":
            nonce = next((value for key, value in scope["headers"]
                          if key == NONCE_HEADER.encode("ascii")), None)
        if nonce is None or len(nonce) > MAX_NONCE_CHARS:
            await self.app(scope, receive, send)
            return
        proof = serve_proof(self.secret, nonce.decode("latin-1")).encode("ascii")

        async def send_with_proof(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  (PROOF_HEADER.encode("ascii"), proof)]}
            await send(message)

        await self.app(scope, receive, send_with_proof)
