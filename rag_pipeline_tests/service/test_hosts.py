"""Tests for ``rag_pipeline.service.hosts``: a request naming a host the service does not answer
to is refused (DNS rebinding), every other passes untouched."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from rag_pipeline.service.hosts import HostCheck, allowed_hosts, host_of, hosts_line


def test_the_names_a_bind_answers_to():
    assert allowed_hosts("127.0.0.1") == frozenset({"localhost", "127.0.0.1", "::1"})
    assert allowed_hosts("::1", ["RAG.example.org "]) == frozenset(
        {"localhost", "127.0.0.1", "::1", "rag.example.org"})
    # A name given with its port, an address written long: as a Host header reads them.
    assert allowed_hosts("0:0:0:0:0:0:0:1", ["rag.example.org:8443", "2001:DB8::0001"]) == \
        frozenset({"localhost", "127.0.0.1", "::1", "rag.example.org", "2001:db8::1"})
    assert allowed_hosts("10.0.0.7") is None  # a team's names are not the service's to guess
    with pytest.raises(ValueError) as refused:
        allowed_hosts("127.0.0.1", ["rag example"])
    assert str(refused.value) == ("--allowed-host 'rag example' is no host name or address (a "
                                  "name, an address, optionally :PORT)")
    assert allowed_hosts("0.0.0.0", ["rag.example.org"]) == frozenset(
        {"localhost", "127.0.0.1", "::1", "0.0.0.0", "rag.example.org"})


@pytest.mark.parametrize(("header", "name"), [
    ("localhost:8000", "localhost"), ("[::1]:8000", "::1"), ("[::1]", "::1"),
    ("Rag.Example.org", "rag.example.org"), ("10.0.0.7:80", "10.0.0.7"),
    ("[0:0:0:0:0:0:0:1]", "::1"), ("[2001:DB8::0001]:443", "2001:db8::1"),
    # Found by an attack: no host, though the lax reading took them for ::1 and localhost.
    ("[::1]evil.com", ""), ("localhost:evil", ""), ("evil@localhost", ""), ("", "")])
def test_the_name_of_a_host_header(header: str, name: str):
    assert host_of(header) == name


def _client(allowed: frozenset[str] | None) -> TestClient:
    app = FastAPI()

    @app.get("/ask")
    def ask() -> dict[str, str]:
        return {"quote": "the secret"}

    return TestClient(HostCheck(app, allowed))


def test_a_rebinding_page_is_refused_and_the_service_own_names_answer():
    client = _client(allowed_hosts("127.0.0.1"))
    refused = client.get("/ask", headers={"Host": "rebind.attacker.example:8000"})
    assert (refused.status_code, refused.json()) == (421, {"error": (
        'this service does not answer to "rebind.attacker.example:8000": it answers to 127.0.0.1, '
        "::1, localhost (`serve --allowed-host NAME` adds the name a proxy forwards)")})
    assert (refused.headers["cache-control"], refused.headers["x-frame-options"]) == (
        "no-store", "DENY")
    for host in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
        answered = client.get("/ask", headers={"Host": host})
        assert (answered.status_code, answered.json()) == (200, {"quote": "the secret"}), host
    assert _client(None).get("/ask", headers={"Host": "anything.example"}).status_code == 200


def test_serve_says_which_names_it_answers_to():
    assert hosts_line(allowed_hosts("127.0.0.1")) == (
        "host names: 127.0.0.1, ::1, localhost (a proxy that forwards another needs "
        "`--allowed-host NAME`)")
    assert hosts_line(None) == (
        "host names: any (`--allowed-host NAME` limits them, so that a web page that rebinds its "
        "name to this address reads nothing)")


def test_a_crash_answered_from_outside_the_app_is_kept_by_no_cache_either():
    # Found by a review: Starlette answers an unexpected error from outside every middleware of
    # the app, so `serve` wraps the app in PrivateResponses from outside too.
    from rag_pipeline.service.app import PrivateResponses

    app = FastAPI()

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("boom")

    client = TestClient(PrivateResponses(app), raise_server_exceptions=False)
    crashed = client.get("/boom")
    assert (crashed.status_code, crashed.headers["cache-control"],
            crashed.headers["x-frame-options"]) == (500, "no-store", "DENY")
