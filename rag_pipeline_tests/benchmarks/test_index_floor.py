"""Tests for ``rag_pipeline.benchmarks.index_floor``: the folder it makes from a BEIR corpus."""

from __future__ import annotations

import json
from pathlib import Path

from rag_pipeline.benchmarks.index_floor import write_beir_folder


def test_a_beir_corpus_becomes_one_markdown_file_per_document(tmp_path: Path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in [
        {"_id": "4983", "title": "Microstructural  development\nof white matter", "text": " Alterations. \n"},
        {"_id": "a/b", "title": "", "text": "No title here."},
    ]) + "\n", encoding="utf-8")
    assert write_beir_folder(corpus, tmp_path / "folder") == 2
    assert sorted(p.name for p in (tmp_path / "folder").iterdir()) == ["4983.md", "a_b.md"]
    assert (tmp_path / "folder" / "4983.md").read_text(encoding="utf-8") == (
        "# Microstructural development of white matter\n\nAlterations.\n")
    # A document without a title is headed by its id.
    assert (tmp_path / "folder" / "a_b.md").read_text(encoding="utf-8") == "# a/b\n\nNo title here.\n"
