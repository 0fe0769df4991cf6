from __future__ import annotations

import json
import socket

import pytest

from rag_pipeline.core.answer.citations import Citation
from rag_pipeline.core.answer.generation import (
    CheckedAnswer,
    GenerationError,
    GeneratorSettings,
    check_answer,
    generate,
    render_answer,
)
from rag_pipeline_tests.core.conftest import TIMEOUT_S, FakeChatServer, chat_reply

EVIL_ANSWER = "[1] [7] see https://evil.example/x and [docs](http://a.b/c)"



def citation(index: int, name: str, label: str, start: int, end: int) -> Citation:
    fragment = f"#char={start},{end}"
    return Citation(index=index, document_id=f"doc-{index}", document_name=name, locator_label=label,
                    fragment=fragment, start=start, end=end, quote="Run the upgrade command twice.",
                    cosine_distance=0.25, url=f"file:///corpus/{name}{fragment}")


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_generate_posts_the_chat_request_and_returns_the_message(chat_server: FakeChatServer) -> None:
    chat_server.reply = chat_reply("Run it twice [1].")
    settings = GeneratorSettings(base_url=chat_server.base_url + "/", model="tiny-chat", api_key="sk-test",
                                 timeout_s=TIMEOUT_S, temperature=0.3, max_tokens=64)

    text = generate("How do I upgrade?", settings)

    assert text == "Run it twice [1]."
    assert len(chat_server.received) == 1
    request = chat_server.received[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert json.loads(request.body) == {
        "model": "tiny-chat",
        "messages": [{"role": "user", "content": "How do I upgrade?"}],
        "temperature": 0.3,
        "max_tokens": 64,
    }
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Authorization"] == "Bearer sk-test"


def test_generate_sends_no_authorization_without_api_key(chat_server: FakeChatServer) -> None:
    chat_server.reply = chat_reply("ok")
    settings = GeneratorSettings(base_url=chat_server.base_url, model="tiny-chat", timeout_s=TIMEOUT_S)

    assert generate("q", settings) == "ok"
    request = chat_server.received[0]
    assert "Authorization" not in request.headers
    assert json.loads(request.body) == {
        "model": "tiny-chat",
        "messages": [{"role": "user", "content": "q"}],
        "temperature": 0.0,
        "max_tokens": 512,
    }


def test_served_answer_is_checked_and_rendered_with_server_citations(chat_server: FakeChatServer) -> None:
    chat_server.reply = chat_reply(EVIL_ANSWER)
    settings = GeneratorSettings(base_url=chat_server.base_url, model="tiny-chat", timeout_s=TIMEOUT_S)
    citations = [citation(1, "install.md", "Installing Frobnicator › Upgrading", 80, 190)]

    raw = generate("How do I upgrade?", settings)
    checked = check_answer(raw, n_sources=len(citations))

    assert raw == EVIL_ANSWER
    assert checked == CheckedAnswer(text="[1] [7] see and docs", cited=(1,), unknown_citations=(7,),
                                    removed_urls=("https://evil.example/x", "http://a.b/c"))
    assert render_answer(checked, citations).split("\n") == [
        "[1] [7] see and docs",
        "",
        "Warning: the answer cites [7], which is not among the sources below.",
        "Sources:",
        "[1] install.md — Installing Frobnicator › Upgrading — file:///corpus/install.md#char=80,190",
    ]


def test_http_500_raises_generation_error_with_status_and_body(chat_server: FakeChatServer) -> None:
    chat_server.status = 500
    chat_server.reply = b'{"error": "model crashed"}'
    settings = GeneratorSettings(base_url=chat_server.base_url, model="tiny-chat", timeout_s=TIMEOUT_S)

    with pytest.raises(GenerationError, match=r"HTTP 500 .*model crashed"):
        generate("q", settings)


def test_connection_refused_raises_generation_error() -> None:
    settings = GeneratorSettings(base_url=f"http://127.0.0.1:{closed_port()}/v1", model="tiny-chat",
                                 timeout_s=TIMEOUT_S)

    with pytest.raises(GenerationError, match="refused"):
        generate("q", settings)


def test_slow_server_raises_generation_error_after_timeout(chat_server: FakeChatServer) -> None:
    chat_server.hold = True
    chat_server.reply = chat_reply("too late")
    settings = GeneratorSettings(base_url=chat_server.base_url, model="tiny-chat", timeout_s=0.2)

    with pytest.raises(GenerationError, match=r"within 0\.2 s"):
        generate("q", settings)


@pytest.mark.parametrize(("reply", "message"), [
    (b"<html>not json</html>", "malformed JSON"),
    (b'{"choices": []}', r"without choices\[0\]\.message\.content"),
    (chat_reply(None), "non-text"),
    (b'{"error": {"message": "unknown model"}}', "unknown model"),
])
def test_reply_that_is_not_a_chat_answer_raises_generation_error(
        chat_server: FakeChatServer, reply: bytes, message: str) -> None:
    chat_server.reply = reply
    settings = GeneratorSettings(base_url=chat_server.base_url, model="tiny-chat", timeout_s=TIMEOUT_S)

    with pytest.raises(GenerationError, match=message):
        generate("q", settings)


def test_a_reply_over_max_reply_bytes_is_refused(chat_server: FakeChatServer) -> None:
    chat_server.reply = chat_reply("x" * 200)
    settings = GeneratorSettings(base_url=chat_server.base_url, model="tiny-chat",
                                 timeout_s=TIMEOUT_S, max_reply_bytes=100)
    with pytest.raises(GenerationError) as caught:
        generate("q", settings)
    assert str(caught.value) == (f"{chat_server.base_url}/chat/completions answered more than "
                                 "100 bytes (max_reply_bytes): refused")


@pytest.mark.parametrize(("overrides", "message"), [
    ({"base_url": "127.0.0.1:8000/v1"}, "base_url"),
    ({"base_url": "http://h:99999/v1"}, "base_url has an invalid port"),
    ({"max_reply_bytes": 0}, "max_reply_bytes"),
    ({"model": ""}, "model"),
    ({"timeout_s": 0.0}, "timeout_s"),
    ({"temperature": -0.1}, "temperature"),
    ({"max_tokens": 0}, "max_tokens"),
])
def test_settings_reject_unusable_values(overrides: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"base_url": "http://127.0.0.1:8000/v1", "model": "tiny-chat", **overrides}
    with pytest.raises(ValueError, match=message):
        GeneratorSettings(**values)  # type: ignore[arg-type]


def test_settings_endpoint_strips_trailing_slashes() -> None:
    settings = GeneratorSettings(base_url="http://127.0.0.1:8000/v1//", model="tiny-chat")
    assert settings.endpoint == "http://127.0.0.1:8000/v1/chat/completions"


@pytest.mark.parametrize(("raw", "n_sources", "expected"), [
    ("Upgrade twice [1, 2] and clear caches [2][3].", 3,
     CheckedAnswer("Upgrade twice [1, 2] and clear caches [2][3].", (1, 2, 3), (), ())),
    ("No sources here [0] [4].", 3, CheckedAnswer("No sources here [0] [4].", (), (0, 4), ())),
    ("Nothing cited.", 0, CheckedAnswer("Nothing cited.", (), (), ())),
    ("Every marker is unknown without sources [1].", 0,
     CheckedAnswer("Every marker is unknown without sources [1].", (), (1,), ())),
    # A Markdown link whose label is a marker keeps the marker.
    ("See [2](https://x.example/a), then [1].", 2,
     CheckedAnswer("See [2], then [1].", (1, 2), (), ("https://x.example/a",))),
    # Punctuation after a URL stays; www. and file:// links go too; duplicates are listed once.
    ("Read www.evil.example/a. Or file:///etc/passwd, or www.evil.example/a [1]", 1,
     CheckedAnswer("Read. Or, or [1]", (1,), (), ("www.evil.example/a", "file:///etc/passwd"))),
    # Line edges lose the spaces, indentation stays; balanced parentheses belong to the URL.
    ("https://a.example/x is first\n  - item <https://b.example/y> here\n"
     "  https://c.example/Foo_(bar) [1]", 1,
     CheckedAnswer("is first\n  - item here\n  [1]", (1,), (),
                   ("https://a.example/x", "https://b.example/y", "https://c.example/Foo_(bar)"))),
    # Images keep their alt text; a marker glued to a URL survives as a marker.
    ('![diagram](https://img.example/d.png "title") shows it https://u.example/p[1]', 1,
     CheckedAnswer("diagram shows it [1]", (1,), (), ("https://img.example/d.png", "https://u.example/p"))),
    # HTML links keep their text; the href is the removed URL.
    ('See <a href="https://evil.example/x">the docs</a> now [1].', 1,
     CheckedAnswer("See the docs now [1].", (1,), (), ("https://evil.example/x",))),
    # Schemes without "//": javascript: (any case), data:, mailto:, file:, and ftp://.
    ("Click javascript:alert(1) or JavaScript:void(0) [1]", 1,
     CheckedAnswer("Click or [1]", (1,), (), ("javascript:alert(1)", "JavaScript:void(0)"))),
    ("Data: see data:text/html;base64,PHNjcmlwdD4= and ftp://f.example/a", 0,
     CheckedAnswer("Data: see and", (), (), ("data:text/html;base64,PHNjcmlwdD4=", "ftp://f.example/a"))),
    ("Mail mailto:a@b.example, file:/etc/passwd and <foo:bar> also <ssh://h>.", 0,
     CheckedAnswer("Mail, and also .", (), (), ("mailto:a@b.example", "file:/etc/passwd", "foo:bar", "ssh://h"))),
    # Prose colons are not schemes; "metadata:" is a word, not the data: scheme.
    ("Ratio 3:4, Note: fine, metadata:x, C:\\path at 12:30.", 0,
     CheckedAnswer("Ratio 3:4, Note: fine, metadata:x, C:\\path at 12:30.", (), (), ())),
    # Embedding tags go whole, with their closing tags; harmless tags stay.
    ('<img src=x onerror=alert(1)> pic <iframe src="//evil"></iframe> <b>end</b>', 0,
     CheckedAnswer("pic <b>end</b>", (), (), ("x", "//evil"))),
    # A Markdown link whose target has parentheses goes whole.
    ("[x](javascript:alert(1)) and [1](data:x)", 1,
     CheckedAnswer("x and [1]", (1,), (), ("javascript:alert(1)", "data:x"))),
])
def test_check_answer(raw: str, n_sources: int, expected: CheckedAnswer) -> None:
    assert check_answer(raw, n_sources) == expected


def test_check_answer_rejects_negative_source_count() -> None:
    with pytest.raises(ValueError, match="n_sources"):
        check_answer("text", -1)


def test_render_answer_without_unknown_markers_lists_every_source() -> None:
    citations = [citation(1, "install.md", "Upgrading", 80, 190), citation(2, "config.md", "Timeouts", 0, 40)]
    checked = check_answer("Upgrade twice [1].\n", n_sources=2)

    assert render_answer(checked, citations).split("\n") == [
        "Upgrade twice [1].",
        "",
        "Sources:",
        "[1] install.md — Upgrading — file:///corpus/install.md#char=80,190",
        "[2] config.md — Timeouts — file:///corpus/config.md#char=0,40",
    ]


def test_render_answer_warns_about_several_unknown_markers_and_no_sources() -> None:
    checked = check_answer("Claims [3] and [5].", n_sources=0)

    assert render_answer(checked, []).split("\n") == [
        "Claims [3] and [5].",
        "",
        "Warning: the answer cites [3] [5], which are not among the sources below.",
        "Sources: none",
    ]


def test_render_answer_refuses_a_cited_index_no_citation_carries() -> None:
    checked = check_answer("Cites [2].", n_sources=2)

    with pytest.raises(ValueError, match=r"\[2\]"):
        render_answer(checked, [citation(1, "install.md", "Upgrading", 0, 10)])


def test_an_endpoint_that_trickles_its_reply_ends_at_the_total_timeout() -> None:
    # Planted: a server that sends a byte every 50 ms, forever (each read alone is quick, so a
    # per-read timeout would never fire).
    import threading
    import time

    stop = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def trickle() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 10_000:
                if stop.is_set():
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.05)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    settings = GeneratorSettings(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
                                 model="tiny-chat", timeout_s=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(GenerationError, match=r"^no answer from http://127\.0\.0\.1:\d+/v1/chat/"
                                                  r"completions within 0\.5 s$"):
            generate("q", settings)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
    assert 0.5 <= elapsed < 1.5
