"""The CLI refuses bad arguments before any work, and every failure is one line naming its cause.

Fast: validation runs before an index or a model is opened, so no index is built here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main

CHUNKERS = "blind, blind_overlap, boundaries, boundaries_overlap, header, header_overlap"


def _fail(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    return result.exit_code, result.stderr.rstrip("\n")


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
    assert _fail("--data-dir", str(tmp_path), "ask", "a question", *args) == (2, f"error: {message}")


def test_a_rerank_folder_that_is_not_a_model_is_refused(tmp_path: Path):
    (tmp_path / "ce").mkdir()
    assert _fail("--data-dir", str(tmp_path), "ask", "q", "--rerank", str(tmp_path / "ce")) == (
        2, f"error: --rerank '{tmp_path / 'ce'}' holds no config.json: not a model folder")


def test_eval_refuses_an_undeclared_chunker():
    assert _fail("eval", "--chunker", "header", "--chunker", "../../etc") == (
        2, f"error: unknown chunker '../../etc'; declared: {CHUNKERS}")


def test_model_keys_must_be_declared(tmp_path: Path):
    code, line = _fail("--data-dir", str(tmp_path), "ask", "q", "--model", "../m")
    assert (code, line.startswith("error: model '../m' is not declared; declared: [")) == (2, True)


def test_usage_errors_are_one_line_without_the_usage_block():
    assert _fail("nosuch") == (2, "error: No such command 'nosuch'.")
    assert _fail("ask") == (2, "error: Missing argument 'QUESTION'.")


def test_an_empty_question_and_a_missing_index_name_their_cause(tmp_path: Path):
    assert _fail("--data-dir", str(tmp_path), "ask", "  ") == (2, "error: the question is empty")
    assert _fail("--data-dir", str(tmp_path), "status") == (
        2, "error: no index built yet: run `rag-pipeline index` first")


def test_an_unexpected_error_is_one_line_with_its_type_not_a_traceback(tmp_path: Path):
    # Planted: a damaged DuckDB file beside a documents table folder; DuckDB's own error must
    # reach the user as one line (exit 1: not a usage error).
    (tmp_path / "warehouse" / "documents").mkdir(parents=True)
    (tmp_path / "warehouse" / "documents" / "part-0.parquet").write_bytes(b"x")
    (tmp_path / "rag.duckdb").write_bytes(b"garbage")
    assert _fail("--data-dir", str(tmp_path), "status") == (
        1, f'error: IOException: IO Error: The file "{tmp_path / "rag.duckdb"}" exists, but it '
           "is not a valid DuckDB database file!")


def test_control_characters_in_a_message_are_escaped(tmp_path: Path):
    # Planted: a data folder whose name clears the screen, in an error message that quotes it.
    data = tmp_path / "d\x1b[2J"
    (data / "warehouse" / "documents").mkdir(parents=True)
    (data / "warehouse" / "documents" / "part-0.parquet").write_bytes(b"x")
    (data / "rag.duckdb").write_bytes(b"garbage")
    assert _fail("--data-dir", str(data), "status") == (
        1, f'error: IOException: IO Error: The file "{tmp_path}/d\\u001b[2J/rag.duckdb" exists, '
           "but it is not a valid DuckDB database file!")


def _hostile_answer():
    from rag_pipeline.core.answer.ask import Answer
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
    from rag_pipeline.cli import _print_answer

    _print_answer(_hostile_answer(), show_prompt=True, show_timings=False, rerank_note="rerank: off")
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\x9b\u202e")
    assert "red \\u001b[31mtext\\u001b]0;pwned\\u0007" in out
    assert "Answer \\u001b[2Jhere [1]" in out
    assert " 1  doc\\u202e.md" in out


def test_json_output_is_escaped_and_decodes_to_the_exact_text(capsys: pytest.CaptureFixture[str]):
    import json

    from rag_pipeline.cli import _echo
    from rag_pipeline.core.answer.answer_json import answer_json

    answer = _hostile_answer()
    _echo(json.dumps(answer_json(answer), ensure_ascii=False, indent=2))
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
    assert _fail("--data-dir", str(tmp_path), "ask", "q", *args) == (
        2, "error: --generate-url and --generate-model go together: give the endpoint and the "
           "model name it serves, or neither")


def test_a_question_that_is_not_text_or_too_long_is_refused_before_any_work(tmp_path: Path):
    # No index exists: refusing with the question's fault proves it is checked first (a
    # 2,001-character question used to be refused only after the model had loaded).
    assert _fail("--data-dir", str(tmp_path), "ask", "x" * 2001) == (
        2, "error: the question has 2001 characters; at most 2000 are accepted")
    # Planted: a lone surrogate, as Python decodes a non-UTF-8 byte on the command line (it
    # used to end in a TypeError line).
    assert _fail("--data-dir", str(tmp_path), "ask", "timeout \udcff?") == (
        2, "error: the question is not text: '\\udcff' at character 8 is a lone surrogate "
           "(bytes that are not UTF-8?)")


@pytest.mark.parametrize(("args", "message"), [
    (["serve", "--poll", "nan"], "Invalid value for '--poll': 'nan' is not a number."),
    (["eval", "--beir", ".", "--k1", "nan"], "Invalid value for '--k1': 'nan' is not a number."),
    (["eval", "--beir", ".", "--k1", "-5"],
     "Invalid value for '--k1': -5.0 is not in the range x>=0.0."),
])
def test_nan_and_negative_numbers_are_refused(args, message):
    assert _fail(*args) == (2, f"error: {message}")


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_a_config_variable_naming_no_file_is_an_error(tmp_path: Path, kind: str):
    target = tmp_path / ("absent.toml" if kind == "missing" else "")
    what = "does not exist" if kind == "missing" else "is a folder"
    result = CliRunner(env={"RAG_PIPELINE_CONFIG": str(target)}).invoke(
        main, ["--data-dir", str(tmp_path), "models"])
    assert (result.exit_code, result.stderr) == (
        2, f"error: RAG_PIPELINE_CONFIG={str(target)!r} {what}: it must name a rag_pipeline.toml "
           "file (unset it for the project's own)\n")


def test_output_piped_into_a_reader_that_quits_ends_quietly():
    import subprocess
    import sys

    from rag_pipeline.project_paths import PROJECT_ROOT

    # Planted: the reader closes the pipe at once, as `| head -0` does; every write then fails.
    child = subprocess.Popen([sys.executable, "-c", "from rag_pipeline.cli import main; main()",
                              "models"], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert (child.wait(timeout=120), stderr) == (141, "")
