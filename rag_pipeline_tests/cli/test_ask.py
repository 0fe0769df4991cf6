"""``ask`` and ``serve``: cited answers and refusals over the bundled corpus (slow), every bad
argument refused in one line before any work, options taken from the core, and printed answers
that never carry control characters."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import click
import duckdb
import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline_tests.cli.invoke import CHUNKERS, one_line_failure, run

ON_TOPIC = "what happens to the loop variable when a for loop is terminated by break"
OFF_TOPIC = "what is the capital of france"

NOT_BUILT = ("error: no index built yet in the data folder {tmp_path}: run `rag-pipeline index` "
             "first, or name the configuration that built it (--config, as `init` printed it) or "
             "its data folder (--data-dir)")


@pytest.mark.slow
def test_ask_json_cites_exact_slices_of_the_canonical_text(bundled_data_dir: Path):
    code, output = run("--data-dir", str(bundled_data_dir), "ask", ON_TOPIC, "--json")
    assert code == 0, output
    answer = json.loads(output)
    assert (answer["answered"], answer["threshold"], answer["partition"]) == (
        True, 0.6, "header|all-MiniLM-L6-v2@53aa5117")
    assert 1 <= len(answer["citations"]) <= 4
    with duckdb.connect(str(bundled_data_dir / "rag.duckdb"), read_only=True) as con:
        canonical = dict(con.execute("select document_id, canonical_text from documents").fetchall())
    for citation in answer["citations"]:
        text = canonical[citation["document_id"]]
        assert citation["quote"] == text[citation["from"]:citation["to"]]
        assert citation["fragment"] == f"#char={citation['from']},{citation['to']}"
        assert citation["url"].endswith(f"/{citation['document_id']}{citation['fragment']}")
        assert not citation["quote"].startswith("[")
        assert citation["cosine_distance"] < 0.6
    # The needle of gold line q03 is in the first two sources' documents.
    assert "If a \"for\" loop is terminated by \"break\", the loop control target\nkeeps its " \
           "current value." in "".join(c["quote"] for c in answer["citations"])
    assert answer["prompt"].startswith("Sources:\n\n[1] ")


@pytest.mark.slow
def test_ask_refuses_off_topic_questions_and_names_the_cut(bundled_data_dir: Path):
    code, output = run("--data-dir", str(bundled_data_dir), "ask", OFF_TOPIC, "--json")
    assert code == 1, output  # a script tells a refusal from an answer (0) and an error (2)
    answer = json.loads(output)
    assert (answer["answered"], answer["citations"], answer["prompt"]) == (False, [], None)
    assert answer["reason"].startswith(
        f'NO ANSWER: nothing under cosine distance 0.6 for "{OFF_TOPIC}" (closest: ')
    code, output = run("--data-dir", str(bundled_data_dir), "ask", OFF_TOPIC)
    assert code == 1, output
    # The rerank line only when --rerank is given.
    assert output.splitlines()[0] == "partition: header|all-MiniLM-L6-v2@53aa5117   cut: 0.6"


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), [
    (["ask", "   "], "error: the question is empty"),
    (["ask", "x", "--chunker", "blind"],
     "error: no published index for chunker 'blind'; published: header"),
    (["ask", "x", "--model", "other@00000000"],
     "error: model 'other@00000000' is not declared; declared: all-MiniLM-L6-v2@53aa5117, "
     "all-MiniLM-L6-v2-int8@b4e41131, all-MiniLM-L6-v2-adapted@5d7e0187"),
])
def test_ask_errors_are_one_clear_line(bundled_data_dir: Path, args: list[str], message: str):
    code, output = run("--data-dir", str(bundled_data_dir), *args)
    assert (code, output.strip()) == (2, message)


@pytest.mark.slow
def test_a_bad_rerank_folder_and_an_unreachable_endpoint_are_one_line(bundled_data_dir: Path, tmp_path: Path):
    # Planted: a folder that passes the file checks but holds no loadable model.
    folder = tmp_path / "ce"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"garbage")
    code, output = run("--data-dir", str(bundled_data_dir), "ask", ON_TOPIC, "--rerank", str(folder))
    assert (code, output) == (2, f"error: --rerank '{folder}' could not be loaded: ValueError: "
                                 f"Unrecognized model in {folder}. Should have a `model_type` key "
                                 "in its config.json.\n")
    # Planted: a port nothing listens on (bound, then closed).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    code, output = run("--data-dir", str(bundled_data_dir), "ask", ON_TOPIC, "--generate-url", url,
                        "--generate-model", "any")
    assert (code, output) == (
        2, f"error: connection to {url}/chat/completions refused: is the server running?\n")


@pytest.mark.slow
def test_ask_and_status_before_any_index_is_built(tmp_path: Path):
    for args in (["ask", "anything"], ["status"]):
        code, output = run("--data-dir", str(tmp_path), *args)
        assert (code, output.strip()) == (2, NOT_BUILT.format(tmp_path=tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), [
    (["serve", "--port", "0"], NOT_BUILT),
    (["serve", "--threshold", "5"],
     "error: --cut/--threshold must be a finite cosine distance in [0, 2], got 5.0"),
    (["serve", "--base-url", "javascript:alert(1)"],
     "error: --base-url must be an http(s) or file URL, got 'javascript:alert(1)'"),
])
def test_serve_errors_are_one_clear_line(tmp_path: Path, args: list[str], message: str):
    code, output = run("--data-dir", str(tmp_path), *args)
    assert (code, output.strip()) == (2, message.format(tmp_path=tmp_path))


@pytest.mark.slow
def test_serve_on_a_busy_port_fails_before_loading_anything(tmp_path: Path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # No index either: the port is checked first, so the answer comes at once.
        code, output = run("--data-dir", str(tmp_path), "serve", "--port", str(port))
    assert (code, output.strip()) == (
        2, f"error: cannot listen on 127.0.0.1:{port}: Address already in use")


@pytest.mark.parametrize(("args", "message"), [
    (["--threshold", "nan"], "--cut/--threshold must be a finite cosine distance in [0, 2], got nan"),
    (["--threshold", "inf"], "--cut/--threshold must be a finite cosine distance in [0, 2], got inf"),
    (["--threshold", "-1"], "--cut/--threshold must be a finite cosine distance in [0, 2], got -1.0"),
    (["--threshold", "5"], "--cut/--threshold must be a finite cosine distance in [0, 2], got 5.0"),
    (["--chunker", "../x"], f"unknown chunker '../x'; declared: {CHUNKERS}"),
    (["--base-url", "javascript:alert(1)"],
     "--base-url must be an http(s) or file URL, got 'javascript:alert(1)'"),
    (["--base-url", "http://"], "--base-url must name a host, got 'http://'"),
    (["--generate-url", "ftp://x", "--generate-model", "m"], "--generate-url must be an http(s) URL, got 'ftp://x'"),
    (["--generate-url", "http://[::1", "--generate-model", "m"],
     "--generate-url is not a valid URL (Invalid IPv6 URL), got 'http://[::1'"),
    (["--generate-url", "http://h:99999/v1", "--generate-model", "m"],
     "--generate-url has an invalid port (Port out of range 0-65535), got 'http://h:99999/v1'"),
    (["--rerank", "/nonexistent/ce"], "--rerank '/nonexistent/ce' is not a folder"),
    (["--k", "0"], "Invalid value for '--k': 0 is not in the range 1<=x<=20."),
    (["--retriever", "magic"],
     "Invalid value for '--retriever': 'magic' is not one of 'dense', 'bm25', 'hybrid'."),
])
def test_ask_refuses_each_bad_argument_in_one_line(tmp_path: Path, args, message):
    assert one_line_failure("--data-dir", str(tmp_path), "ask", "a question", *args) == (
        2, f"error: {message}")


def test_a_rerank_folder_that_is_not_a_model_is_refused(tmp_path: Path):
    (tmp_path / "ce").mkdir()
    assert one_line_failure("--data-dir", str(tmp_path), "ask", "q", "--rerank", str(tmp_path / "ce")) == (
        2, f"error: --rerank '{tmp_path / 'ce'}' holds no config.json: not a model folder")


def test_model_keys_must_be_declared(tmp_path: Path):
    code, line = one_line_failure("--data-dir", str(tmp_path), "ask", "q", "--model", "../m")
    assert (code, line.startswith("error: model '../m' is not declared; declared: all-MiniLM")) == (2, True)


def test_an_empty_question_and_a_missing_index_name_their_cause(tmp_path: Path):
    assert one_line_failure("--data-dir", str(tmp_path), "ask", "  ") == (2, "error: the question is empty")
    assert one_line_failure("--data-dir", str(tmp_path), "status") == (
        2, NOT_BUILT.format(tmp_path=tmp_path))


def _hostile_answer():
    from rag_pipeline.core.answer.answer import Answer
    from rag_pipeline.core.answer.citations import Citation

    # Planted: a colour and a window title in the quote, a C1 CSI in the section, an RTL
    # override in the document id, and a screen clear in the generated answer.
    citation = Citation(
        index=1, document_id="doc\u202e.md", document_name="Doc", locator_label="Doc > S",
        fragment="#char=0,20", start=0, end=20, quote="red \x1b[31mtext\x1b]0;pwned\x07",
        cosine_distance=0.2, url="file:///c/doc\u202e.md#char=0,20", section="S\x9b2J")
    return Answer(question="q", answered=True, reason=None, cut=0.625,
                  partition="header|m", citations=[citation], prompt="p \x1b[2J",
                  closest_distance=0.2, reranked=False,
                  rendered_answer="Answer \x1b[2Jhere [1]\n\nSources:\n[1] Doc")


def test_printed_answers_never_carry_control_characters(capsys: pytest.CaptureFixture[str]):
    from rag_pipeline.cli.ask import _print_answer

    _print_answer(_hostile_answer(), show_prompt=True, show_timings=False, rerank_note="rerank: off")
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\x9b\u202e")
    assert "red \\u001b[31mtext\\u001b]0;pwned\\u0007" in out
    assert "Answer \\u001b[2Jhere [1]" in out
    assert " 1  doc\\u202e.md" in out


def test_a_cited_document_with_content_left_out_is_named_once_with_what(
        capsys: pytest.CaptureFixture[str]):
    from dataclasses import replace

    from rag_pipeline.cli.ask import _print_answer

    answer = _hostile_answer()
    comments = "1 comment(s) left out (reviewers' remarks)"
    formulas = "2 formula cell(s) never calculated, so empty"
    noted = replace(answer.citations[0], document_id="risks.xlsx", left_out=(comments, formulas))
    # A passage of another sheet: no formula caveat (found by a review: the last passage's
    # caveats stood for the document's).
    answer = replace(answer, citations=[noted, replace(noted, index=2, left_out=(comments,))],
                     rendered_answer=None)
    _print_answer(answer, show_prompt=False, show_timings=False, rerank_note="")
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("note:")] == [
        f"note: risks.xlsx: {comments}; {formulas}: the answer cannot hold it"]


def test_a_source_kept_for_the_identifier_it_holds_says_so(capsys: pytest.CaptureFixture[str]):
    from dataclasses import replace

    from rag_pipeline.cli.ask import _print_answer

    answer = _hostile_answer()
    over = replace(answer.citations[0], cosine_distance=0.71, identifier="INV-0045-QZ")
    under = replace(over, index=2, cosine_distance=0.41)  # under the cut: nothing to explain
    _print_answer(replace(answer, citations=[over, under], rendered_answer=None),
                  show_prompt=False, show_timings=False, rerank_note="")
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")] == [
        "note: [1] holds 'INV-0045-QZ' as the question names it: kept at distance 0.710, over the cut"]
    _print_answer(replace(answer, citations=[over], rendered_answer=None, unheld=("INV-0045-QX",)),
                  show_prompt=False, show_timings=False, rerank_note="")
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")] == [
        "note: no passage found holds 'INV-0045-QX', which the question names: the answer is "
        "about the other records it names",
        "note: [1] holds 'INV-0045-QZ' as the question names it: kept at distance 0.710, over the cut"]
    # A host one digit off the passages' own, no other code named (found by a support team's
    # trial: answered with the real host's passage, and nothing said so).
    _print_answer(replace(answer, citations=[replace(under, identifier="")], rendered_answer=None,
                          unheld=("gw-eu-09",)),
                  show_prompt=False, show_timings=False, rerank_note="")
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")] == [
        "note: no passage found holds 'gw-eu-09', which the question names: the sources hold "
        "others of its form, not it"]


def test_a_quoted_answer_is_printed_after_the_sources_without_control_characters(
        capsys: pytest.CaptureFixture[str]):
    from dataclasses import replace

    from rag_pipeline.cli.ask import _print_answer
    from rag_pipeline.core.answer.quoted import QuotedSentence

    answer = replace(_hostile_answer(), rendered_answer=None,
                     quoted=[QuotedSentence("red \x1b[31mtext\nnext line", 1, 0, 20)])
    _print_answer(answer, show_prompt=False, show_timings=False, rerank_note="")
    out = capsys.readouterr().out
    assert out.endswith("\nanswer, quoted from the sources:\n  red \\u001b[31mtext next line [1]\n")


def test_json_output_is_escaped_and_decodes_to_the_exact_text(capsys: pytest.CaptureFixture[str]):
    import json

    from rag_pipeline.cli.edge import echo
    from rag_pipeline.core.answer.answer_json import answer_json

    answer = _hostile_answer()
    echo(json.dumps(answer_json(answer), ensure_ascii=False, indent=2))
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\x9b\u202e")
    decoded = json.loads(out)
    assert (decoded["citations"][0]["quote"], decoded["citations"][0]["document_id"]) == (
        "red \x1b[31mtext\x1b]0;pwned\x07", "doc\u202e.md")


@pytest.mark.parametrize("args", [["--generate-url", "http://127.0.0.1:1/v1"],
                                  ["--generate-model", "tiny-chat"]])
def test_generate_url_and_generate_model_go_together(tmp_path: Path, args):
    # Planted: each half alone (the URL alone used to call the endpoint with model "default";
    # the model alone was ignored).
    assert one_line_failure("--data-dir", str(tmp_path), "ask", "q", *args) == (
        2, "error: --generate-url and --generate-model go together: give the endpoint and the "
           "model name it serves, or neither")


def test_a_question_that_is_not_text_or_too_long_is_refused_before_any_work(tmp_path: Path):
    # No index exists: refusing with the question's fault proves it is checked first (a
    # 2,001-character question used to be refused only after the model had loaded).
    assert one_line_failure("--data-dir", str(tmp_path), "ask", "x" * 2001) == (
        2, "error: the question has 2001 characters; at most 2000 are accepted")
    # Planted: a lone surrogate, as Python decodes a non-UTF-8 byte on the command line (it
    # used to end in a TypeError line).
    assert one_line_failure("--data-dir", str(tmp_path), "ask", "timeout \udcff?") == (
        2, "error: the question is not text: '\\udcff' at character 8 is a lone surrogate "
           "(bytes that are not UTF-8?)")


def _ask_params(*args: str) -> dict[str, object]:
    command = main.commands["ask"]
    return command.make_context("ask", ["a question", *args]).params


def _choices(command: str, name: str) -> list[str]:
    option = next(p for p in main.commands[command].params if p.name == name)
    assert isinstance(option.type, click.Choice)
    return list(option.type.choices)


def test_ask_choices_and_defaults_are_the_cores():
    # The chunker is free text checked against the declared chunkers (one-line error).
    assert _choices("ask", "retriever") == ["dense", "bm25", "hybrid"]
    assert _choices("ask", "analyzer") == ["plain", "english", "code"]
    params = _ask_params()
    assert (params["chunker"], params["retriever"], params["analyzer"], params["max_sources"],
            params["cut"]) == ("header", "hybrid", "code", 4, None)


def test_threshold_is_the_documented_spelling_of_cut():
    assert _ask_params("--threshold", "0.5")["cut"] == 0.5
    assert _ask_params("--cut", "0.55")["cut"] == 0.55


def test_ask_without_an_index_fails_plainly(tmp_path: Path):
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "ask", "what is a loop"])
    assert (result.exit_code, result.output) == (2, NOT_BUILT.format(tmp_path=tmp_path) + "\n")


def test_a_long_document_id_keeps_its_end_in_the_sources_table():
    from rag_pipeline.cli.ask import _tail

    # Found by a new user: two members of one archive showed as the same cut-off prefix.
    assert _tail("misc/git-relnotes.zip/relnotes-2.39.txt", 28) == "...tes.zip/relnotes-2.39.txt"
    assert _tail("misc/git-relnotes.zip/relnotes-2.38.txt", 28) == "...tes.zip/relnotes-2.38.txt"
    assert _tail("guide/install.md", 28) == "guide/install.md"
    assert _tail("x" * 28, 28) == "x" * 28


@pytest.mark.parametrize(("fragment", "source", "printed"), [
    ("#page=3", "#page=1", " #page=3"),                      # a later page than its source's
    ("#page=3", "#page=3&rows=2-9", ""),                     # the source names it already
    ("#char=120,180", "#char=100,400", ""),                  # a character range says nothing new
    ("#char=872,913&rows=18-18", "#char=800,990&rows=16-19", " #char=872,913&rows=18-18"),
    ("#sheet=Q1&range=B30:D30", "#sheet=Q1&range=B29:D36", " #sheet=Q1&range=B30:D30"),
    ("", "#page=1", ""), ("#slide=2", "#slide=2", "")])
def test_a_quoted_sentence_names_its_own_place_only_when_it_adds_one(fragment: str, source: str,
                                                                     printed: str):
    from rag_pipeline.cli.ask import _own_place

    assert _own_place(fragment, source) == printed
