"""``rag_pipeline.benchmarks.sources`` on a small corpus of each kind: one edit is one document
read and extracted, and the report names it."""

from __future__ import annotations

import pytest

from rag_pipeline.benchmarks.sources import name, run


@pytest.mark.slow  # starts moto's server for the S3 corpus (seconds)
def test_one_edit_is_one_document_read_on_every_source():
    measured = run(30, ["local", "git", "s3"])
    assert [(m.source, m.files, m.read, m.extracted, m.changed) for m in measured] == [
        (source, 30, 1, 1, [name(15)]) for source in ("local", "git", "s3")]
