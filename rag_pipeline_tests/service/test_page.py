"""The page at ``/`` in a real headless Chromium: it answers with sources, section labels,
quotes and links to the exact place, and refuses clearly with the closest distance."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.app import create_app
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline.service.run import running_service
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder
from rag_pipeline_tests.service.browser import CHROMIUM, chromium_page, serve_in_thread

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"no Chromium at {CHROMIUM}: install the Debian package (`bash .ci/setup` runs "
           "`apt-get install -y chromium`)")

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> Iterator[str]:
    built: BuiltIndex = build_index(tmp_path_factory.mktemp("page"), hashed_embedder)
    with (running_service(Warehouse(built.data_dir), ServeSettings("header", hashed_embedder.spec.key),
                          lambda: hashed_embedder, poll_seconds=3600) as service,
          serve_in_thread(create_app(service)) as url):
        yield url


def test_the_page_answers_with_sources_and_links_to_the_quoted_place(base_url: str, tmp_path: Path):
    with chromium_page(tmp_path / "profile") as page:
        page.goto(base_url + "/")
        page.wait_for_selector("#served:has-text('passages')", timeout=TIMEOUT_MS)
        assert page.inner_text("#served").startswith("6 passages from 4 documents · header|")
        page.fill("#question", "how long before a network call times out")
        page.click("#ask-button")
        page.wait_for_selector("article.source", timeout=TIMEOUT_MS)
        sources = page.locator("article.source")
        assert sources.count() == 1
        assert sources.locator("h2").inner_text() == "[1] Configuring Frobnicator > Timeouts"
        assert sources.locator("blockquote").inner_text() == TIMEOUTS_PARAGRAPH
        assert "Also at guide/faq.md#char=49,139" in sources.inner_text()
        assert re.match(r"^1 source under cosine distance 0\.6 "
                        r"\(generation \d{8}T\d{6}Z-[0-9a-f]{8}, [0-9.]+ ms\)$", page.inner_text("#summary"))
        assert page.url == base_url + "/?q=how%20long%20before%20a%20network%20call%20times%20out"
        sources.locator("a.open").click()
        page.wait_for_selector("mark#quote", timeout=TIMEOUT_MS)
        digest = hashlib.sha256(TIMEOUTS_PARAGRAPH.encode()).hexdigest()[:16]
        assert page.url == base_url + f"/documents/guide/config.md?from=113&to=203&digest={digest}#quote"
        assert page.inner_text("mark#quote") == TIMEOUTS_PARAGRAPH
        assert page.locator("mark#quote").is_visible()


def test_a_name_with_a_bidirectional_override_is_shown_escaped(base_url: str, tmp_path: Path):
    """Found by an attack: a file named ``bidi\u202egnp.md`` read as "...md.png" on the page,
    and the override reversed the rest of its line ("#char=... · distance ...")."""
    body = {"question": "q", "answered": True, "threshold": 0.6, "generation": "g",
            "timings_ms": {"request": 1.0}, "quoted_answer": [], "citations": [{
                "index": 1, "document_id": "bidi\u202egnp.md", "locator_label": "Notes \u2067x",
                "fragment": "#char=0,5", "from": 0, "to": 5, "cosine_distance": 0.1,
                "quote": "hello", "url": "file:///x",
                "locations": ["bidi\u202egnp.md#char=0,5", "copy\u202e.md#char=1,6"]}]}
    with chromium_page(tmp_path / "profile") as page:
        page.goto(base_url + "/")
        page.wait_for_selector("#served:has-text('passages')", timeout=TIMEOUT_MS)
        page.evaluate("(body) => showAnswer(body)", body)
        source = page.locator("article.source")
        assert source.locator("h2").inner_text() == "[1] Notes \\u2067x"
        assert source.locator("p.meta").first.inner_text() == \
            "bidi\\u202egnp.md #char=0,5 · distance 0.100"
        assert "Also at copy\\u202e.md#char=1,6" in source.inner_text()


def test_the_page_refuses_with_the_closest_distance(base_url: str, tmp_path: Path):
    with chromium_page(tmp_path / "profile") as page:
        page.goto(base_url + "/?q=what%20is%20the%20capital%20of%20france")
        page.wait_for_selector("#refusal", timeout=TIMEOUT_MS)
        assert page.locator("article.source").count() == 0
        assert page.inner_text("#refusal h2") == "No answer"
        # The hashed stand-in puts install.md's Upgrading paragraph closest, at about 0.675.
        assert re.search(r"Nothing in the index is close enough to answer: the closest passage is at "
                         r"cosine distance 0\.675, and the cut is 0\.6\.", page.inner_text("#refusal"))


def test_the_page_shows_a_request_error_in_one_line(base_url: str, tmp_path: Path):
    with chromium_page(tmp_path / "profile") as page:
        page.goto(base_url + "/")
        page.fill("#question", "x" * 2000)
        page.evaluate("document.getElementById('question').value += 'y'")
        page.click("#ask-button")
        page.wait_for_selector("#error", timeout=TIMEOUT_MS)
        assert page.inner_text("#error") == (
            "question: the question has 2001 characters; at most 2000 are accepted")


def test_a_service_that_cannot_be_reached_is_said_in_words_not_as_a_script_error(base_url: str,
                                                                               tmp_path: Path):
    """Found by a user's trial: with the service stopped the page showed "The service did not
    answer: TypeError: Failed to fetch"."""
    with chromium_page(tmp_path / "profile") as page:
        page.goto(base_url + "/")
        page.wait_for_selector("#served:has-text('passages')", timeout=TIMEOUT_MS)
        page.route("**/ask*", lambda route: route.abort("connectionrefused"))
        page.fill("#question", "how is the index built")
        page.click("#ask-button")
        page.wait_for_selector("#error", timeout=TIMEOUT_MS)
        assert page.inner_text("#error") == (
            "The service could not be reached (it may be stopped or restarting, or the network is "
            "down): try again in a moment.")


def test_a_question_pasted_past_the_limit_is_said_to_be_cut(base_url: str, tmp_path: Path):
    """Found by a user's trial: the browser cut a pasted question at 2,000 characters without a
    word."""
    with chromium_page(tmp_path / "profile") as page:
        page.goto(base_url + "/")
        page.fill("#question", "who approved the budget")
        assert page.locator("#question-note").is_hidden()
        page.focus("#question")
        page.keyboard.insert_text("x" * 2500)  # as a paste inserts it
        assert len(page.input_value("#question")) == 2000
        assert page.inner_text("#question-note") == ("A question holds at most 2,000 characters: "
                                                     "the rest was cut.")
        page.fill("#question", "a short one")
        assert page.locator("#question-note").is_hidden()


def test_the_document_view_never_covers_the_quote_with_its_sticky_header(tmp_path: Path):
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse

    from rag_pipeline.service.app import document_view

    # A long document whose title wraps over three lines (a tall header) and a quote deep inside.
    title = "The Frobnicator operations manual: installing, configuring, upgrading and " \
            "troubleshooting every part of a deployment across many machines"
    text = "".join(f"Paragraph {i}: nothing of interest here, just filler text.\n\n"
                   for i in range(400))
    start = text.index("Paragraph 250:")
    end = start + len("Paragraph 250: nothing of interest here, just filler text.")
    app = FastAPI()
    app.get("/doc", response_class=HTMLResponse)(
        lambda width=0: document_view(title, "manual.md", text, start, end))
    with serve_in_thread(app) as url, chromium_page(tmp_path / "profile") as page:
        for width in (1100, 420):
            page.set_viewport_size({"width": width, "height": 700})
            page.goto(url + f"/doc?width={width}#quote")
            page.wait_for_selector("mark#quote", timeout=TIMEOUT_MS)
            page.wait_for_function("document.readyState === 'complete'", timeout=TIMEOUT_MS)
            page.wait_for_timeout(200)
            header = page.locator("header").bounding_box()
            mark = page.locator("mark#quote").bounding_box()
            assert header["height"] > 100  # the title wraps: a tall header
            # The quote starts below the header's bottom edge and inside the window.
            assert header["y"] + header["height"] <= mark["y"] < 700, (width, header, mark)


WORDS_WHOLE = """[...document.querySelectorAll(SELECTOR)].every(cell => [...cell.childNodes]
  .filter(node => node.nodeType === Node.TEXT_NODE).every(node => {
    for (const word of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      if (range.getClientRects().length > 1) return false;
    }
    return true;
  }))"""
"""Whether every word of the cells ``SELECTOR`` names is on one line (not broken in two)."""


def test_a_wide_table_in_a_markdown_view_scrolls_on_a_phone_with_its_words_whole(tmp_path: Path):
    # Found by a phone user: cells of a 12-column table shrank to one or two letters a line
    # ("Column header number 0" over 19 lines), so the table hardly scrolled.
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse

    from rag_pipeline.core.index.store import DocumentInfo
    from rag_pipeline.core.ingest.formats import format_for
    from rag_pipeline.service.views import ViewRequest, render_document

    source = tmp_path / "rates.md"
    header = " | ".join(f"Column header number {i}" for i in range(12))
    row = " | ".join(f"cell value {i} wide" for i in range(12))
    source.write_text(f"# Rates\n\n| {header} |\n|{'---|' * 12}\n| {row} |\n", encoding="utf-8")
    fmt = format_for(source)
    extracted = fmt.extract(source.read_bytes(), "rates.md")
    info = DocumentInfo("rates.md", "Rates", str(source), fmt.name, extracted.anchors,
                        extracted.tables)
    start = extracted.canonical_text.index("cell value 0")
    app = FastAPI()
    app.get("/doc", response_class=HTMLResponse)(lambda: render_document(
        ViewRequest(info, extracted.canonical_text, start, start + 12), None))
    with serve_in_thread(app) as url, chromium_page(tmp_path / "profile") as page:
        page.set_viewport_size({"width": 360, "height": 740})
        page.goto(url + "/doc")
        page.wait_for_selector("article.markup table", timeout=TIMEOUT_MS)
        cells = "article.markup th, article.markup td"
        assert page.locator(cells).count() == 24
        assert page.evaluate(WORDS_WHOLE.replace("SELECTOR", repr(cells)))
        table = page.locator("article.markup table")
        assert table.evaluate("t => t.scrollWidth > 2 * t.clientWidth")
        # The page itself does not scroll sideways: the table does.
        assert page.evaluate("document.documentElement.scrollWidth") == 360


def test_the_api_docs_page_works_offline_in_chromium(base_url: str, tmp_path: Path):
    requested: list[str] = []
    with chromium_page(tmp_path / "profile") as page:
        def only_loopback(route) -> None:
            # Offline: anything not from this server fails, as it would without a network.
            requested.append(route.request.url)
            if route.request.url.startswith(base_url + "/"):
                route.continue_()
            else:
                route.abort("internetdisconnected")

        page.context.route("**/*", only_loopback)
        page.goto(base_url + "/docs")
        page.wait_for_selector("table tbody tr", timeout=TIMEOUT_MS)
        rows = [page.locator("tbody tr").nth(i).inner_text().split("\t")[:2]
                for i in range(page.locator("tbody tr").count())]
        assert rows == [["POST", "/ask"], ["GET", "/ask"], ["GET", "/health"], ["GET", "/status"],
                        ["GET", "/documents/{document_id}"], ["GET", "/page-images/{document_id}"],
                        ["GET", "/originals/{document_id}"], ["GET", "/status/documents"],
                        ["POST", "/feedback"], ["GET", "/reports/{model_key}"],
                        ["GET", "/session"], ["POST", "/session"], ["DELETE", "/session"]]
        assert page.inner_text("h1") == "rag-pipeline query service"
        page.click("a[href='/openapi.json']")
        page.wait_for_url(base_url + "/openapi.json", timeout=TIMEOUT_MS)
        assert json.loads(page.inner_text("body"))["info"]["title"] == "rag-pipeline query service"
    # The page fetched nothing but itself and the schema (no favicon request leaves either).
    assert all(url.startswith(base_url + "/") for url in requested), requested
    assert requested[:1] == [base_url + "/docs"]


def ask_with_the_answer_rewritten(page, base_url: str, question: str, rewrite) -> None:
    """Asks on the page while `rewrite` edits the service's real JSON answer in flight."""
    page.goto(base_url + "/")
    page.wait_for_selector("#served:has-text('passages')", timeout=TIMEOUT_MS)

    def rewritten(route) -> None:
        body = json.loads(route.fetch().text())
        rewrite(body)
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/ask", rewritten)
    page.fill("#question", question)
    page.click("#ask-button")


def test_a_source_shows_its_tables_columns_and_what_its_document_left_out(base_url: str, tmp_path: Path):
    # The page as it renders an answer's JSON: a quote of table rows without their header row,
    # from a document whose reading left a comment out.
    def with_header_and_left_out(body: dict) -> None:
        body["citations"][0].update(table_header="City tier | Per diem | Hotel cap",
                                    left_out=["1 comment(s) left out (reviewers' remarks)"])

    with chromium_page(tmp_path / "profile") as page:
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      with_header_and_left_out)
        page.wait_for_selector("article.source", timeout=TIMEOUT_MS)
        source = page.locator("article.source")
        assert source.locator("p.columns").inner_text() == (
            "Table columns: City tier | Per diem | Hotel cap")
        assert source.locator("p.left-out").inner_text() == (
            "Left out of this document when it was read: 1 comment(s) left out (reviewers' remarks)")


def test_a_markdown_quote_is_shown_without_its_markup(base_url: str, tmp_path: Path):
    # Found by a team user: the page showed "**seventeen**" and "[timeout key](config.md)" as
    # typed in the Markdown file.
    def with_markup(body: dict) -> None:
        body["citations"][0].update(quote="Gives up after **17 s**.", shown="Gives up after 17 s.")
        body["quoted_answer"] = [{"text": "after **17 s**", "shown": "after 17 s", "citation": 1,
                                  "from": 120, "to": 134, "fragment": "#char=120,134"}]

    with chromium_page(tmp_path / "profile") as page:
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      with_markup)
        page.wait_for_selector("article.source", timeout=TIMEOUT_MS)
        assert page.locator("article.source blockquote").inner_text() == "Gives up after 17 s."
        assert page.locator("#quoted li q").inner_text() == "after 17 s"


def test_a_quoted_table_row_shows_its_columns_under_it(base_url: str, tmp_path: Path):
    """Found by a team lead: "| gw-us-03 | us-east | 32 | 128 GiB |" alone did not say that 32
    is the host's cores."""
    def with_a_row(body: dict) -> None:
        body["quoted_answer"] = [{"text": "| gw-us-03 | us-east | 32 | 128 GiB |",
                                  "shown": "| gw-us-03 | us-east | 32 | 128 GiB |", "citation": 1,
                                  "from": 120, "to": 157, "fragment": "#char=120,157",
                                  "columns": "| host | region | cores | memory |"}]

    with chromium_page(tmp_path / "profile") as page:
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      with_a_row)
        page.wait_for_selector("#quoted li", timeout=TIMEOUT_MS)
        assert page.locator("#quoted li div.columns").inner_text() == (
            "Table columns: | host | region | cores | memory |")


def test_a_source_kept_over_the_cut_for_a_named_code_is_not_counted_under_it(base_url: str,
                                                                             tmp_path: Path):
    """Found by a new user: "1 source under cosine distance 0.6" above a source at 0.686, kept
    for holding the code the question names, with nothing saying why."""
    def kept_for_its_code(body: dict) -> None:
        body["citations"][0].update(cosine_distance=0.686, identifier="build-07")

    with chromium_page(tmp_path / "profile") as page:
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      kept_for_its_code)
        page.wait_for_selector("article.source", timeout=TIMEOUT_MS)
        assert re.match(r"^1 source over cosine distance 0\.6, kept for holding a code the question "
                        r"names \(generation ", page.inner_text("#summary"))
        assert page.locator("article.source p.kept").inner_text() == (
            "Kept over the cut: it holds build-07 as the question names it.")
    # Found by an attack: a distance rounded up to the cut, with no code, was counted over it.
    with chromium_page(tmp_path / "profile-rounded") as page:
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      lambda body: body["citations"][0].update(cosine_distance=0.6))
        page.wait_for_selector("article.source", timeout=TIMEOUT_MS)
        assert page.inner_text("#summary").startswith("1 source under cosine distance 0.6 (")
        assert page.locator("article.source p.kept").count() == 0


def test_an_answer_from_a_new_generation_refreshes_the_counts_and_failed_documents(
        base_url: str, tmp_path: Path):
    """Found by a new user: after an index run, an answer of the new generation sat under the
    old generation's counts and an empty failed-documents box."""
    newer = "20991231T000000Z-0123abcd"
    statuses = []

    def of_the_newer_generation(route) -> None:
        body = json.loads(route.fetch().text())
        statuses.append(body["generation"])
        if len(statuses) > 1:
            body.update(generation=newer, chunks=7)
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    def failed_since(route) -> None:
        body = json.loads(route.fetch().text())
        if len(statuses) > 1:
            body["failed"] = [{"document_id": "broken.pdf", "reason": "not a PDF"}]
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    with chromium_page(tmp_path / "profile") as page:
        page.route("**/status", of_the_newer_generation)
        page.route("**/status/documents", failed_since)
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      lambda body: body.update(generation=newer))
        page.wait_for_selector("#served:has-text('7 passages')", timeout=TIMEOUT_MS)
        assert page.inner_text("#served").endswith(f" · generation {newer}")
        page.wait_for_selector("#health:has-text('broken.pdf')", timeout=TIMEOUT_MS)
        assert page.inner_text("#health li") == "broken.pdf: not a PDF"
        assert len(statuses) == 2


@pytest.mark.parametrize(("question", "answered", "code", "held", "shown", "said"), [
    ("what is the capital of france", False, "INV-2026-9999", "", "#refusal p",
     "No passage holds INV-2026-9999, which the question names."),
    ("how long before a network call times out", True, "INC-2026-099", "INC-2026-038", "#unheld",
     "No passage holds INC-2026-099, which the question names: the sources below are about the "
     "other records it names."),
    # Found by a support team's trial: a host one digit off a real one was answered with the
    # real one's passage and nothing said so.
    ("how long before a network call times out", True, "gw-eu-09", "", "#unheld",
     "No passage holds gw-eu-09, which the question names: the sources below hold others of its "
     "form, not it."),
])
def test_a_code_no_passage_holds_is_named_in_a_refusal_and_beside_an_answer(
        base_url: str, tmp_path: Path, question: str, answered: bool, code: str, held: str,
        shown: str, said: str):
    def naming_an_unheld_code(body: dict) -> None:
        assert body["answered"] is answered
        body["unheld_identifiers"] = [code]
        for citation in body["citations"][:1]:
            citation["identifier"] = held

    with chromium_page(tmp_path / "profile") as page:
        ask_with_the_answer_rewritten(page, base_url, question, naming_an_unheld_code)
        page.wait_for_selector(shown, timeout=TIMEOUT_MS)
        assert page.locator(shown).first.inner_text() == said


def test_a_source_links_its_address_only_when_the_service_has_a_base_url(base_url: str,
                                                                        tmp_path: Path):
    """Found by a user's trial: without a base URL every source card showed the file's path on
    the server (``file:///...``), which no reader's browser opens."""
    with chromium_page(tmp_path / "profile") as page:
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      lambda body: None)
        page.wait_for_selector("article.source", timeout=TIMEOUT_MS)
        source = page.locator("article.source")
        assert "file://" not in source.inner_text() and "Source:" not in source.inner_text()
        assert source.locator("a").count() == 1  # "Open at the quoted place" alone

    def with_a_base_url(body: dict) -> None:
        assert body["citations"][0]["url"].startswith("file:///")
        body["citations"][0]["url"] = "https://docs.example.org/guide/config.md#char=113,203"

    with chromium_page(tmp_path / "profile2") as page:
        ask_with_the_answer_rewritten(page, base_url, "how long before a network call times out",
                                      with_a_base_url)
        page.wait_for_selector("article.source a.source-url", timeout=TIMEOUT_MS)
        link = page.locator("article.source a.source-url")
        assert link.get_attribute("href") == "https://docs.example.org/guide/config.md#char=113,203"
        assert page.locator("article.source p.meta").filter(has_text="Source:").inner_text() == (
            "Source: https://docs.example.org/guide/config.md#char=113,203")


def test_a_script_that_reached_a_view_runs_nowhere_and_the_views_own_script_runs(tmp_path: Path):
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse

    from rag_pipeline.service.app import PrivateResponses
    from rag_pipeline.service.views import View, page_html

    # A view whose body a sanitiser let through with a script, a handler and an image from
    # elsewhere: the content policy every response carries stops all three.
    body = ('<p>before</p><mark id="quote">the quote</mark><script>document.title = "script ran"'
            '</script><img src="/nothing" onerror="document.title = \'handler ran\'">'
            '<img id="far" src="http://192.0.2.1/pixel.png">')
    app = FastAPI()
    app.get("/doc", response_class=HTMLResponse)(
        lambda: page_html("A manual", "manual.md", View("section 2", body, "markup"), None))
    blocked: list[str] = []
    with serve_in_thread(PrivateResponses(app)) as url, chromium_page(tmp_path / "profile") as page:
        page.on("console", lambda message: blocked.append(message.text)
                if "Content Security Policy" in message.text else None)
        page.goto(url + "/doc#quote")
        page.wait_for_function("document.readyState === 'complete'", timeout=TIMEOUT_MS)
        assert page.title() == "A manual · section 2"
        # The view's own script ran: it gave the quote the keyboard's focus.
        assert page.evaluate("document.activeElement.id") == "quote"
        assert page.evaluate("document.getElementById('far').naturalWidth") == 0
    assert [text.split(" violates ")[0] for text in blocked] == [
        "Executing inline script", "Executing inline event handler",
        "Loading the image 'http://192.0.2.1/pixel.png'"]
