"""Who is asking: every request of the service gets a principal, or a 401, before any route runs.

With ``[access]`` declared, every path but ``/health`` and the page's static shell (``GET /``)
needs one of:

- ``Authorization: Bearer TOKEN`` (a token of ``rag-pipeline tokens add``);
- the ``rag_session`` cookie that ``POST /session`` with ``{"token": "..."}`` sets (HttpOnly,
  SameSite=Strict, Path=/, a session cookie holding a random session id, never the token);
  when the page came over HTTPS (or always, with ``--behind-https``) it is
  ``__Host-rag_session``, Secure, and a session opened so is accepted from that cookie alone
  (a sibling host can set a plain ``rag_session`` for this one, never a ``__Host-`` cookie;
  with ``--behind-https`` a plain cookie is never accepted, so a session of another's choosing
  is never put on a reader). A page signing in again with the same token continues its
  sign-in; ``DELETE /session`` ends the whole sign-in and clears both cookies (with a Bearer
  token, every session of that token, and a cookie of another token's session stays); ``GET /session``
  says whether the request is signed in, and as whom (never a 401). A revoked token
  ends its sessions too;
- with ``--trusted-proxy ADDR``, the groups header (``X-Forwarded-Groups``: ``a,b``) on a
  request that comes from ADDR itself. From any other address the header is ignored (and the
  address logged once).

Without one the answer is ``401`` with ``{"error": "..."}``. The check is an ASGI middleware
(:class:`RequireAuth`) around the whole application, so a route added later is covered without
a word; a route reads the principal with the FastAPI dependency :func:`principal`.

Without ``[access]`` every request is :data:`EVERYONE` (groups None: everything), as before.
"""

from __future__ import annotations

import html
import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_pipeline.core.config.access import GROUP_NAME, AccessPolicy
from rag_pipeline.service.schemas import SessionBody, SessionStateBody, SignedOutBody
from rag_pipeline.service.tokens import TokenError, TokenStore

log = logging.getLogger(__name__)

__all__ = ["ANONYMOUS_PATHS", "EVERYONE", "SECURE_SESSION_COOKIE", "SESSION_COOKIE", "AccessState",
           "AuthError", "Principal", "RequireAuth", "install_access", "principal"]

SESSION_COOKIE = "rag_session"
SECURE_SESSION_COOKIE = f"__Host-{SESSION_COOKIE}"
"""The session cookie over HTTPS: the browser takes it only Secure, from the host itself, for
the path ``/``, with no ``Domain`` (so no other host under the same domain can set it)."""
GROUPS_HEADER = "X-Forwarded-Groups"
USER_HEADER = "X-Forwarded-User"
"""The header a trusted proxy names its user in (oauth2-proxy's): the principal is then
``proxy:<user>``, so each user has a feedback rate of their own."""
MAX_USER_CHARS = 200
ANONYMOUS_PATHS = frozenset({"/health", "/session"})
"""Paths every caller reaches (``/session`` checks the token or session it is given itself)."""
MAX_SESSIONS = 10_000
MAX_SESSIONS_PER_TOKEN = 64
"""Sessions one token holds at most (its tabs and browsers): more end its oldest, so that one
holder signing in again and again cannot push everybody else's sessions out."""


class AuthError(Exception):
    """A request without a valid principal (the message is the 401's one line)."""


@dataclass(frozen=True)
class Principal:
    """Who a request is: a token's name (or ``proxy``), the groups it reads for, and how it
    came: ``token`` (the Authorization header), ``session`` (the session cookie), ``proxy``
    (the trusted proxy's groups header); ``""`` without ``[access]``.

    ``groups`` None: everything (the service runs without ``[access]``)."""

    name: str
    groups: frozenset[str] | None
    via: str = ""


EVERYONE = Principal("everyone", None)


def _tokens_not_read(exc: Exception) -> str:
    """The warning of a token file that failed to (re-)read."""
    return f"tokens not re-read (the last ones stay in force): {exc}"


class AccessState:
    """The service's access: the policy, the tokens, the trusted proxy, and the sessions.

    Args:
        policy: The ``[access]`` policy the service started with (None: no access control).
        store: The data folder's tokens (needed with a policy, and to follow one declared
            later).
        reload_policy: Called every poll for the configuration's current policy (a changed
            rule re-labels the served rows; ``[access]`` declared while the service runs
            without it turns access control on at once); a policy that disappears or fails to
            load leaves the last one in force (turning access off takes a restart).
        trusted_proxy: The one address whose groups header is believed.
        groups_header: That header's name.
        user_header: The header it names its user in (absent: the principal is ``proxy``).
        poll_seconds: How often tokens and policy are re-read.
        behind_https: The service is reached over HTTPS (through a proxy) only: every session
            is opened secure, and the plain :data:`SESSION_COOKIE` is never accepted (a
            client that sends no ``Origin`` would otherwise get a plain session, which a
            neighbouring host could plant in a reader's browser).
    """

    def __init__(self, policy: AccessPolicy | None, store: TokenStore | None = None, *,
                 reload_policy: Callable[[], AccessPolicy | None] | None = None,
                 trusted_proxy: str | None = None, groups_header: str = GROUPS_HEADER,
                 user_header: str = USER_HEADER, poll_seconds: float = 1.0,
                 behind_https: bool = False) -> None:
        if policy is not None and store is None:
            raise ValueError("a service with [access] needs the data folder's token store")
        self.policy = policy
        self.store = store
        self.reload_policy = reload_policy
        self.trusted_proxy = trusted_proxy
        self.groups_header = groups_header.lower().encode("latin-1")
        self.groups_header_name = groups_header
        self.user_header = user_header.lower().encode("latin-1")
        self.user_header_name = user_header
        self.poll_seconds = poll_seconds
        self.behind_https = behind_https
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing: dict[str, str] = {}
        """Per file followed ("tokens", "config"): the warning its last failed re-read logged."""
        self.unread_tokens: str | None = None
        """Why the token file could not be read at start, without ``[access]`` (nothing to
        check now; should ``[access]`` be declared later, no token is accepted until the file
        is mended): the caller says so."""
        if store is not None:
            try:
                store.refresh()
            except TokenError as exc:
                if policy is not None:
                    raise
                self.unread_tokens = str(exc)
                self._failing["tokens"] = _tokens_not_read(exc)  # logged again if it changes

    @property
    def enabled(self) -> bool:
        return self.policy is not None

    # -- following the files --------------------------------------------------------------------

    def poll_once(self) -> None:
        """Re-reads the tokens (a revoked one stops here) and the policy; records use."""
        if self.store is not None:
            try:
                self.store.refresh()
                self.store.flush_used()
                self._failing.pop("tokens", None)
            except (TokenError, OSError) as exc:
                self._warn_failed("tokens", _tokens_not_read(exc))
        if self.reload_policy is not None and self.store is not None:
            try:
                policy = self.reload_policy()
            except Exception as exc:  # noqa: BLE001 - a bad edit must not stop the service
                self._warn_failed("config", f"[access] not re-read (the last rules stay in force): "
                                            f"{exc}")
                return
            if self.policy is not None and policy is None:
                self._warn_failed("config", "[access] was removed from the configuration: the "
                                            "last rules stay in force until `serve` is restarted")
                return
            self._failing.pop("config", None)
            if self.policy is None:
                if policy is not None:
                    log.warning("[access] was declared in the configuration: access control is "
                                "on from now, every request but /health needs a token (rules "
                                "%s)", policy.digest)
                    self.policy = policy
            elif policy.digest != self.policy.digest:
                # A warning, so that the operator sees it (serve shows no info lines).
                log.warning("[access] rules changed (%s -> %s): documents re-labelled",
                            self.policy.digest, policy.digest)
                self.policy = policy

    def _warn_failed(self, followed: str, message: str) -> None:
        """Logs a failed re-read of ``followed`` once, until it reads again or fails another
        way (not every poll)."""
        if self._failing.get(followed) != message:
            log.warning("%s", message)
            self._failing[followed] = message

    def start(self) -> None:
        if self._thread is not None or (not self.enabled and (
                self.store is None or self.reload_policy is None)):
            return

        def follow() -> None:
            while not self._stop.wait(self.poll_seconds):
                self.poll_once()

        self._thread = threading.Thread(target=follow, name="access-follower", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.store is not None:
            try:
                self.store.flush_used(force=True)
            except OSError as exc:
                log.warning("when tokens were last used was not recorded: %s", exc)

    # -- principals ------------------------------------------------------------------------------

    def open_session(self, token: str, client: str | None = None, secure: bool = False,
                     replacing: str | None = None) -> tuple[str, Principal]:
        """A new session id for a valid token sent from ``client``, and its principal; a
        ``secure`` session (opened over HTTPS) is accepted from :data:`SECURE_SESSION_COOKIE`
        alone, any other from :data:`SESSION_COOKIE` alone. When it replaces the browser's
        session ``replacing`` of the same token (a page signing in again), both are one
        sign-in: the old one stays valid (a link opened in a new tab meanwhile carries it) and
        :meth:`close_session` of either ends both."""
        record = self._verify(token, client)
        session = secrets.token_urlsafe(32)
        with self._lock:
            before = self._sessions.get(replacing) if replacing else None
            same = before is not None and (before.token_id, before.secure) == (record.id, secure)
            self._sessions[session] = _Session(record.id, secure,
                                               before.sign_in if same else session)
            # One token's sign-ins end its own oldest sessions, never other people's.
            own = [s for s, held in self._sessions.items() if held.token_id == record.id]
            for oldest in own[:max(0, len(own) - MAX_SESSIONS_PER_TOKEN)]:
                del self._sessions[oldest]
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        return session, Principal(record.name, frozenset(record.groups), "session")

    def close_session(self, session: str | None) -> None:
        """Ends ``session`` and every session of the same sign-in."""
        if session:
            with self._lock:
                held = self._sessions.get(session)
                if held is not None:
                    for other in [s for s, h in self._sessions.items()
                                  if h.sign_in == held.sign_in]:
                        del self._sessions[other]

    def close_token_sessions(self, token: str, client: str | None = None) -> str:
        """Ends every session of a valid ``token`` (all its sign-ins: a page signing out with
        its token); returns the token's id.

        Raises:
            AuthError: The token is unknown, revoked or expired.
        """
        record = self._verify(token, client)
        with self._lock:
            for session in [s for s, held in self._sessions.items() if held.token_id == record.id]:
                del self._sessions[session]
        return record.id

    def session_token(self, session: str) -> str | None:
        """The id of the token a live ``session`` was opened with, or None."""
        with self._lock:
            held = self._sessions.get(session)
        return held.token_id if held is not None else None

    def _verify(self, token: str, client: str | None):
        try:
            return self.store.verify(token, client)
        except TokenError as exc:
            raise AuthError(str(exc)) from None

    def authenticate(self, headers: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]],
                     client: str | None) -> Principal:
        """The principal of a request's headers (lower-case names, as ASGI gives them; from
        ``client``'s address).

        Raises:
            AuthError: No valid token, session or trusted groups header; the groups header or
                ``Authorization`` given more than once (which one a proxy set is unknowable).
        """
        if not self.enabled:
            return EVERYONE
        pairs = list(headers.items() if isinstance(headers, Mapping) else headers)
        for name, shown in ((self.groups_header, self.groups_header_name),
                            (self.user_header, self.user_header_name),
                            (b"authorization", "Authorization")):
            times = sum(1 for key, _ in pairs if key == name)
            if times > 1:
                raise AuthError(f"the {shown} header came {times} times: a request carries it once")
        headers = dict(pairs)
        proxied = headers.get(self.groups_header)
        if proxied is not None and self.trusted_proxy is not None:
            if client == self.trusted_proxy:
                names = [g.strip() for g in proxied.decode("latin-1").split(",") if g.strip()]
                return Principal(_proxied_name(headers.get(self.user_header)),
                                 frozenset(g for g in names if GROUP_NAME.fullmatch(g)), "proxy")
            self._warn_once(client)
        authorization = headers.get(b"authorization")
        if authorization is not None:
            token = _bearer_token(authorization.decode("latin-1"))
            if token is None:
                raise AuthError("the Authorization header must be `Bearer TOKEN`")
            record = self._verify(token, client)
            return Principal(record.name, frozenset(record.groups), "token")
        session, secure = _session_cookie(headers.get(b"cookie"))
        if session is not None and (secure or not self.behind_https):
            with self._lock:
                held = self._sessions.get(session)
            record = self.store.record(held.token_id) if held is not None else None
            if held is not None and held.secure != secure:
                raise AuthError("the session cookie is not the one this service set: give the "
                                "token again")
            if record is None or record.expired():
                self.close_session(session)
                raise AuthError("the session has ended (its token was revoked or expired, or the "
                                "service restarted): give the token again")
            return Principal(record.name, frozenset(record.groups), "session")
        raise AuthError("this service needs a token: send `Authorization: Bearer TOKEN` (a token "
                        "of `rag-pipeline tokens add`)")

    def _warn_once(self, client: str | None) -> None:
        where = client or "an unknown address"
        with self._lock:
            if where in self._warned:
                return
            self._warned.add(where)
        log.warning("ignored the %s header from %s: only the trusted proxy %s may send it",
                    self.groups_header_name, where, self.trusted_proxy)


def _proxied_name(user: bytes | None) -> str:
    """``proxy:<user>`` for the user a trusted proxy names (printable, at most
    :data:`MAX_USER_CHARS` characters); ``proxy`` without one, or for one that is not."""
    name = (user or b"").decode("utf-8", "replace").strip()
    if not name or len(name) > MAX_USER_CHARS or not name.isprintable():
        return "proxy"
    return f"proxy:{name}"


def _session_cookies(raw: bytes | None) -> list[tuple[str, bool]]:
    """The session ids a ``Cookie`` header carries, each with whether it came in
    :data:`SECURE_SESSION_COOKIE` (first) or :data:`SESSION_COOKIE`; none when the header is
    malformed."""
    if raw is None:
        return []
    jar = SimpleCookie()
    try:
        jar.load(raw.decode("latin-1"))
    except Exception:  # noqa: BLE001 - a malformed cookie header is no session
        return []
    return [(jar[name].value, secure) for name, secure in ((SECURE_SESSION_COOKIE, True),
                                                           (SESSION_COOKIE, False))
            if name in jar and jar[name].value]


def _session_cookie(raw: bytes | None) -> tuple[str | None, bool]:
    """The session id a ``Cookie`` header carries and whether it came in the secure cookie
    (which wins over a plain one beside it); ``(None, False)`` without one."""
    return next(iter(_session_cookies(raw)), (None, False))


def _unauthorized(message: str) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=401,
                        headers={"WWW-Authenticate": "Bearer"})


def navigated(scope: Scope, method: str) -> bool:
    """Whether a browser opened the path itself (a document link in a new tab, a bookmark):
    a GET that accepts HTML, not the page's own requests."""
    accept = dict(scope["headers"]).get(b"accept", b"").decode("latin-1")
    return method == "GET" and "text/html" in accept


def message_page(status: int, heading: str, message: str, way_on: str,
                 headers: dict[str, str] | None = None) -> HTMLResponse:
    """What a browser shows for a link it opened itself (a new tab, a bookmark) that cannot
    be answered: ``heading``, the reason ``message``, and ``way_on`` (HTML: a link to the
    question page and what to do there)."""
    reason = html.escape(" ".join(message.split()))
    return HTMLResponse(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{heading}</title>'
        '</head><body style="font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; '
        f'margin: 3rem auto"><h1>{heading}</h1><p id="error">{reason}</p><p>{way_on}</p>'
        "</body></html>", status_code=status, headers=headers)


NO_SESSION_IN_BROWSER = ("this page is shown to a signed-in reader only, and this browser is "
                         "not signed in to the service")
"""What a browser's link opened without any session says, in place of the header a program is
told to send."""


def _sign_in_first(message: str) -> HTMLResponse:
    """The 401 a browser shows for a link opened without a session: the reason (a reader's
    words, not the header a program sends), and the way to the page's sign-in (the link works
    again once signed in there)."""
    shown = NO_SESSION_IN_BROWSER if message.startswith("this service needs a token") else message
    return message_page(401, "Sign in first", shown, '<a href="/">Open the question page</a>, '
                        "sign in there, then open this link again.",
                        {"WWW-Authenticate": "Bearer"})


class RequireAuth:
    """Puts the request's principal in ``scope["state"]["principal"]``, or answers 401."""

    def __init__(self, app: ASGIApp, access: AccessState) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "GET")
        enabled = self.access.enabled  # read once: access may turn on while a request runs
        if not enabled or path in ANONYMOUS_PATHS or (path == "/" and method in ("GET", "HEAD")):
            found = EVERYONE if not enabled else None
        else:
            client = scope.get("client")
            headers, where = scope["headers"], client[0] if client else None
            try:
                # A Bearer token may be one written with scrypt (tens of milliseconds to check):
                # checked on a worker thread, so the event loop serves other requests meanwhile.
                found = (await run_in_threadpool(self.access.authenticate, headers, where)
                         if any(name == b"authorization" for name, _ in headers)
                         else self.access.authenticate(headers, where))
            except AuthError as exc:
                answer = (_sign_in_first(str(exc)) if navigated(scope, method)
                          else _unauthorized(str(exc)))
                await answer(scope, receive, send)
                return
        scope.setdefault("state", {})["principal"] = found
        await self.app(scope, receive, send)


def principal(request: Request) -> Principal:
    """The FastAPI dependency every data route takes its principal from.

    Raises:
        AuthError: A route that is reached without one (a bug: such a route must be listed in
            :data:`ANONYMOUS_PATHS` and must not read data).
    """
    found = getattr(request.state, "principal", None)
    if found is None:
        raise AuthError("no principal for this route")
    return found


@dataclass(frozen=True)
class _Session:
    """A session: its token, whether it was opened over HTTPS, and the sign-in it belongs to
    (the id of its first session: a page signing in again continues it)."""

    token_id: str
    secure: bool
    sign_in: str


class SessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str


def _session_router(access: AccessState) -> APIRouter:
    router = APIRouter()

    @router.post("/session", summary="Sign in with a token: sets the rag_session cookie",
                 responses={200: {"model": SessionBody, "description": "Signed in."}})
    def open_session(body: SessionRequest, request: Request) -> JSONResponse:
        if not access.enabled:
            return JSONResponse({"name": EVERYONE.name, "groups": None})
        secure = access.behind_https or _over_tls(request)
        try:
            session, who = access.open_session(
                body.token, request.client.host if request.client else None, secure,
                replacing=_request_session(request))
        except AuthError as exc:
            return _unauthorized(str(exc))
        response = JSONResponse({"name": who.name, "groups": sorted(who.groups or ())})
        response.set_cookie(SECURE_SESSION_COOKIE if secure else SESSION_COOKIE, session,
                            httponly=True, samesite="strict", path="/", secure=secure)
        return response

    @router.get("/session", summary="Whether this request is signed in, and as whom (never a 401)",
                responses={200: {"model": SessionStateBody, "description": "Signed in or not."}})
    def signed_in_as(request: Request) -> JSONResponse:
        try:
            who = access.authenticate(request.headers.raw,
                                      request.client.host if request.client else None)
        except AuthError:
            return JSONResponse({"signed_in": False})
        return JSONResponse({"signed_in": True, "name": who.name,
                             "groups": None if who.groups is None else sorted(who.groups)})

    @router.delete("/session", summary="Sign out: clears the rag_session cookie",
                   responses={200: {"model": SignedOutBody, "description": "Signed out."}})
    def close_session(request: Request) -> JSONResponse:
        sessions = _request_sessions(request)
        bearer = _bearer_token(request.headers.get("authorization", ""))
        token_id = None
        if bearer is not None:
            try:
                token_id = access.close_token_sessions(
                    bearer, request.client.host if request.client else None)
            except AuthError:
                token_id = None  # revoked or expired: its sessions ended with it
        if token_id is not None:
            # A page signing out with its token ends every session of that token; the
            # browser's cookie may be another tab's sign-in as someone else since: it stays.
            if any(access.session_token(s) not in (None, token_id) for s in sessions):
                return JSONResponse({"signed_out": True})
        else:
            for session in sessions:
                access.close_session(session)
        response = JSONResponse({"signed_out": True})
        # Both names: a plain cookie planted beside the secure one is cleared too.
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        response.delete_cookie(SECURE_SESSION_COOKIE, path="/", httponly=True, samesite="strict",
                               secure=True)
        return response

    return router


def _bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header's value, or None."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _request_session(request: Request) -> str | None:
    """The session id the request's cookie carries (the secure cookie's first), or None."""
    return next(iter(_request_sessions(request)), None)


def _request_sessions(request: Request) -> list[str]:
    """The session ids of both cookies the request carries."""
    return [session for session, _ in
            _session_cookies(request.headers.get("cookie", "").encode("latin-1"))]


def _over_tls(request: Request) -> bool:
    """Whether the browser reached the service over HTTPS: ``serve`` speaks plain HTTP, so
    behind a TLS proxy only the page's ``Origin`` says so. The session cookie is then
    :data:`SECURE_SESSION_COOKIE`, never sent over plain HTTP (marking it so can only withhold
    it)."""
    origin = request.headers.get("origin", "").lower()
    return request.url.scheme == "https" or origin.startswith("https://")


def install_access(app: Any, access: AccessState) -> None:
    """The one hook :func:`rag_pipeline.service.app.create_app` calls: the session routes and
    the middleware that authenticates every other path."""
    app.include_router(_session_router(access))
    app.add_middleware(RequireAuth, access=access)
