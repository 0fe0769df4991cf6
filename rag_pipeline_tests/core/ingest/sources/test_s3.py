"""Tests for ``rag_pipeline.core.ingest.sources.s3`` against moto's S3 server on 127.0.0.1: keys
below the prefix as ids, ETag and size as fingerprints (nothing unchanged downloaded), renames
by ETag, unsafe keys refused, and a missing bucket, refused credentials and an unreachable
endpoint each one line."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from rag_pipeline.core.ingest import ExtractionSettings, extract_corpus
from rag_pipeline.core.ingest.reconcile import Change
from rag_pipeline.core.ingest.sources import S3Settings, S3Source, SourceError, parse_s3_uri
from rag_pipeline_tests.core.ingest.sources.conftest import Bucket, free_port, start_moto, stop


def test_the_uri_names_a_bucket_and_a_prefix():
    assert parse_s3_uri("s3://team-docs/exports/2026") == ("team-docs", "exports/2026/")
    assert parse_s3_uri("s3://team-docs") == ("team-docs", "")
    assert parse_s3_uri("s3://team-docs/") == ("team-docs", "")
    with pytest.raises(SourceError, match="'Team_Docs' is not a bucket name"):
        parse_s3_uri("s3://Team_Docs/x")
    with pytest.raises(SourceError) as caught:  # found by an operator: "the prefix the key"
        parse_s3_uri("s3://team-docs/a/../b")
    assert str(caught.value) == ("s3://team-docs/a/../b: the prefix a/../b holds an empty, '.' "
                                 "or '..' segment: refused")


def test_settings_come_from_the_standard_variables():
    assert S3Settings.from_environment({
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}) == \
        S3Settings("http://127.0.0.1:9", "eu-west-1", "k", "s", "t")
    assert S3Settings.from_environment({"AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "http://b",
                                        "AWS_REGION": "r", "AWS_DEFAULT_REGION": "d"}) == \
        S3Settings("http://b", "r")


def test_keys_below_the_prefix_only_are_listed_with_etag_and_size(bucket: Bucket, s3_settings):
    bucket.put("docs/guide.md", "# Guide\n\nBody.\n")
    bucket.put("docs/sub/notes.txt", "Notes.\n")
    bucket.put("docs/", b"")  # a folder marker: no entry
    bucket.put("docs/.hidden/x.md", "# Hidden\n")
    bucket.put("docs/sub/.empty/", b"")  # a hidden folder's marker: named too
    # Planted: a key beside the prefix that shares its first letters -> never listed.
    bucket.put("docs-old/stale.md", "# Stale\n")
    bucket.put("outside.md", "# Outside\n")
    source = S3Source(f"s3://{bucket.name}/docs", s3_settings)
    etag = bucket.client.head_object(Bucket=bucket.name, Key="docs/guide.md")["ETag"].strip('"')
    entries = source.entries()
    assert [(e.document_id, e.size) for e in entries] == [("guide.md", 15), ("sub/notes.txt", 7)]
    assert source.hidden == (".hidden", "sub/.empty")
    assert entries[0].fingerprint == f"etag:{etag}:15"
    assert source.read(entries[0], 100) == b"# Guide\n\nBody.\n"
    assert source.location("guide.md") == f"s3://{bucket.name}/docs/guide.md"
    with pytest.raises(Exception, match="too large: 15 bytes, over the limit of 10 bytes"):
        source.read(entries[0], 10)


def test_unsafe_keys_are_refused_one_line_each(bucket: Bucket, s3_settings):
    bucket.put("docs/good.md", "# Good\n")
    bucket.put("docs/a/../escape.md", "# Up\n")
    bucket.put("docs/bell\x07.md", "# Bell\n")
    # Named like a folder, with bytes (found by an attack: dropped with no line); a hidden
    # one is hidden, as its name says.
    bucket.put("docs/trail.md/", "# Trail\n")
    bucket.put("docs/.notes/", "# Notes\n")
    bucket.put("docs/", "# The folder\n")  # the prefix's own key, with bytes (found by an attack)
    result = extract_corpus(S3Source(f"s3://{bucket.name}/docs", s3_settings))
    assert [(r.document_id, r.status, r.error) for r in result.records] == [
        ("/", "failed", "the key docs/ is the prefix itself, holding bytes (an object named like "
                        "the corpus's folder): refused; rename it without the '/'"),
        ("a/../escape.md", "failed", "the key a/../escape.md holds an empty, '.' or '..' segment: refused"),
        ("bell\\x07.md", "failed", "the key bell\\x07.md holds a control character: refused"),
        ("good.md", "ok", None),
        ("trail.md/", "failed", "the key trail.md/ ends in '/' (an object named like a folder, "
                                "holding bytes): refused; rename it without the '/'")]
    assert result.report.counts()["hidden"] == 1


def test_a_key_below_an_archive_key_is_no_second_document_of_its_id(bucket: Bucket, s3_settings):
    """``a.zip`` holding ``x.md`` and the key ``a.zip/x.md``: two records of one id failed the
    chunks check of every build. The archive's member keeps the id; the object fails, named."""
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as written:
        written.writestr("x.md", "# Member\n\nThe member's text.\n")
    bucket.put("docs/a.zip", archive.getvalue())
    bucket.put("docs/a.zip/x.md", "# Object\n\nThe object's text.\n")
    bucket.put("docs/good.md", "# Good\n")
    result = extract_corpus(S3Source(f"s3://{bucket.name}/docs", s3_settings))
    assert [(r.document_id, r.status, r.canonical_text) for r in result.records] == [
        ("a.zip", "ok", "x.md\n"), ("a.zip/x.md", "ok", "# Member\n\nThe member's text.\n"),
        ("good.md", "ok", "# Good\n")]
    assert [(r.change, r.detail) for r in result.report.rows if r.document_id == "a.zip/x.md"] == [
        (Change.ADDED.value, ""),
        (Change.FAILED.value, "another document already has this id (a member of the container of "
                              "that name): not indexed")]


def test_reconciliation_downloads_only_what_changed(bucket: Bucket, s3_settings):
    bucket.put("p/keep.md", "# Keep\n\nSame.\n")
    bucket.put("p/edit.md", "# Edit\n\nBefore.\n")
    bucket.put("p/gone.md", "# Gone\n\nBye.\n")
    bucket.put("p/old.md", "# Moving\n\nSame words.\n")
    bucket.put("p/broken.md", b"# Broken\n\n\xff\x81 not utf-8")
    uri = f"s3://{bucket.name}/p"
    first = extract_corpus(S3Source(uri, s3_settings))
    assert first.report.counts() == {"added": 4, "changed": 0, "renamed": 0, "deleted": 0,
                                     "unchanged": 0, "failed": 1, "skipped": 0,
                                     "hidden": 0}
    bucket.put("p/edit.md", "# Edit\n\nAfter.\n")
    bucket.delete("p/gone.md")
    bucket.put("p/new.md", "# New\n\nHello.\n")
    bucket.client.copy_object(Bucket=bucket.name, Key="p/moved/here.md",
                              CopySource={"Bucket": bucket.name, "Key": "p/old.md"})
    bucket.delete("p/old.md")
    bucket.put("p/.cache/one.md", "# Cache\n")
    bucket.put("p/.cache/two.md", "# Cache\n")
    source = S3Source(uri, s3_settings)
    opened: list[str] = []  # every download, ahead of the reader (prefetch) or not
    real_fetch = source._fetch
    source._fetch = lambda entry, limit: opened.append(entry.document_id) or real_fetch(entry, limit)
    second = extract_corpus(source, first.records)
    assert {c.value: second.report.ids(c) for c in Change} == {
        "added": ["new.md"], "changed": ["edit.md"], "renamed": ["moved/here.md"],
        "deleted": ["gone.md"], "unchanged": ["keep.md"], "failed": ["broken.md"], "skipped": [],
        "hidden": [".cache"]}
    # Nothing unchanged was downloaded, the rename neither (same ETag and size), and the failed
    # file is not retried while its object is the same.
    assert sorted(opened) == ["edit.md", "new.md"]
    records = {r.document_id: r for r in second.records}
    assert records["moved/here.md"].path == f"s3://{bucket.name}/p/moved/here.md"
    assert records["edit.md"].canonical_text == "# Edit\n\nAfter.\n"
    failed_row = [r for r in second.report.rows if r.change == "failed"][0]
    assert failed_row.detail.startswith("not retried: unchanged since it failed: not UTF-8: ")
    # An explicit retry reads it again.
    opened.clear()
    extract_corpus(source, second.records, ExtractionSettings(retry_failed=True))
    assert opened == ["broken.md"]


def test_a_missing_bucket_is_one_line(s3_settings):
    with pytest.raises(SourceError) as caught:
        S3Source("s3://no-such-bucket-here/p", s3_settings).entries()
    assert str(caught.value) == (f"s3://no-such-bucket-here/p at {s3_settings.endpoint_url}: "
                                 "the bucket 'no-such-bucket-here' does not exist")


def test_an_unreachable_endpoint_fails_after_bounded_retries():
    port = free_port()  # nothing listens there
    source = S3Source("s3://docs/p", S3Settings(endpoint_url=f"http://127.0.0.1:{port}",
                                               access_key_id="k", secret_access_key="s"))
    started = time.monotonic()
    with pytest.raises(SourceError) as caught:
        source.entries()
    assert str(caught.value).startswith(f"s3://docs/p at http://127.0.0.1:{port}: cannot reach "
                                        "the endpoint after 3 attempts (EndpointConnectionError")
    assert time.monotonic() - started < 30


def test_an_endpoint_that_never_answers_is_asked_3_times_in_all(monkeypatch: pytest.MonkeyPatch):
    """Found by an operator: a frozen endpoint got 4 requests in 40 s, the message saying 3
    (botocore's ``max_attempts`` counts retries after the first; ``total_max_attempts`` all)."""
    from rag_pipeline.core.ingest.sources import s3

    monkeypatch.setattr(s3, "READ_TIMEOUT_SECONDS", 0.3)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    source = S3Source("s3://docs/p", S3Settings(
        endpoint_url=f"http://127.0.0.1:{listener.getsockname()[1]}", access_key_id="k",
        secret_access_key="s"))
    failed: list[SourceError] = []

    def list_entries() -> None:
        try:
            source.entries()
        except SourceError as exc:
            failed.append(exc)

    thread = threading.Thread(target=list_entries)
    thread.start()
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        try:
            held.append(listener.accept()[0])  # accepted, never answered
        except TimeoutError:
            pass
    thread.join(5)
    for connection in [*held, listener]:
        connection.close()
    assert len(held) == 3
    assert "cannot reach the endpoint after 3 attempts (ReadTimeoutError" in str(failed[0])


class _CutBodies:
    """An S3 endpoint on 127.0.0.1 listing one object, ``p/a.md``, whose body it cuts off
    (headers sent, then the connection closed) the first ``cut`` times it is asked for."""

    LISTING = (b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult '
               b'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>docs</Name><Prefix>p/</Prefix>'
               b"<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
               b"<Contents><Key>p/a.md</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
               b"<ETag>&quot;abc&quot;</ETag><Size>12</Size></Contents></ListBucketResult>")

    def __init__(self, cut: int) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        endpoint = self
        self.gets = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                listing = "list-type=2" in self.path
                if not listing:
                    endpoint.gets += 1
                body = endpoint.LISTING if listing else b"# A\n\nWhole.\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", '"abc"')
                self.end_headers()
                if listing or endpoint.gets > cut:
                    self.wfile.write(body)
                    return
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def source(self) -> S3Source:
        return S3Source("s3://docs/p", S3Settings(endpoint_url=self.url, region="us-east-1",
                                                  access_key_id="k", secret_access_key="s"))


def test_a_body_cut_off_on_its_way_is_asked_for_again_and_then_said_so():
    """Found by an operator: a connection dropped after the object's headers was reported as
    "cannot reach the endpoint after 3 attempts", after one attempt, and failed the run."""
    healing = _CutBodies(cut=1)
    try:
        source = healing.source()
        assert (source.read(source.entries()[0], 1000), healing.gets) == (b"# A\n\nWhole.\n", 2)
    finally:
        healing.server.shutdown()
    cut = _CutBodies(cut=10)
    try:
        source = cut.source()
        with pytest.raises(SourceError) as caught:
            source.read(source.entries()[0], 1000)
        assert (str(caught.value), cut.gets) == (
            f"s3://docs/p at {cut.url}: the connection dropped while 'p/a.md' was read, 3 times "
            "(IncompleteReadError: 0 read, but total bytes expected is 12.)", 3)
    finally:
        cut.server.shutdown()


def test_refused_credentials_are_one_line(tmp_path):
    # moto checks signatures once this many requests have passed unauthenticated (here: none).
    server, endpoint = start_moto({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        source = S3Source("s3://docs/p", S3Settings(endpoint_url=endpoint, region="us-east-1",
                                                   access_key_id="wrong", secret_access_key="wrong"))
        with pytest.raises(SourceError) as caught:
            source.entries()
    finally:
        stop(server)
    assert str(caught.value) == (f"s3://docs/p at {endpoint}: credentials refused (the access key "
                                 "is not known to the endpoint; set AWS_ACCESS_KEY_ID / "
                                 "AWS_SECRET_ACCESS_KEY)")


def test_the_watch_token_follows_the_listing_only(bucket: Bucket, s3_settings):
    bucket.put("p/a.md", "# One\n")
    source = S3Source(f"s3://{bucket.name}/p", s3_settings)
    first = source.watch_token()
    bucket.put("elsewhere.md", "# Outside the prefix\n")
    assert source.watch_token() == first
    bucket.put("p/a.md", "# Two\n")
    assert source.watch_token() != first


def test_a_first_index_downloads_ahead_and_reads_the_same_records(bucket: Bucket, s3_settings):
    for i in range(40):
        bucket.put(f"p/doc-{i:02d}.md", f"# Doc {i}\n\nText {i}.\n")
    source = S3Source(f"s3://{bucket.name}/p", s3_settings)
    fetched: list[str] = []
    real_fetch = source._fetch
    source._fetch = lambda entry, limit: fetched.append(entry.document_id) or real_fetch(entry, limit)
    result = extract_corpus(source)
    assert [r.canonical_text for r in result.records] == [f"# Doc {i}\n\nText {i}.\n" for i in range(40)]
    # Each object downloaded exactly once (the reader takes what the prefetch threads fetched),
    # and the pool is gone once the run closed the source.
    assert sorted(fetched) == [f"doc-{i:02d}.md" for i in range(40)]
    assert source._pool is None


def test_a_prefix_emptied_during_the_run_fails_it(bucket: Bucket, s3_settings):
    for key in ("p/a.md", "p/b.md"):
        bucket.put(key, "# Doc\n\nText.\n")
    source = S3Source(f"s3://{bucket.name}/p", s3_settings)
    real_read = source.read

    def read_then_empty(entry, limit):
        data = real_read(entry, limit)
        for key in ("p/a.md", "p/b.md"):
            bucket.delete(key)
        return data

    source.read = read_then_empty
    with pytest.raises(SourceError) as caught:
        extract_corpus(source)
    assert str(caught.value) == (f"s3://{bucket.name}/p at {s3_settings.endpoint_url}: the prefix "
                                 "emptied while it was being read: nothing is published, the "
                                 "served index is as it was")


def test_an_empty_prefix_is_an_empty_corpus_not_one_that_emptied(bucket: Bucket, s3_settings):
    """Found by a user's trial: a prefix emptied between two runs, one that never held an
    object and an empty bucket all failed "the prefix emptied while it was being read", with
    ``--allow-shrink`` too, so the deleted documents stayed served. An empty listing is an empty
    corpus, which the run's shrink guard refuses or ``--allow-shrink`` publishes."""
    bucket.put("p/a.md", "# Only\n\nThe only document talks about pencils.\n")
    first = extract_corpus(S3Source(f"s3://{bucket.name}/p", s3_settings))
    bucket.delete("p/a.md")
    second = extract_corpus(S3Source(f"s3://{bucket.name}/p", s3_settings), first.records)
    assert second.records == []
    assert [(r.change, r.document_id) for r in second.report.rows] == [(Change.DELETED.value,
                                                                        "a.md")]
    for uri in (f"s3://{bucket.name}/never-written", f"s3://{bucket.name}"):
        source = S3Source(uri, s3_settings)
        assert (extract_corpus(source).records, source.listed) == ([], 0)


def test_a_prefix_naming_an_object_says_so(bucket: Bucket, s3_settings):
    bucket.put("exports/leave.md", "# Leave\n")
    with pytest.raises(SourceError) as caught:
        S3Source(f"s3://{bucket.name}/exports/leave.md", s3_settings).entries()
    assert str(caught.value) == (
        f"s3://{bucket.name}/exports/leave.md at {s3_settings.endpoint_url}: names an object, not "
        f"a prefix of objects: name the prefix it is in (s3://{bucket.name}/exports)")


def test_a_key_below_a_key_that_no_format_claims_stays_its_own_document(bucket: Bucket,
                                                                         s3_settings):
    """Found by a user's trial: an object ``guide`` (a file no format claims, read as text)
    and an object ``guide/x.md``. The second run took ``guide/x.md``'s previous record for a
    member of ``guide`` and reported the object itself failed ("another document already has
    this id"), counting it twice."""
    bucket.put("p/guide", "# Guide without suffix\n\nParking permits.\n")
    bucket.put("p/guide/x.md", "# Guide child\n\nBicycle storage in the basement.\n")
    bucket.put("p/a.md", "# A\n\nThe orchard.\n")
    uri = f"s3://{bucket.name}/p"
    first = extract_corpus(S3Source(uri, s3_settings))
    bucket.put("p/a.md", "# A\n\nThe orchard and its apples.\n")
    second = extract_corpus(S3Source(uri, s3_settings), first.records)
    assert [(r.document_id, r.status) for r in second.records] == [
        ("a.md", "ok"), ("guide", "ok"), ("guide/x.md", "ok")]
    assert sorted((r.change, r.document_id) for r in second.report.rows) == [
        (Change.CHANGED.value, "a.md"), (Change.UNCHANGED.value, "guide"),
        (Change.UNCHANGED.value, "guide/x.md")]


def test_an_object_the_store_refuses_fails_alone_and_is_read_again_by_the_next_run(
        bucket: Bucket, s3_settings):
    # Found by an operator's trial: one object a lifecycle rule moved to Glacier (GetObject:
    # InvalidObjectState) failed the whole run, naming no object, and nothing new was indexed.
    bucket.put("p/new.md", "# New policy\n\nHotel nights cost at most 180 euros.\n")
    bucket.client.put_object(Bucket=bucket.name, Key="p/archived.md", Body=b"# Old\n\nMinutes.\n",
                             StorageClass="GLACIER")
    source = S3Source(f"s3://{bucket.name}/p", s3_settings)
    first = extract_corpus(source)
    records = {r.document_id: r for r in first.records}
    assert (records["new.md"].status, records["archived.md"].status) == ("ok", "failed")
    assert records["archived.md"].error == (
        "the object store refused to read it: InvalidObjectState: The operation is not valid for "
        "the object's storage class (the next run tries again)")
    # Restored with the same ETag: the next run reads it, as it reads one deleted and put back
    # while it was read.
    bucket.client.restore_object(Bucket=bucket.name, Key="p/archived.md",
                                 RestoreRequest={"Days": 1})
    opened: list[str] = []
    real_fetch = source._fetch
    source._fetch = lambda entry, limit: opened.append(entry.document_id) or real_fetch(entry, limit)
    second = extract_corpus(source, first.records)
    assert opened == ["archived.md"]
    assert {r.document_id: r.status for r in second.records} == {"archived.md": "ok", "new.md": "ok"}


def test_an_object_deleted_while_it_was_read_is_read_again_once_it_is_back(bucket: Bucket,
                                                                           s3_settings):
    # Found by an operator's trial: a sync tool deletes and puts back; the failure "deleted
    # while being read" was kept, "not retried: unchanged", while the same bytes were back.
    bucket.put("p/a.md", "# A\n\nText.\n")
    source = S3Source(f"s3://{bucket.name}/p", s3_settings)
    real_fetch = source._fetch

    def deleted_first(entry, limit):
        bucket.delete("p/a.md")
        try:
            return real_fetch(entry, limit)
        finally:
            bucket.put("p/a.md", "# A\n\nText.\n")

    source._fetch = deleted_first
    first = extract_corpus(source)
    assert [(r.status, r.error) for r in first.records] == [
        ("failed", "deleted while being read: the object is gone")]
    source._fetch = real_fetch
    second = extract_corpus(source, first.records)
    assert [(r.status, r.canonical_text) for r in second.records] == [("ok", "# A\n\nText.\n")]
