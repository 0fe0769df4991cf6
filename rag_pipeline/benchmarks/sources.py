"""Listing and change detection of a large corpus with one change, per kind of source.

Run (a few minutes; it makes its own corpora in a temporary folder)::

    nice -n 10 .venv/bin/python -m rag_pipeline.benchmarks.sources [--files 10000] [--sources local,git,s3]

For each source it writes ``--files`` small Markdown documents (a folder; a git repository,
committed; an S3 prefix on moto's server started on 127.0.0.1), extracts them all once (the
first index), then edits one document (written again, committed, uploaded again) and times the
next run of :func:`rag_pipeline.core.ingest.extract_corpus` from the first run's records: the
listing alone (``Source.entries``), the whole reconciliation (listing, comparing fingerprints,
reading and extracting what changed), and how many documents were read and extracted (the
target: seconds, and 1). It prints one line per source and the machine's load average (the
cores are shared: a figure means little without it).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.reconcile import Change
from rag_pipeline.core.ingest.sources import GitSource, LocalSource, S3Settings, S3Source, Source

SOURCES = ("local", "git", "s3")


@dataclass(frozen=True)
class Measured:
    source: str
    files: int
    first_seconds: float
    listing_seconds: float
    reconcile_seconds: float
    read: int
    extracted: int
    changed: list[str]

    def line(self) -> str:
        return (f"{self.source:5s} {self.files:6d} files: first index {self.first_seconds:6.1f} s; "
                f"one change: listing {self.listing_seconds:6.2f} s, reconciliation "
                f"{self.reconcile_seconds:6.2f} s, {self.read} read, {self.extracted} extracted, "
                f"changed {self.changed}")


def document(i: int, edit: str = "") -> str:
    return (f"# Topic {i}\n\nParagraph {i} of the benchmark corpus, about item "
            f"{i * 7919 % 10007}.{edit}\n")


def name(i: int) -> str:
    return f"part-{i // 1000:02d}/doc-{i:05d}.md"


def _counting(source: Source) -> list[str]:
    opened: list[str] = []
    real = source.read
    source.read = (  # type: ignore[method-assign]
        lambda entry, limit: opened.append(entry.document_id) or real(entry, limit))
    return opened


def measure(label: str, make: Callable[[], Source], edit: Callable[[], object],
            files: int) -> Measured:
    """``make()`` returns a fresh source over the corpus; ``edit()`` changes one document."""
    started = time.perf_counter()
    first = extract_corpus(make())
    first_seconds = time.perf_counter() - started
    if len(first.ok) != files:
        raise RuntimeError(f"{label}: {len(first.ok)} of {files} documents read")
    edit()
    source = make()
    started = time.perf_counter()
    source.entries()
    listing = time.perf_counter() - started
    source.close()
    source = make()
    opened = _counting(source)
    started = time.perf_counter()
    second = extract_corpus(source, first.records)
    reconcile = time.perf_counter() - started
    return Measured(label, files, first_seconds, listing, reconcile, len(opened), second.extracted,
                    second.report.ids(Change.CHANGED))


def local_corpus(root: Path, files: int) -> Measured:
    root.mkdir(parents=True)
    for i in range(files):
        path = root / name(i)
        path.parent.mkdir(exist_ok=True)
        path.write_text(document(i), encoding="utf-8")
    return measure("local", lambda: LocalSource(root),
                   lambda: (root / name(files // 2)).write_text(document(files // 2, " Edited."),
                                                                encoding="utf-8"), files)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def git_corpus(root: Path, files: int) -> Measured:
    root.mkdir(parents=True)
    _git(root, "init", "--quiet", "--initial-branch=main")
    for key, value in (("user.email", "bench@example.org"), ("user.name", "bench"),
                       ("commit.gpgsign", "false")):
        _git(root, "config", key, value)
    for i in range(files):
        path = root / name(i)
        path.parent.mkdir(exist_ok=True)
        path.write_text(document(i), encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "--quiet", "-m", "corpus")

    def edit() -> None:
        (root / name(files // 2)).write_text(document(files // 2, " Edited."), encoding="utf-8")
        _git(root, "commit", "--quiet", "-am", "one edit")

    return measure("git", lambda: GitSource(f"git+file://{root}"), edit, files)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def s3_corpus(files: int) -> Measured:
    import boto3

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("moto's S3 server did not start") from None
                time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}"
        settings = S3Settings(endpoint, "us-east-1", "bench", "bench")
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="bench", aws_secret_access_key="bench")
        client.create_bucket(Bucket="bench")
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: client.put_object(Bucket="bench", Key=f"corpus/{name(i)}",
                                                      Body=document(i).encode()), range(files)))
        return measure("s3", lambda: S3Source("s3://bench/corpus", settings),
                       lambda: client.put_object(Bucket="bench", Key=f"corpus/{name(files // 2)}",
                                                 Body=document(files // 2, " Edited.").encode()),
                       files)
    finally:
        server.terminate()
        server.wait(timeout=30)


def run(files: int, sources: Sequence[str]) -> list[Measured]:
    out = []
    with tempfile.TemporaryDirectory(prefix="rag-sources-bench-") as tmp:
        for label in sources:
            if label == "local":
                out.append(local_corpus(Path(tmp) / "local", files))
            elif label == "git":
                out.append(git_corpus(Path(tmp) / "git", files))
            elif label == "s3":
                out.append(s3_corpus(files))
            else:
                raise ValueError(f"unknown source {label!r}: one of {', '.join(SOURCES)}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--sources", default=",".join(SOURCES))
    args = parser.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for measured in run(args.files, args.sources.split(",")):
        print(measured.line(), flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
