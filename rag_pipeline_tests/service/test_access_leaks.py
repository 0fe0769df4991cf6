"""No side channel: canary strings planted in restricted documents (their text, headings, titles
and file names) never reach a principal who may not read them, through any endpoint, parameter
or error path; every data path answers an anonymous caller 401; each principal finds its own
documents; the paragraph shared by an HR file and a public one is served from the readable copy
with no word of the other; revocation, a rule change and sessions take effect on the next poll."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rag_pipeline.core.config.access import AccessPolicy, AccessRule
from rag_pipeline.core.evaluation.report import report_path
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.app import create_app
from rag_pipeline.service.auth import SECURE_SESSION_COOKIE, SESSION_COOKIE, AccessState
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline.service.run import access_line, running_service
from rag_pipeline.service.tokens import TokenStore
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

SHARED = ("Badges are collected at the front desk between eight and ten in the morning, and a "
          "lost badge is replaced the same day.")
CANARY = {"hr": "zanzibarhr", "eng": "quokkaeng", "board": "narwhalboard"}
"""One made-up word per restricted document, in its file name, title, heading and text."""
DOCS = {
    f"hr/{CANARY['hr']}-salaries.md": (
        f"---\ntitle: Salaries {CANARY['hr']}\n---\n# Pay bands {CANARY['hr']}\n\n"
        f"The {CANARY['hr']} pay band for engineers starts at ninety thousand.\n\n"
        f"## Badges\n\n{SHARED}\n"),
    f"eng/{CANARY['eng']}-runbook.md": (
        f"# Runbook {CANARY['eng']}\n\nRestart the {CANARY['eng']} queue with the drain flag first.\n"),
    "public/faq.md": (
        "# Office FAQ\n\nThe cafeteria opens at noon.\n\n"
        f"## Badges\n\n{SHARED}\n"),
    f"board/{CANARY['board']}-minutes.md": (  # no rule matches: readable by nobody
        f"# Minutes {CANARY['board']}\n\nThe {CANARY['board']} acquisition closes in March.\n"),
}
POLICY = AccessPolicy((
    AccessRule("hr/**", ("hr",)),
    AccessRule("eng/**", ("eng",)),
    AccessRule("public/**", ("staff", "hr", "eng")),
))
PROXY, STRANGER = "10.0.0.5", "10.0.0.66"
QUESTIONS = [*CANARY.values(), "pay band salaries", "restart the queue drain", "acquisition minutes",
             "badges front desk lost badge", "cafeteria noon", "*", "a"]


@dataclass
class Setup:
    built: BuiltIndex
    tokens: dict[str, str]
    access: AccessState
    client: TestClient
    stranger: TestClient
    model_key: str
    service: object


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> Iterator[Setup]:
    built = build_index(tmp_path_factory.mktemp("leaks"), hashed_embedder, DOCS)
    store = TokenStore(built.data_dir)
    tokens = {group: store.add(f"{group}-user", (group,)) for group in ("hr", "eng", "staff")}
    tokens["revoked"] = store.add("gone", ("hr", "eng", "staff"))
    store.revoke("gone")
    key = hashed_embedder.spec.key
    # A report that quotes every document (as an evaluation report of the whole corpus would).
    report = report_path(built.data_dir, key)
    report.parent.mkdir(parents=True)
    report.write_text("<html>" + " ".join(CANARY.values()) + "</html>", encoding="utf-8")
    access = AccessState(POLICY, store, trusted_proxy=PROXY, poll_seconds=3600)
    with running_service(Warehouse(built.data_dir), ServeSettings("header", key, workers=2),
                         lambda: hashed_embedder, poll_seconds=3600, access=access) as service:
        app = create_app(service)
        with TestClient(app, client=(PROXY, 4000)) as client, \
                TestClient(app, client=(STRANGER, 4000)) as stranger:
            yield Setup(built, tokens, access, client, stranger, key, service)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def probes(setup: Setup) -> list[tuple[str, str, dict]]:
    """Every endpoint with every parameter that selects or shapes data, and their error paths."""
    out: list[tuple[str, str, dict]] = []
    for q in QUESTIONS:
        for retriever in ("hybrid", "dense", "bm25"):
            out.append(("GET", "/ask", {"params": {"q": q, "k": 20, "cut": 2.0, "retriever": retriever}}))
        out.append(("POST", "/ask", {"json": {"question": q, "k": 20, "cut": 2.0, "analyzer": "english"}}))
        out.append(("POST", "/ask", {"json": {"question": q, "k": 20, "cut": 0.0}}))  # refusal text
    out += [("GET", "/ask", {"params": {"q": "x", "chunker": "blind"}}),
            ("GET", "/ask", {"params": {"q": "x", "model": "other@00000000"}}),
            ("GET", "/ask", {"params": {"q": "x", "nope": 1}}),
            ("POST", "/ask", {"json": {"question": ""}}),
            ("GET", "/status", {}), ("GET", "/openapi.json", {}), ("GET", "/docs", {}),
            ("GET", "/nowhere", {}), ("GET", f"/reports/{setup.model_key}", {}),
            ("GET", "/reports/not-a-key", {}), ("POST", "/session", {"json": {"token": "rp_bad"}}),
            ("GET", "/session", {}),
            ("POST", "/session", {"json": {"nope": 1}})]
    for document in [*DOCS, "hr/none.md"]:
        out += [("GET", f"/documents/{document}", {}),
                ("GET", f"/documents/{document}", {"params": {"from": 5, "to": 1}}),
                ("GET", f"/documents/{document}", {"params": {"from": 10**6}})]
    return out


def readable_canaries(groups: set[str]) -> set[str]:
    return {CANARY[g] for g in groups if g in CANARY}


def call(client: TestClient, method: str, path: str, headers: dict, extra: dict):
    return client.request(method, path, headers=headers, **extra)


def without_echo(response, path: str, extra: dict) -> str:
    """The response minus what merely repeats the request: the question (its field, the refusal
    line's quote of it, the prompt's last line) and a document view's own id in its 404."""
    try:
        body = response.json()
    except ValueError:
        return response.text
    question = extra.get("params", {}).get("q") or extra.get("json", {}).get("question")
    if isinstance(body, dict) and question is not None:
        body.pop("question", None)
        if body.get("reason"):
            body["reason"] = body["reason"].replace(f'for "{question}"', "for <question>", 1)
        if body.get("prompt"):
            body["prompt"] = body["prompt"].removesuffix(f"Question: {question}\n")
    if isinstance(body, dict) and path.startswith("/documents/") and "error" in body:
        document = path.removeprefix("/documents/")
        body["error"] = body["error"].replace(f"no document {json.dumps(document)}", "no document", 1)
    return json.dumps(body)


def leaked(response, allowed: set[str], path: str = "", extra: dict | None = None) -> set[str]:
    text = (without_echo(response, path, extra or {}) + json.dumps(dict(response.headers))).lower()
    return {c for c in CANARY.values() if c in text} - allowed


PRINCIPALS = {
    # name: (client, headers, groups the principal reads for; None: must be refused)
    "anonymous": ("client", {}, None),
    "hr": ("client", "hr", {"hr"}),
    "eng": ("client", "eng", {"eng"}),
    "staff": ("client", "staff", {"staff"}),
    "revoked": ("client", "revoked", None),
    "malformed": ("client", {"Authorization": "Bearer rp_nothing"}, None),
    "basic": ("client", {"Authorization": "Basic aHI6aHI="}, None),
    "proxy-staff": ("client", {"X-Forwarded-Groups": "staff"}, {"staff"}),
    "proxy-hr-eng": ("client", {"X-Forwarded-Groups": "hr, eng"}, {"hr", "eng"}),
    "stranger-proxy-header": ("stranger", {"X-Forwarded-Groups": "hr,eng,staff"}, None),
    "stranger-header-staff-token": ("stranger", {"X-Forwarded-Groups": "hr,eng"}, {"staff"}),
}


def _resolve(setup: Setup, name: str) -> tuple[TestClient, dict, set[str] | None]:
    which, headers, groups = PRINCIPALS[name]
    client = setup.client if which == "client" else setup.stranger
    if isinstance(headers, str):
        headers = bearer(setup.tokens[headers])
    if name == "stranger-header-staff-token":
        headers = {**headers, **bearer(setup.tokens["staff"])}
    return client, headers, groups


@pytest.mark.parametrize("name", list(PRINCIPALS))
def test_no_response_carries_a_canary_the_principal_may_not_read(setup: Setup, name: str):
    client, headers, groups = _resolve(setup, name)
    allowed = readable_canaries(groups or set())
    found: dict[str, set[str]] = {}
    for method, path, extra in probes(setup):
        response = call(client, method, path, headers, extra)
        if groups is None and path != "/session":  # /session checks the token it is given
            assert response.status_code == 401, (method, path, response.text)
            assert set(response.json()) == {"error"}
        assert response.status_code < 500, (method, path, response.text)
        if leak := leaked(response, allowed, path, extra):
            found[f"{method} {path} {extra}"] = leak
    assert found == {}


@pytest.mark.parametrize("name", ["hr", "eng", "proxy-hr-eng"])
def test_each_principal_finds_its_own_documents(setup: Setup, name: str):
    client, headers, groups = _resolve(setup, name)
    for group in groups:
        body = client.get("/ask", params={"q": CANARY[group], "cut": 2.0}, headers=headers).json()
        assert body["citations"][0]["document_id"].split("/")[0] == group
        document = body["citations"][0]["document_id"]
        page = client.get(f"/documents/{document}", headers=headers)
        assert page.status_code == 200 and CANARY[group] in page.text


def test_a_restricted_document_is_as_missing_as_a_document_that_does_not_exist(setup: Setup):
    headers = bearer(setup.tokens["staff"])
    restricted = setup.client.get(f"/documents/hr/{CANARY['hr']}-salaries.md", headers=headers)
    missing = setup.client.get("/documents/hr/none.md", headers=headers)
    assert (restricted.status_code, missing.status_code) == (404, 404)
    assert restricted.json()["error"].replace(f"{CANARY['hr']}-salaries", "none") == missing.json()["error"]


def test_the_shared_paragraph_comes_from_the_readable_copy_only(setup: Setup):
    question = {"q": "badges front desk lost badge replaced", "cut": 2.0, "k": 1}
    staff = setup.client.get("/ask", params=question, headers=bearer(setup.tokens["staff"])).json()
    (citation,) = staff["citations"]
    assert (citation["document_id"], citation["quote"]) == ("public/faq.md", SHARED)
    assert [loc.split("#")[0] for loc in citation["locations"]] == ["public/faq.md"]
    hr = setup.client.get("/ask", params=question, headers=bearer(setup.tokens["hr"])).json()
    assert sorted(loc.split("#")[0] for loc in hr["citations"][0]["locations"]) == [
        f"hr/{CANARY['hr']}-salaries.md", "public/faq.md"]


def test_status_counts_only_what_the_principal_reads(setup: Setup):
    by = {name: setup.client.get("/status", headers=bearer(setup.tokens[name])).json()
          for name in ("hr", "eng", "staff")}
    assert {n: (s["documents"], s["chunks"]) for n, s in by.items()} == {
        "hr": (2, 4), "eng": (2, 3), "staff": (1, 2)}
    assert all(s["ann_index"] is None and s["vectors"] == s["chunks"] for s in by.values())
    # Nor what follows from the whole index's size (found by an attack: `dense_path` turned
    # "ann" when others' documents passed 30,000 chunks; the load time grew with them).
    assert {(s["dense_path"], s["load_seconds"]) for s in by.values()} == {(None, None)}
    # Nor how often the others ask: the service's traffic is shown to no restricted principal.
    setup.client.get("/ask", params={"q": "what is the capital of france"},
                     headers=bearer(setup.tokens["hr"]))
    again = setup.client.get("/status", headers=bearer(setup.tokens["eng"])).json()
    assert (again["requests"], again["answered_by_generation"]) == (None, None)
    # Nor the rules' digest: hashed from globs, file and group names, it confirmed a guessed
    # rule about documents the principal does not read (found by an attack).
    assert {n: s["access"] for n, s in by.items()} == {
        n: {"name": f"{n}-user", "groups": [n], "via": "token"} for n in ("hr", "eng", "staff")}


def test_serve_says_what_its_access_is_at_start(setup: Setup):
    assert access_line(setup.service) == (
        f"access: 3 rule(s) ({POLICY.digest}), 3 token(s); groups from X-Forwarded-Groups of "
        f"{PROXY} only; every path but /health and the page's shell (GET /) needs a principal; "
        "1 document(s) readable by nobody")


def test_health_and_the_page_shell_need_no_token(setup: Setup):
    # Without the generation: a new one told anyone when a document changed, one they may not
    # read included (found by an attack).
    assert setup.client.get("/health").json() == {"status": "ok"}
    assert setup.client.get("/").status_code == 200
    # A monitor's HEAD is answered as its GET, without a body.
    for path in ("/", "/health"):
        head = setup.client.head(path)
        assert (head.status_code, head.content) == (200, b"")
    assert setup.client.get("/status").json() == {
        "error": "this service needs a token: send `Authorization: Bearer TOKEN` (a token of "
                 "`rag-pipeline tokens add`)"}
    refused = setup.client.get("/status")
    assert (refused.status_code, refused.headers["cache-control"],
            refused.headers["x-frame-options"]) == (401, "no-store", "DENY")
    # A link opened by the browser itself (a new tab, a bookmark) gets a page saying how to
    # sign in, not a line of JSON (found by a user).
    opened = setup.client.get("/documents/public/faq.md",
                              headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert (opened.status_code, opened.headers["content-type"]) == (401, "text/html; charset=utf-8")
    assert ('<p><a href="/">Open the question page</a>, sign in there, then open this link '
            "again.</p>") in opened.text
    assert "faq" not in opened.text.lower()
    # In a reader's words, not the header a program sends (found by a user's trial).
    assert ('<p id="error">this page is shown to a signed-in reader only, and this browser is not '
            "signed in to the service</p>") in opened.text


def test_a_session_cookie_stands_for_the_token_until_it_is_cleared(setup: Setup, tmp_path: Path):
    client = TestClient(setup.client.app, client=(STRANGER, 4001))
    assert client.post("/session", json={"token": "rp_bad"}).status_code == 401
    opened = client.post("/session", json={"token": setup.tokens["eng"]})
    assert opened.json() == {"name": "eng-user", "groups": ["eng"]}
    cookie = opened.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=") and "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower() and "Path=/" in cookie
    assert "secure" not in cookie.lower()  # plain HTTP: a Secure cookie would never come back
    assert setup.tokens["eng"] not in cookie
    # How the principal came: the page offers Sign out to a session (a tab opened from a
    # signed-in one has the cookie alone), not to the trusted proxy's users.
    assert client.get("/status").json()["access"] == {"name": "eng-user", "groups": ["eng"],
                                                      "via": "session"}
    assert setup.client.get("/status", headers={"X-Forwarded-Groups": "staff"}).json()[
        "access"] == {"name": "proxy", "groups": ["staff"], "via": "proxy"}
    assert client.delete("/session").status_code == 200
    assert client.get("/status").status_code == 401
    # Behind a TLS proxy the page's origin is https: the cookie never travels in clear (this
    # client speaks plain HTTP, so it no longer sends it).
    tls = client.post("/session", json={"token": setup.tokens["eng"]},
                      headers={"Origin": "https://rag.example.org"})
    secure_cookie = tls.headers["set-cookie"]
    assert secure_cookie.startswith(f"{SECURE_SESSION_COOKIE}=") and "; secure" in secure_cookie.lower()
    assert client.get("/status").status_code == 401
    secure_id = secure_cookie.split(";", 1)[0].split("=", 1)[1]
    assert client.get("/status", cookies={SECURE_SESSION_COOKIE: secure_id}).status_code == 200


def test_get_session_says_who_is_signed_in_and_never_answers_401(setup: Setup):
    client = TestClient(setup.client.app, client=(STRANGER, 4008))
    answers = [client.get("/session"),
               client.get("/session", headers=bearer(setup.tokens["hr"])),
               client.get("/session", headers=bearer(setup.tokens["revoked"])),
               client.get("/session", headers={"X-Forwarded-Groups": "hr"}),
               setup.client.get("/session", headers={"X-Forwarded-Groups": "staff"})]
    client.post("/session", json={"token": setup.tokens["eng"]})
    answers.append(client.get("/session"))
    client.delete("/session")
    answers.append(client.get("/session"))
    assert [(a.status_code, a.json()) for a in answers] == [
        (200, {"signed_in": False}),
        (200, {"signed_in": True, "name": "hr-user", "groups": ["hr"]}),
        (200, {"signed_in": False}),
        (200, {"signed_in": False}),  # the groups header from anywhere but the proxy
        (200, {"signed_in": True, "name": "proxy", "groups": ["staff"]}),
        (200, {"signed_in": True, "name": "eng-user", "groups": ["eng"]}),
        (200, {"signed_in": False})]


def test_signing_out_with_a_token_ends_its_sessions_and_leaves_another_tokens_cookie(setup: Setup):
    """Found by an attack: two tabs of one browser as hr and eng share one cookie; the hr tab's
    Sign out ended the eng sign-in the cookie held and left the hr session valid."""
    hr_tab = TestClient(setup.client.app, client=(STRANGER, 4010))
    hr_tab.post("/session", json={"token": setup.tokens["hr"]})
    hr_cookie = hr_tab.cookies[SESSION_COOKIE]
    browser = TestClient(setup.client.app, client=(STRANGER, 4011))
    browser.post("/session", json={"token": setup.tokens["eng"]})
    eng_cookie = browser.cookies[SESSION_COOKIE]
    out = browser.delete("/session", headers=bearer(setup.tokens["hr"]))
    assert (out.status_code, out.json(), "set-cookie" in out.headers) == (200, {"signed_out": True}, False)

    def who(cookie: str) -> dict:
        return TestClient(setup.client.app, client=(STRANGER, 4012)).get(
            "/session", cookies={SESSION_COOKIE: cookie}).json()

    assert (who(hr_cookie), who(eng_cookie)["name"]) == ({"signed_in": False}, "eng-user")
    # A revoked token signs out by the cookie alone, and the cookie is cleared.
    gone = browser.delete("/session", headers=bearer(setup.tokens["revoked"]))
    assert (gone.status_code, who(eng_cookie)) == (200, {"signed_in": False})
    assert f'{SESSION_COOKIE}=""' in gone.headers["set-cookie"]


def test_signing_in_again_continues_the_sign_in_and_signing_out_ends_all_of_it(setup: Setup):
    """Found by an attack: the page signs in again when its tab comes back into view, and each
    sign-in left the one before it readable after signing out. Ending the replaced session at
    once (found by the next attack) broke a link opened in a new tab meanwhile, which carries
    the old cookie: the old session stays valid until the sign-in ends."""
    client = TestClient(setup.client.app, client=(STRANGER, 4004))
    first = client.post("/session", json={"token": setup.tokens["hr"]}).cookies[SESSION_COOKIE]
    second = client.post("/session", json={"token": setup.tokens["hr"]}).cookies[SESSION_COOKIE]
    other = TestClient(setup.client.app, client=(STRANGER, 4005))
    assert [other.get("/status", cookies={SESSION_COOKIE: s}).status_code
            for s in (first, second)] == [200, 200]
    # Another person signing in in this browser starts a sign-in of their own.
    third = client.post("/session", json={"token": setup.tokens["eng"]}).cookies[SESSION_COOKIE]
    # A wrong token changes nothing: the browser keeps its session.
    assert client.post("/session", json={"token": "rp_bad"}).status_code == 401
    assert other.get("/status", cookies={SESSION_COOKIE: third}).status_code == 200
    assert other.delete("/session", cookies={SESSION_COOKIE: second}).status_code == 200
    assert [other.get("/status", cookies={SESSION_COOKIE: s}).status_code
            for s in (first, second, third)] == [401, 401, 200]


def test_behind_https_every_session_is_secure_and_a_plain_cookie_is_never_taken(setup: Setup):
    """Found by an attack: through the TLS proxy, a client sending no Origin (curl) got a plain
    session, which a neighbouring host could plant as a plain rag_session in a reader's
    browser: the page then read as the attacker. Sign out cleared only the secure cookie."""
    client = TestClient(setup.client.app, client=(STRANGER, 4006))
    plain = client.post("/session", json={"token": setup.tokens["eng"]}).cookies[SESSION_COOKIE]
    setup.access.behind_https = True
    try:
        opened = client.post("/session", json={"token": setup.tokens["hr"]})  # no Origin
        assert opened.headers["set-cookie"].startswith(f"{SECURE_SESSION_COOKIE}=")
        assert "; secure" in opened.headers["set-cookie"].lower()
        secure = opened.cookies[SECURE_SESSION_COOKIE]
        victim = TestClient(setup.client.app, client=(STRANGER, 4007))
        planted = victim.get("/status", cookies={SESSION_COOKIE: plain})
        assert (planted.status_code, planted.json()["error"]) == (
            401, "this service needs a token: send `Authorization: Bearer TOKEN` (a token of "
                 "`rag-pipeline tokens add`)")
        assert victim.get("/status", cookies={SECURE_SESSION_COOKIE: secure}).json()[
            "access"]["name"] == "hr-user"
        signed_out = victim.delete("/session", cookies={SECURE_SESSION_COOKIE: secure,
                                                        SESSION_COOKIE: plain})
        cleared = signed_out.headers.get_list("set-cookie")
        assert sorted(c.split("=", 1)[0] for c in cleared) == [SECURE_SESSION_COOKIE,
                                                               SESSION_COOKIE]
        assert victim.get("/status", cookies={SECURE_SESSION_COOKIE: secure}).status_code == 401
    finally:
        setup.access.behind_https = False


def test_a_session_is_accepted_only_from_the_cookie_it_was_opened_with(setup: Setup):
    """A host beside this one under the same domain can set a plain ``rag_session`` cookie for
    it (cookie tossing), never a ``__Host-`` one: a session opened over HTTPS, presented in the
    plain cookie, is refused, so no one can sign a reader in to a session of their own."""
    plain_client = TestClient(setup.client.app, client=(STRANGER, 4002))
    opened = plain_client.post("/session", json={"token": setup.tokens["hr"]},
                               headers={"Origin": "https://rag.example.org"})
    attackers = opened.cookies[SECURE_SESSION_COOKIE]
    victim = TestClient(setup.client.app, client=(STRANGER, 4003))
    tossed = victim.get("/status", cookies={SESSION_COOKIE: attackers})
    assert (tossed.status_code, tossed.json()) == (401, {
        "error": "the session cookie is not the one this service set: give the token again"})
    # A session opened over plain HTTP is not taken from the secure cookie either, and the
    # secure cookie wins over a plain one beside it.
    plain = plain_client.post("/session", json={"token": setup.tokens["eng"]}).cookies[SESSION_COOKIE]
    assert victim.get("/status", cookies={SECURE_SESSION_COOKIE: plain}).status_code == 401
    both = victim.get("/status", cookies={SECURE_SESSION_COOKIE: attackers, SESSION_COOKIE: plain})
    assert both.json()["access"] == {"name": "hr-user", "groups": ["hr"], "via": "session"}
    assert victim.get("/status", cookies={SESSION_COOKIE: plain}).json()["access"] == {
        "name": "eng-user", "groups": ["eng"], "via": "session"}


def test_revocation_and_a_rule_change_take_effect_on_the_next_poll(setup: Setup):
    store = setup.access.store
    token = store.add("temporary", ("staff",))
    # Accepted at once, before any poll: an unknown id looks at the tokens file (a token pasted
    # the moment `tokens add` printed it was refused until the poll, found by a user's trial).
    assert setup.client.get("/status", headers=bearer(token)).status_code == 200
    store.revoke("temporary")
    setup.access.poll_once()
    refused = setup.client.get("/status", headers=bearer(token))
    assert (refused.status_code, refused.json()) == (401, {"error": "unknown or revoked token"})
    # A rule change re-labels the served rows: staff may now read the board minutes.
    wider = AccessPolicy((*POLICY.rules, AccessRule("board/**", ("staff",))))
    setup.access.reload_policy = lambda: wider
    try:
        setup.access.poll_once()
        body = setup.client.get("/ask", params={"q": CANARY["board"], "cut": 2.0},
                                headers=bearer(setup.tokens["staff"])).json()
        assert body["citations"][0]["document_id"] == f"board/{CANARY['board']}-minutes.md"
    finally:
        setup.access.reload_policy = lambda: POLICY
        setup.access.poll_once()
    assert setup.access.policy.digest == POLICY.digest
    # A verdict on that answer, the rule gone: the source is no longer named (found by an
    # attacker: the recent answer kept it), the question answered again as it reads now.
    verdict = setup.client.post("/feedback", json={"question": CANARY["board"], "helpful": False},
                                headers=bearer(setup.tokens["staff"]))
    assert verdict.status_code == 200, verdict.text
    assert verdict.json()["sources"] == []  # refused now: staff reads nothing on it


def test_access_declared_while_a_service_runs_without_it_is_in_force_on_the_next_poll(
        setup: Setup, hashed_embedder: HashedEmbedder):
    # A service started with no [access], following the configuration: the team adds the rules.
    declared: list[AccessPolicy | None] = [None]
    access = AccessState(None, setup.access.store, reload_policy=lambda: declared[0],
                         poll_seconds=3600)
    with running_service(Warehouse(setup.built.data_dir),
                         ServeSettings("header", setup.model_key, workers=2),
                         lambda: hashed_embedder, poll_seconds=3600, access=access) as service, \
            TestClient(create_app(service)) as anonymous:
        asked = {"q": CANARY["hr"], "cut": 2.0}
        before = anonymous.get("/ask", params=asked).json()
        assert before["citations"][0]["document_id"] == f"hr/{CANARY['hr']}-salaries.md"
        access.poll_once()
        assert anonymous.get("/ask", params=asked).status_code == 200  # nothing declared yet
        declared[0] = POLICY
        access.poll_once()
        refused = anonymous.get("/ask", params=asked)
        assert refused.status_code == 401
        assert refused.json()["error"].startswith("this service needs a token")
        assert anonymous.get("/status").status_code == 401
        staff = anonymous.get("/ask", params=asked, headers=bearer(setup.tokens["staff"])).json()
        assert {c["document_id"] for c in staff["citations"]} == {"public/faq.md"}
        hr = anonymous.get("/ask", params=asked, headers=bearer(setup.tokens["hr"])).json()
        assert hr["citations"][0]["document_id"] == f"hr/{CANARY['hr']}-salaries.md"
        # Removing [access] again leaves the rules in force until a restart.
        declared[0] = None
        access.poll_once()
        assert anonymous.get("/ask", params=asked).status_code == 401


def test_a_restricted_asker_is_told_the_request_time_alone_in_whole_milliseconds(setup: Setup):
    # Found by an attacker: the BM25 stage's time told whether a word is only in HR files.
    body = setup.client.get("/ask", params={"q": CANARY["hr"], "retriever": "bm25"},
                            headers=bearer(setup.tokens["eng"])).json()
    assert list(body["timings_ms"]) == ["request"]
    assert body["timings_ms"]["request"] == int(body["timings_ms"]["request"])


def test_a_document_the_asker_may_not_read_is_refused_before_its_text_is_read(
        setup: Setup, monkeypatch: pytest.MonkeyPatch):
    # Found by a review: the refusal read the document's text first, so an existing one took
    # longer to refuse (milliseconds for a large one) than a missing one.
    strings = type(setup.service.follower.current.canonical)
    read: list[str] = []
    original = strings.__getitem__

    def recording(self, key: str) -> str:
        read.append(key)
        return original(self, key)

    monkeypatch.setattr(strings, "__getitem__", recording)
    eng = bearer(setup.tokens["eng"])
    for document in (f"hr/{CANARY['hr']}-salaries.md", "hr/none.md"):
        assert setup.client.get(f"/documents/{document}", headers=eng).status_code == 404
    assert read == []
    assert setup.client.get("/documents/public/faq.md", headers=eng).status_code == 200
    assert read == ["public/faq.md"]
