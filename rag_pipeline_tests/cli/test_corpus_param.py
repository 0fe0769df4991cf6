"""``index --corpus`` and ``init`` take a folder or a source URI: a URI that does not parse, a
folder that does not exist and a URI without ``--output`` for ``init`` are one line each; a
URI's configuration names the source as it is, and ``[index] corpus`` reads it back."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.core.config.parse import load_config
from rag_pipeline_tests.cli.invoke import one_line_failure


def test_a_bad_corpus_is_one_line_before_any_work(tmp_path: Path):
    assert one_line_failure("index", "--corpus", "s3://Team_Docs/x") == (
        2, "error: Invalid value for '--corpus': s3://Team_Docs/x: 'Team_Docs' is not a bucket "
           "name (3 to 63 lower-case letters, digits, '.' and '-')")
    assert one_line_failure("index", "--corpus", "git+ftp://example.org/r") == (
        2, "error: Invalid value for '--corpus': git+ftp://example.org/r: git+file, git+https, "
           "git+ssh or git+http URLs only")
    assert one_line_failure("index", "--corpus", str(tmp_path / "nope")) == (
        2, f"error: Invalid value for '--corpus': '{tmp_path / 'nope'}': not a folder (nor "
           "s3://bucket/prefix, git+file:///repo, git+https://...)")
    assert one_line_failure("init", "s3://team-docs/exports") == (
        2, "error: s3://team-docs/exports is a source URI: --output FILE says where to write its "
           "configuration")


def test_init_writes_a_source_uri_that_the_config_reads_back(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", "")
    output = tmp_path / "team.rag_pipeline.toml"
    written = CliRunner().invoke(main, ["init", "git+file:///srv/handbook@v2", "--output",
                                        str(output)])
    assert written.exit_code == 0, written.output
    assert written.output.splitlines()[0] == (
        f"wrote {output}: corpus git+file:///srv/handbook@v2, data folder "
        f"{tmp_path / 'team.rag-data'}, profile production")
    config = load_config(output)
    assert (config.corpus, config.data_dir) == ("git+file:///srv/handbook@v2",
                                                tmp_path / "team.rag-data")
