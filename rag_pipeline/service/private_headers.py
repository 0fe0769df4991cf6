"""The headers every response of the service carries, the page's content policy among them.

The content policy lets a page of the service run its own two scripts (the question page's and
the document view's, each named by the SHA-256 of its text) and nothing else: a script or an
event handler that reached a page inside a document's text runs nowhere, even past the views'
sanitising. A page fetches from this service only, loads nothing from another site (no image
of a document tracks its reader), is framed by no other page and posts its forms nowhere else.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib.resources import files

__all__ = ["CONTENT_SECURITY_POLICY", "PRIVATE_HEADERS", "script_hashes"]

_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def script_hashes(page: str) -> tuple[str, ...]:
    """The CSP source of each inline script of ``page`` (``'sha256-...'``), in order."""
    return tuple("'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest())
                 .decode("ascii") + "'" for script in _SCRIPT.findall(page))


def _served_scripts() -> tuple[str, ...]:
    """The hashes of the question page's script and the document view's, as served: the view's
    template doubles its braces for ``str.format``, which halves them (it has no field in its
    script: one would raise here, at import)."""
    templates = files("rag_pipeline.service")
    page = templates.joinpath("page.html").read_text(encoding="utf-8")
    view = templates.joinpath("document.html").read_text(encoding="utf-8")
    view_scripts = "".join(f"<script>{script.format()}</script>" for script in _SCRIPT.findall(view))
    return script_hashes(page) + script_hashes(view_scripts)


CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'",
    "script-src " + " ".join(_served_scripts()),
    "style-src 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
))

PRIVATE_HEADERS = ((b"cache-control", b"no-store"), (b"x-frame-options", b"DENY"),
                   (b"x-content-type-options", b"nosniff"),
                   (b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")))
"""What every response of the service carries (unless it sets its own, as ``/originals``
sets a sandbox): kept by no cache (what a principal read stays nowhere after sign-out), framed
by no other page, read by a browser as the type it declares and never as a type guessed from
its bytes, and run only as the service's own scripts."""
