"""Tests for ``rag_pipeline.service.auth``: which headers a request's principal is believed from."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from rag_pipeline.core.config.access import AccessPolicy, AccessRule
from rag_pipeline.service.auth import (
    MAX_SESSIONS,
    MAX_SESSIONS_PER_TOKEN,
    SESSION_COOKIE,
    AccessState,
    AuthError,
    Principal,
    RequireAuth,
)
from rag_pipeline.service.tokens import TokenStore

PROXY = "10.0.0.5"


@pytest.fixture
def access(tmp_path: Path) -> tuple[AccessState, dict[str, str]]:
    store = TokenStore(tmp_path)
    tokens = {group: store.add(f"{group}-user", (group,)) for group in ("hr", "staff")}
    policy = AccessPolicy((AccessRule("hr/**", ("hr",)), AccessRule("public/**", ("staff",))))
    return AccessState(policy, store, trusted_proxy=PROXY, poll_seconds=3600), tokens


def test_one_groups_header_from_the_proxy_gives_its_groups(access):
    state, _ = access
    assert state.authenticate([(b"x-forwarded-groups", b"staff, hr")], PROXY) == Principal(
        "proxy", frozenset({"staff", "hr"}), "proxy")


def test_the_user_the_proxy_names_names_the_principal(access):
    """Found by an attack: every user behind the sign-on proxy was the principal ``proxy``, so
    one user's 30 verdicts a minute used up everyone's."""
    state, _ = access

    def named(user: bytes) -> str:
        return state.authenticate([(b"x-forwarded-groups", b"staff"), (b"x-forwarded-user", user)],
                                  PROXY).name

    assert [named(b"mallory"), named(b"victor@example.com"), named(b" "), named(b"a\x1bb"),
            named(b"x" * 201)] == ["proxy:mallory", "proxy:victor@example.com", "proxy", "proxy",
                                   "proxy"]
    # From anywhere but the proxy the header names nobody: the request needs a token.
    with pytest.raises(AuthError):
        state.authenticate([(b"x-forwarded-groups", b"staff"), (b"x-forwarded-user", b"mallory")],
                           "10.0.0.9")
    with pytest.raises(AuthError) as refused:
        state.authenticate([(b"x-forwarded-groups", b"staff"), (b"x-forwarded-user", b"a"),
                            (b"x-forwarded-user", b"b")], PROXY)
    assert str(refused.value) == "the X-Forwarded-User header came 2 times: a request carries it once"


@pytest.mark.parametrize("headers", [
    # A proxy that adds its header without removing the caller's: which one it set is unknowable.
    [(b"x-forwarded-groups", b"staff"), (b"x-forwarded-groups", b"hr")],
    [(b"x-forwarded-groups", b"hr"), (b"x-forwarded-groups", b"staff")],
])
def test_the_groups_header_given_twice_is_refused(access, headers):
    state, _ = access
    with pytest.raises(AuthError) as refused:
        state.authenticate(headers, PROXY)
    assert str(refused.value) == "the X-Forwarded-Groups header came 2 times: a request carries it once"


def test_two_authorization_headers_are_refused(access):
    state, tokens = access
    with pytest.raises(AuthError) as refused:
        state.authenticate([(b"authorization", f"Bearer {tokens['staff']}".encode()),
                            (b"authorization", f"Bearer {tokens['hr']}".encode())], "127.0.0.1")
    assert str(refused.value) == "the Authorization header came 2 times: a request carries it once"
    assert state.authenticate({b"authorization": f"Bearer {tokens['hr']}".encode()},
                              "127.0.0.1") == Principal("hr-user", frozenset({"hr"}), "token")


def test_one_token_signing_in_again_and_again_ends_only_its_own_sessions(access):
    state, tokens = access
    kept, _ = state.open_session(tokens["hr"])
    staff_sessions = [state.open_session(tokens["staff"])[0] for _ in range(MAX_SESSIONS + 10)]
    cookie = [(b"cookie", f"{SESSION_COOKIE}={kept}".encode())]
    assert state.authenticate(cookie, "127.0.0.1") == Principal("hr-user", frozenset({"hr"}), "session")
    assert len(state._sessions) == MAX_SESSIONS_PER_TOKEN + 1
    newest = [(b"cookie", f"{SESSION_COOKIE}={staff_sessions[-1]}".encode())]
    assert state.authenticate(newest, "127.0.0.1").name == "staff-user"
    with pytest.raises(AuthError, match="the session has ended"):
        state.authenticate([(b"cookie", f"{SESSION_COOKIE}={staff_sessions[0]}".encode())], "127.0.0.1")


def test_a_file_that_fails_to_re_read_is_logged_once_until_it_reads_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture):
    store = TokenStore(tmp_path)
    failures = [ValueError("line 3: expected '='")]

    def reload() -> AccessPolicy | None:
        if failures:
            raise failures[0]
        return None

    access = AccessState(None, store, reload_policy=reload, poll_seconds=3600)
    store.path.parent.mkdir(parents=True)
    store.path.write_text("{not json", encoding="utf-8")
    with caplog.at_level("WARNING", logger="rag_pipeline.service.auth"):
        for _ in range(3):
            access.poll_once()
        failures.clear()
        store.path.unlink()
        access.poll_once()
        failures.append(ValueError("line 3: expected '='"))
        access.poll_once()
    assert [record.getMessage().split(":")[0] for record in caplog.records] == [
        "tokens not re-read (the last ones stay in force)",
        "[access] not re-read (the last rules stay in force)",
        "[access] not re-read (the last rules stay in force)"]  # again once it had read
    assert not access.enabled


def test_access_removed_from_the_configuration_is_logged_once_and_the_rules_stay(
        tmp_path: Path, caplog: pytest.LogCaptureFixture):
    # Found by an attacker: the warning came every second, for as long as the service ran.
    policy = AccessPolicy((AccessRule("hr/**", ("hr",)),))
    declared: list[AccessPolicy | None] = [policy]
    access = AccessState(policy, TokenStore(tmp_path), reload_policy=lambda: declared[0],
                         poll_seconds=3600)
    declared[0] = None
    with caplog.at_level("WARNING", logger="rag_pipeline.service.auth"):
        for _ in range(3):
            access.poll_once()
        declared[0] = policy
        access.poll_once()
        declared[0] = None
        access.poll_once()
    assert [record.getMessage() for record in caplog.records] == [
        "[access] was removed from the configuration: the last rules stay in force until "
        "`serve` is restarted"] * 2  # again once it was declared again
    assert (access.enabled, access.policy) == (True, policy)


def test_changed_rules_are_logged_where_serve_shows_them(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture):
    # Found by an admin's trial: the change was logged at info level, which serve never shows.
    policy = AccessPolicy((AccessRule("hr/**", ("hr",)),))
    wider = AccessPolicy((AccessRule("hr/**", ("hr", "eng")),))
    access = AccessState(policy, TokenStore(tmp_path), reload_policy=lambda: wider,
                         poll_seconds=3600)
    with caplog.at_level("WARNING", logger="rag_pipeline.service.auth"):
        access.poll_once()
        access.poll_once()
    assert [record.getMessage() for record in caplog.records] == [
        f"[access] rules changed ({policy.digest} -> {wider.digest}): documents re-labelled"]
    assert access.policy == wider


def test_a_bearer_token_is_checked_off_the_event_loop(access, monkeypatch: pytest.MonkeyPatch):
    """An older token's scrypt check (about 38 ms) ran on the event loop: every other request
    waited for it. A check held open here must let another request be answered meanwhile."""
    state, tokens = access
    entered, release = threading.Event(), threading.Event()
    verify = state.store.verify

    def held_verify(token, client):
        entered.set()
        assert release.wait(10), "the other request was never answered while the check ran"
        return verify(token, client)

    monkeypatch.setattr(state.store, "verify", held_verify)
    answered: list[str] = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        found = scope["state"]["principal"]  # None on an anonymous path
        await send({"type": "http.response.body", "body": found.name.encode() if found else b"-"})

    async def request(path: str, headers: list[tuple[bytes, bytes]]) -> None:
        sent: list[dict] = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "path": path, "method": "GET", "headers": headers,
                 "client": ("127.0.0.1", 5000)}
        await RequireAuth(app, state)(scope, receive, send)
        answered.append(f"{path} {sent[0]['status']} {sent[1]['body'].decode()}")

    async def while_checked() -> None:
        for _ in range(1_000):
            if entered.is_set():
                break
            await asyncio.sleep(0.01)
        await request("/health", [])
        release.set()

    async def both() -> None:
        await asyncio.gather(
            request("/search", [(b"authorization", f"Bearer {tokens['hr']}".encode())]),
            while_checked())

    asyncio.run(both())
    assert answered == ["/health 200 -", "/search 200 hr-user"]
