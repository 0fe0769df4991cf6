"""The service's HTTP API over a tiny real index: the JSON of ``ask --json`` plus the generation,
one-line 4xx errors for bad requests, status, health, OpenAPI and the document view."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rag_pipeline.core.answer.answer_json import answer_json
from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.evaluation.report import report_path
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.app import MAX_BODY_BYTES, create_app, document_view
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline.service.run import running_service
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

TIMEOUTS_QUESTION = "how long before a network call times out"
OFF_TOPIC = "what is the capital of france"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("service"), hashed_embedder)


@pytest.fixture(scope="module")
def client(built: BuiltIndex, hashed_embedder: HashedEmbedder) -> Iterator[TestClient]:
    with (running_service(Warehouse(built.data_dir),
                          ServeSettings("header", hashed_embedder.spec.key, workers=2),
                          lambda: hashed_embedder, poll_seconds=3600) as service,
          TestClient(create_app(service)) as test_client):
        yield test_client


def _without_service_fields(body: dict) -> dict:
    body = dict(body)
    body["timings_ms"] = sorted(body["timings_ms"])
    return body


def test_post_ask_returns_the_json_of_ask_json_with_service_timings(client: TestClient, built: BuiltIndex,
                                                                   hashed_embedder: HashedEmbedder):
    response = client.post("/ask", json={"question": TIMEOUTS_QUESTION})
    assert response.status_code == 200
    body = response.json()
    expected = answer_json(ask(TIMEOUTS_QUESTION, built.index, hashed_embedder, AskSettings()))
    expected["timings_ms"] = sorted([*expected["timings_ms"], "cpu", "queue", "request"])
    assert _without_service_fields(body) == expected
    assert body["generation"] == client.get("/status").json()["generation"]
    (citation,) = body["citations"]
    assert (citation["document_id"], citation["from"], citation["to"], citation["quote"]) == (
        "guide/config.md", 113, 203, TIMEOUTS_PARAGRAPH)


def test_get_ask_equals_post_ask(client: TestClient):
    got = client.get("/ask", params={"q": TIMEOUTS_QUESTION, "k": 2, "cut": 1.1}).json()
    posted = client.post("/ask", json={"question": TIMEOUTS_QUESTION, "k": 2, "cut": 1.1}).json()
    assert _without_service_fields(got) == _without_service_fields(posted)
    assert (got["threshold"], len(got["citations"])) == (1.1, 2)


def test_a_whole_number_cut_is_a_number(client: TestClient):
    body = client.post("/ask", json={"question": TIMEOUTS_QUESTION, "cut": 1}).json()
    assert body["threshold"] == 1.0


def test_an_off_topic_question_is_refused_with_the_closest_distance(client: TestClient):
    body = client.get("/ask", params={"q": OFF_TOPIC}).json()
    assert (body["answered"], body["citations"], body["prompt"]) == (False, [], None)
    assert body["reason"] == (f'NO ANSWER: nothing under cosine distance 0.6 for "{OFF_TOPIC}" '
                              f'(closest: {body["closest_distance"]:.3f})')


@pytest.mark.parametrize(("method", "payload", "status", "error"), [
    ("post", {"question": ""}, 422, "question: the question is empty"),
    ("post", {"question": "  \n "}, 422, "question: the question is empty"),
    ("post", {"question": "x" * 2001}, 422,
     "question: the question has 2001 characters; at most 2000 are accepted"),
    ("post", {}, 422, "question: Field required"),
    ("post", {"question": "q", "cut": -0.25}, 422,
     "cut must be a finite cosine distance in [0, 2], got -0.25"),
    ("post", {"question": "q", "cut": 7.5}, 422, "cut must be a finite cosine distance in [0, 2], got 7.5"),
    ("post", {"question": "q", "k": 0}, 422, "k: Input should be greater than or equal to 1"),
    ("post", {"question": "q", "k": "2"}, 422, "k: Input should be a valid integer"),
    ("post", {"question": "q", "cut": "0.5"}, 422, "cut: Input should be a valid number"),
    ("post", {"question": "q", "retriever": "magic"}, 422,
     "retriever: Input should be 'dense', 'bm25' or 'hybrid'"),
    ("post", {"question": "q", "chunker": "blind"}, 422,
     "chunker 'blind' is not served here; this service serves 'header'"),
    ("post", {"question": "q", "chunker": "../x"}, 422, "chunker: unknown chunker '../x'; declared: blind, "
     "blind_overlap, boundaries, boundaries_overlap, header, header_overlap"),
    ("post", {"question": "q", "model": "other@0000"}, 422,
     "model 'other@0000' is not served here; this service serves 'hashed-wordpieces@0000feed'"),
    ("post", {"question": "q", "drop": "table"}, 422, "drop: Extra inputs are not permitted"),
    ("get", {"q": ""}, 422, "question: the question is empty"),
    ("get", {"q": "q", "cut": "nan"}, 422, "cut must be a finite cosine distance in [0, 2], got nan"),
    ("get", {}, 422, "q: Field required"),
])
def test_bad_requests_get_a_one_line_json_error(client: TestClient, method: str, payload: dict,
                                                status: int, error: str):
    response = (client.post("/ask", json=payload) if method == "post"
                else client.get("/ask", params=payload))
    assert (response.status_code, response.json()) == (status, {"error": error})
    assert "\n" not in response.text


def test_get_refuses_unknown_query_parameters_as_post_refuses_unknown_fields(client: TestClient):
    response = client.get("/ask", params={"q": "timeouts", "foo": "1"})
    assert (response.status_code, response.json()) == (422, {
        "error": "foo: unknown query parameter (known: q, chunker, model, retriever, analyzer, k, cut)"})
    response = client.post("/ask", json={"question": "timeouts", "foo": 1})
    assert (response.status_code, response.json()) == (422, {"error": "foo: Extra inputs are not permitted"})


def test_get_refuses_a_repeated_query_parameter(client: TestClient):
    """Found by an operator's trial: ``?q=a&q=b`` answered ``b`` alone, silently."""
    response = client.get("/ask?q=leave+policy&q=salaries&k=2")
    assert (response.status_code, response.json()) == (422, {
        "error": "q: given 2 times; give it once"})
    response = client.get("/ask?q=timeouts&k=2&k=3&k=4")
    assert (response.status_code, response.json()) == (422, {
        "error": "k: given 3 times; give it once"})


def test_malformed_and_oversized_bodies_are_refused(client: TestClient):
    response = client.post("/ask", content=b"{not json", headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (
        422, {"error": "the body is not JSON: Expecting property name enclosed in double quotes"})
    big = json.dumps({"question": "x" * MAX_BODY_BYTES}).encode()
    response = client.post("/ask", content=big, headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (
        413, {"error": f"request body over {MAX_BODY_BYTES} bytes"})

    def chunks():  # no Content-Length: the body streams in, and the limit must still hold
        for start in range(0, len(big), 8192):
            yield big[start:start + 8192]

    response = client.post("/ask", content=chunks(), headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (
        413, {"error": f"request body over {MAX_BODY_BYTES} bytes"})
    response = client.get("/nowhere")
    assert (response.status_code, response.json()) == (404, {"error": "not found"})
    # The service still answers.
    assert client.get("/health").json()["status"] == "ok"


def test_status_names_the_generation_model_counts_and_requests(client: TestClient):
    status = client.get("/status").json()
    assert (status["partition"], status["chunker"], status["chunks"], status["vectors"],
            status["documents"]) == ("header|hashed-wordpieces@0000feed", "header", 6, 6, 4)
    assert status["model"] == {"key": "hashed-wordpieces@0000feed", "name": "hashed-wordpieces",
                               "fingerprint": "0000feed", "dimension": 384}
    # A stand-in for the model has no fast question path: questions run on the spec's backend.
    assert status["query_path"] == {"backend": "torch", "streams": None, "min_cosine": None,
                                    "alone_threads": None}
    # Six chunks: under the crossover, the exact scan serves though the generation has an index
    # (one cell, since 6 // 39 is 0: every row is scanned, so its recall is 1.0).
    assert status["dense_path"] == "exact"
    assert status["ann_index"] == {"rows": 6, "fingerprint": status["ann_index"]["fingerprint"],
                                   "crossover": 30_000, "kind": "faiss IVF-SQ8", "nlist": 1,
                                   "nprobe": 1, "measured_recall": 1.0}
    assert (status["swaps"], status["last_error"]) == (0, None)
    assert status["settings"]["cut"] == 0.6 and status["settings"]["retriever"] == "hybrid"
    assert status["index_age_seconds"] >= 0
    assert sum(status["answered_by_generation"].values()) == (
        status["requests"]["answered"] + status["requests"]["refused"])
    assert client.get("/health").json() == {"status": "ok", "generation": status["generation"]}


def test_status_settings_are_the_started_settings_in_their_fixed_order(client: TestClient):
    # The bytes a monitoring script parses: the keys and their order are part of /status.
    text = client.get("/status").text
    assert ('"settings":{"chunker":"header","model_key":"hashed-wordpieces@0000feed",'
            '"retriever":"hybrid","analyzer":"code","cut":0.6,"max_sources":4,"base_url":null,'
            '"workers":2}') in text


def test_openapi_describes_the_endpoints(client: TestClient):
    spec = client.get("/openapi.json").json()
    assert {"/ask", "/health", "/status", "/documents/{document_id}"} <= set(spec["paths"])
    assert set(spec["paths"]["/ask"]) == {"get", "post"}
    assert "AskRequest" in spec["components"]["schemas"]


def test_the_document_view_marks_the_quoted_slice(client: TestClient, built: BuiltIndex):
    response = client.get("/documents/guide/config.md", params={"from": 113, "to": 203})
    assert response.status_code == 200
    assert f'<mark id="quote">{TIMEOUTS_PARAGRAPH}</mark>' in response.text
    assert client.get("/documents/guide/config.md", params={"from": 10, "to": 5}).json() == {
        "error": f"from/to must satisfy 0 <= from <= to <= {len(built.canonical['guide/config.md'])}"}
    assert client.get("/documents/../etc/passwd").status_code == 404
    assert client.get("/documents/broken.md").status_code == 404
    # Found by a user: pydantic's words ("Input should be a valid integer, unable to parse
    # string as an integer"; "a valid dictionary or object to extract fields from").
    assert client.get("/documents/guide/config.md", params={"from": "abc"}).json() == {
        "error": "from: must be a whole number, not 'abc'"}
    assert client.post("/ask", content="question=timeouts").json() == {
        "error": 'the body must be a JSON object, sent as Content-Type: application/json '
                 '({"question": "..."})'}
    # Found by an attack: the sign-in was told the body /ask takes.
    assert client.post("/session", content='{"token": "x"}',
                       headers={"content-type": "text/plain"}).json() == {
        "error": 'the body must be a JSON object, sent as Content-Type: application/json '
                 '({"token": "..."})'}


def test_the_evaluation_report_is_served_where_the_dagster_ui_links(client: TestClient,
                                                                      built: BuiltIndex):
    path = report_path(built.data_dir, "m@1234abcd")
    path.parent.mkdir(parents=True)
    path.write_text("<!doctype html><h1>Retrieval evaluation: m@1234abcd</h1>", encoding="utf-8")
    response = client.get("/reports/m@1234abcd")
    assert (response.status_code, response.headers["content-type"], response.text) == (
        200, "text/html; charset=utf-8", "<!doctype html><h1>Retrieval evaluation: m@1234abcd</h1>")
    assert (client.get("/reports/m@99999999").json()
            == {"error": "no evaluation report for m@99999999: `rag-pipeline index` writes "
                         "one when the corpus has a gold set (RAG_PIPELINE_EVAL_DIR)"})
    # Not a model key: no other file can be named.
    assert client.get("/reports/..%2Fgold.jsonl").status_code == 404


def test_the_document_view_escapes_the_text_it_shows():
    page = document_view('<b>"T"</b>', "a/<x>.md", "<script>alert(1)</script> & more", 0, 8)
    assert '<mark id="quote">&lt;script&gt;</mark>alert(1)&lt;/script&gt; &amp; more</pre>' in page
    assert "<title>&lt;b&gt;&quot;T&quot;&lt;/b&gt; · line 1</title>" in page and "a/&lt;x&gt;.md" in page
    # The only script is the page's own (it keeps the quote below the sticky header), after the text.
    assert page.count("<script>") == 1 and page.index("<script>") > page.index("</pre>")


def test_nothing_sent_changes_the_index(client: TestClient, built: BuiltIndex):
    files = sorted((p, p.stat().st_mtime_ns) for p in Path(built.data_dir).rglob("*") if p.is_file())
    for payload in ({"question": "'; drop table chunks; --"}, {"question": "\x00" * 10}):
        assert client.post("/ask", json=payload).status_code == 200
    assert sorted((p, p.stat().st_mtime_ns) for p in Path(built.data_dir).rglob("*") if p.is_file()) == files


@pytest.mark.slow
def test_the_real_model_answers_and_refuses_through_the_service(tmp_path: Path, minilm):
    from rag_pipeline.core.embedding.embedder import Embedder

    embedder = Embedder(minilm)
    built = build_index(tmp_path, embedder)
    embedder.fast_queries()  # what `serve` does: questions on ONNX Runtime fp32
    with (running_service(Warehouse(built.data_dir), ServeSettings("header", minilm.key), lambda: embedder,
                          poll_seconds=3600) as service,
          TestClient(create_app(service)) as test_client):
        answer = test_client.get("/ask", params={"q": TIMEOUTS_QUESTION}).json()
        refusal = test_client.get("/ask", params={"q": OFF_TOPIC}).json()
        query_path = test_client.get("/status").json()["query_path"]
    assert (query_path["backend"], query_path["streams"], query_path["alone_threads"]) == (
        "onnxruntime-fp32", os.cpu_count(), os.cpu_count())
    assert query_path["min_cosine"] >= 0.99999
    assert (answer["answered"], answer["partition"]) == (True, f"header|{minilm.key}")
    assert [(c["document_id"], c["from"], c["to"]) for c in answer["citations"]] == [
        ("guide/config.md", 113, 203)]
    # With the real model the closest chunk to the off-topic question is at about 0.943.
    assert (refusal["answered"], round(refusal["closest_distance"], 3)) == (False, 0.943)


def test_a_question_with_a_lone_surrogate_is_a_422_not_a_500(client: TestClient):
    # Planted: a JSON escape that decodes to a lone surrogate (it used to reach the tokenizer
    # and end in a 500).
    response = client.post("/ask", content=b'{"question": "timeout \\udcff?"}',
                           headers={"content-type": "application/json"})
    assert (response.status_code, response.json()) == (422, {
        "error": "question: the question is not text: '\\udcff' at character 8 is a lone "
                 "surrogate (bytes that are not UTF-8?)"})
    assert client.get("/health").status_code == 200


def test_the_api_docs_page_is_self_contained(client: TestClient):
    response = client.get("/docs")
    assert response.status_code == 200
    # No script and nothing fetched from elsewhere (FastAPI's page loads swagger-ui from a CDN).
    assert "<script" not in response.text and "cdn" not in response.text
    assert "src=" not in response.text and "https://" not in response.text
    for method, path in (("POST", "/ask"), ("GET", "/ask"), ("GET", "/health"),
                         ("GET", "/documents/{document_id}")):
        assert f"<td><code>{method}</code></td><td><code>{path}</code></td>" in response.text
    assert client.get("/redoc").status_code == 404


def test_a_document_whose_name_holds_a_newline_is_cited_and_shown(
        tmp_path: Path, hashed_embedder: HashedEmbedder):
    from urllib.parse import unquote, urlsplit

    from rag_pipeline_tests.core.index_builder import DUPLICATED_DOCS

    # Planted: a file name with a newline (it was cited, but /documents/... was a 404).
    odd = "odd\nname.md"
    built = build_index(tmp_path, hashed_embedder, docs={
        **DUPLICATED_DOCS, odd: "# Odd\n\nThe frobnicator purrs at dawn in its basket.\n"})
    with (running_service(Warehouse(built.data_dir), ServeSettings("header", hashed_embedder.spec.key,
                                                        AskSettings(base_url="http://127.0.0.1:1/documents"),
                                                        workers=1),
                          lambda: hashed_embedder, poll_seconds=3600) as service,
          TestClient(create_app(service)) as test_client):
        answer = test_client.get("/ask", params={"q": "frobnicator purrs at dawn basket",
                                                 "cut": 2.0}).json()
        citation = next(c for c in answer["citations"] if c["document_id"] == odd)
        url = urlsplit(citation["url"])
        assert unquote(url.path) == f"/documents/{odd}"
        page = test_client.get(url.path, params=dict(p.split("=") for p in url.query.split("&"))
                               if url.query else None)
    assert page.status_code == 200, page.text
    assert "The frobnicator purrs at dawn in its basket." in page.text


class SlowEmbedder(HashedEmbedder):
    """A question takes ``seconds`` to embed: a worker slot is held that long."""

    seconds = 0.5

    def embed_query(self, question: str):
        import time

        time.sleep(self.seconds)
        return super().embed_query(question)


def test_a_question_whose_client_went_away_is_not_answered(built: BuiltIndex):
    # Found by a team's chat-bot integration: 20 questions whose clients had closed the
    # connection were all answered first, and the next user's question waited 9 s for them.
    import socket
    import threading
    import time
    import urllib.request
    from urllib.parse import quote

    from rag_pipeline_tests.service.test_protocol import LIMITS, serving

    embedder = SlowEmbedder(HashedEmbedder().spec)
    with (running_service(Warehouse(built.data_dir), ServeSettings("header", embedder.spec.key, workers=1),
                          lambda: embedder, poll_seconds=3600) as service,
          serving(create_app(service), LIMITS) as port):
        url = f"http://127.0.0.1:{port}/ask?q={quote(TIMEOUTS_QUESTION)}"
        holder = threading.Thread(target=lambda: urllib.request.urlopen(url, timeout=30).read())
        holder.start()  # holds the one worker slot for half a second
        time.sleep(0.1)
        for n in range(5):
            with socket.create_connection(("127.0.0.1", port)) as abandoned:
                abandoned.sendall(f"GET /ask?q=question+{n} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        time.sleep(0.1)
        began = time.perf_counter()
        body = json.loads(urllib.request.urlopen(url, timeout=30).read())
        waited = time.perf_counter() - began
        holder.join(timeout=30)
        deadline = time.monotonic() + 10
        while (counts := service.status(None, "", "")["requests"])["abandoned"] < 5:
            assert time.monotonic() < deadline, counts
            time.sleep(0.05)
    assert body["answered"] is True
    assert counts == {"answered": 2, "refused": 0, "rejected": 0, "abandoned": 5}
    assert waited < 5 * SlowEmbedder.seconds  # it waited for the holder, not for the five


def test_the_openapi_schema_describes_the_bodies_the_service_sends(client: TestClient):
    # Found by a chat-bot integration: /openapi.json declared FastAPI's {"detail": [...]} for
    # errors the service sends as {"error": "..."}, and no body for an answer.
    from rag_pipeline.service.schemas import (
        AnswerBody,
        CitationBody,
        QuotedSentenceBody,
        SessionBody,
        SessionStateBody,
        SignedOutBody,
    )

    def fields(model) -> set[str]:
        return set(model.model_json_schema()["properties"])

    body = client.post("/ask", json={"question": TIMEOUTS_QUESTION}).json()
    assert set(body) == fields(AnswerBody)
    assert set(body["citations"][0]) == fields(CitationBody)
    assert set(body["quoted_answer"][0]) == fields(QuotedSentenceBody)
    assert set(client.post("/session", json={"token": "x"}).json()) == fields(SessionBody)
    assert set(client.get("/session").json()) <= fields(SessionStateBody)
    assert set(client.delete("/session").json()) == fields(SignedOutBody)
    assert client.post("/ask", json={"question": ""}).json().keys() == {"error"}
    schema = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(schema)
    error = {"$ref": "#/components/schemas/ErrorBody"}
    assert all(operation["responses"][errors]["content"]["application/json"]["schema"] == error
               for operations in schema["paths"].values() for operation in operations.values()
               for errors in ("4XX", "5XX"))
    for method in ("get", "post"):
        assert schema["paths"]["/ask"][method]["responses"]["200"]["content"]["application/json"][
            "schema"] == {"$ref": "#/components/schemas/AnswerBody"}
