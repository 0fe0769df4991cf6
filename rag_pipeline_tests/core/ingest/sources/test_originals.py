"""Tests for ``rag_pipeline.core.ingest.sources.originals``: a document of an S3 prefix or a git
repository read again from there for a view, on moto's S3 server and a real repository, and
what the service's views make of it (its bytes while they are the ones indexed, else none)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.sources import GitSource, S3Source, SourceError, SourceSettings
from rag_pipeline.core.ingest.sources.originals import read_original
from rag_pipeline.service.views.base import Original, ViewRequest
from rag_pipeline_tests.core.ingest.archives import zipped
from rag_pipeline_tests.core.ingest.sources.conftest import Bucket, Repo

PDF_BYTES = b"%PDF-1.7 stand-in bytes of a report"


def _info(record) -> DocumentInfo:
    return DocumentInfo(record.document_id, record.title, record.path, record.format, (),
                        content_sha256=record.content_sha256)


def test_an_s3_documents_original_is_its_object_while_it_holds_the_indexed_bytes(
        bucket: Bucket, s3_settings):
    """Found by a user's trial: every original, PDF page image and page view of an S3 prefix's
    documents said the file was gone (410) while its object was still there."""
    bucket.put("p/notes#1.md", "# Notes\n\nThe first note.\n")
    (record,) = extract_corpus(S3Source(f"s3://{bucket.name}/p", s3_settings)).records
    sources = SourceSettings(s3=s3_settings)
    assert read_original(record.path, 1000, sources) == b"# Notes\n\nThe first note.\n"
    request = ViewRequest(_info(record), record.canonical_text, 0, 7, sources=sources)
    assert request.original == Original("notes#1.md", b"# Notes\n\nThe first note.\n",
                                        record.content_sha256)
    # Without the settings (a view of a folder's document) nothing is fetched.
    assert ViewRequest(_info(record), record.canonical_text, 0, 7).original is None
    bucket.put("p/notes#1.md", "# Notes\n\nRewritten since.\n")
    assert ViewRequest(_info(record), record.canonical_text, 0, 7, sources=sources).original is None
    bucket.delete("p/notes#1.md")
    with pytest.raises(SourceError) as gone:
        read_original(record.path, 1000, sources)
    assert str(gone.value) == f"s3://{bucket.name}/p/notes#1.md: the object is gone"
    assert ViewRequest(_info(record), record.canonical_text, 0, 7, sources=sources).original is None


def test_a_git_documents_original_is_its_blob_at_the_indexed_commit(repo: Repo, tmp_path: Path):
    repo.write("reports/q1 #2.pdf", PDF_BYTES)
    repo.commit()
    records = extract_corpus(GitSource(repo.uri)).records
    (record,) = [r for r in records if r.document_id == "reports/q1 #2.pdf"]
    sources = SourceSettings(cache_dir=tmp_path / "sources")
    # Later commits change the file: the view still shows the bytes of the commit indexed.
    repo.write("reports/q1 #2.pdf", b"%PDF-1.7 another report")
    repo.commit()
    assert read_original(record.path, 1000, sources) == PDF_BYTES
    assert ViewRequest(_info(record), record.canonical_text, 0, 0, sources=sources).original == (
        Original("q1 #2.pdf", PDF_BYTES, hashlib.sha256(PDF_BYTES).hexdigest()))
    with pytest.raises(SourceError) as too_large:
        read_original(record.path, 10, sources)
    assert str(too_large.value).endswith(f"the blob {record.path.rsplit('@', 1)[1]} is over 10 "
                                         "bytes")
    commit = record.path.rsplit("@", 1)[1].split(":", 1)[0]
    with pytest.raises(SourceError) as missing:
        read_original(f"{repo.uri}@{commit}:reports/none.pdf", 1000, sources)
    assert str(missing.value) == (f"{repo.uri}: no blob {commit}:reports/none.pdf in the "
                                  "repository (any more)")
    with pytest.raises(SourceError, match="not an s3:// or git\\+ location"):
        read_original(f"{repo.uri}:reports/none.pdf", 1000, sources)


def test_an_originals_read_stops_at_the_views_limit(repo: Repo, tmp_path: Path):
    """Found re-reading the change: a view read a source's original up to the default 20 MiB
    whatever ``[index] max_document_bytes`` indexed documents up to; it is the view's limit."""
    repo.write("reports/q1.pdf", PDF_BYTES)
    repo.commit()
    (record,) = [r for r in extract_corpus(GitSource(repo.uri)).records
                 if r.document_id == "reports/q1.pdf"]
    sources = SourceSettings(cache_dir=tmp_path / "sources")
    fits = ViewRequest(_info(record), record.canonical_text, 0, 0, sources=sources,
                       max_source_bytes=len(PDF_BYTES))
    assert fits.original == Original("q1.pdf", PDF_BYTES, hashlib.sha256(PDF_BYTES).hexdigest())
    over = ViewRequest(_info(record), record.canonical_text, 0, 0, sources=sources,
                       max_source_bytes=len(PDF_BYTES) - 1)
    assert over.original is None


def test_an_archive_members_original_is_read_again_from_its_archive(bucket: Bucket, s3_settings,
                                                                    repo: Repo, tmp_path: Path):
    """Found by an operator's trial: a member of an archive in an S3 prefix or a repository
    (``a.zip/x.md``) was fetched as an object or blob of its own: 410, "gone or changed"."""
    archive = zipped({"x.md": "# X\n\nInside the archive.\n", "deep/y.md": "# Y\n\nDeeper.\n"})
    bucket.put("p/a.zip", archive)
    # A key running on below the archive's, with other bytes: not the member's original.
    bucket.put("p/a.zip/x.md", "# Not the member\n")
    repo.write("a.zip", archive)
    repo.commit()
    sources = SourceSettings(s3=s3_settings, cache_dir=tmp_path / "sources")
    for source in (S3Source(f"s3://{bucket.name}/p", s3_settings), GitSource(repo.uri)):
        records = {r.document_id: r for r in extract_corpus(source).records}
        for document_id, text in (("a.zip/x.md", b"# X\n\nInside the archive.\n"),
                                  ("a.zip/deep/y.md", b"# Y\n\nDeeper.\n")):
            record = records[document_id]
            assert read_original(record.path, 1000, sources, record.content_sha256) == text
            request = ViewRequest(_info(record), record.canonical_text, 0, 3, sources=sources)
            assert (request.original.data, request.unreachable) == (text, "")
    with pytest.raises(SourceError, match="the object is gone$"):
        read_original(f"s3://{bucket.name}/p/a.zip/none.md", 1000, sources)


def test_a_source_that_cannot_be_reached_is_said_never_taken_for_a_gone_original(
        bucket: Bucket, s3_settings):
    """Found by an operator's trial: with the endpoint down, /originals said 410 "gone or has
    changed" (Gone: do not ask again), and nothing was logged."""
    from dataclasses import replace

    from rag_pipeline_tests.core.ingest.sources.conftest import free_port

    bucket.put("p/a.md", "# A\n\nText.\n")
    (record,) = extract_corpus(S3Source(f"s3://{bucket.name}/p", s3_settings)).records
    down = SourceSettings(s3=replace(s3_settings, endpoint_url=f"http://127.0.0.1:{free_port()}"))
    request = ViewRequest(_info(record), record.canonical_text, 0, 3, sources=down)
    assert request.original is None
    assert request.unreachable.startswith(f"s3://{bucket.name} at http://127.0.0.1:")
    assert "cannot reach the endpoint after 3 attempts" in request.unreachable
    gone = ViewRequest(_info(record), record.canonical_text, 0, 3,
                       sources=SourceSettings(s3=s3_settings))
    bucket.delete("p/a.md")
    assert (gone.original, gone.unreachable) == (None, "")
