"""``--warehouse s3://...`` reaches every command that reads the tables: the index lives only in
a bucket of the S3 server the deployment test runs (moto, on loopback), and the data folder
given beside it is empty, so a command that read the local tables would find nothing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.runtime.serve_record import ServeRecord, remove_serve_record, write_serve_record
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.app import create_app
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline.service.run import running_service
from rag_pipeline_tests.conftest import write_corpus
from rag_pipeline_tests.core.index_builder import DUPLICATED_DOCS, TIMEOUTS_PARAGRAPH, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder
from rag_pipeline_tests.service.browser import serve_in_thread

BUCKET = "rag-cli"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}
QUESTION = "how long before a network call times out"


@dataclass(frozen=True)
class Bucket:
    """An index in a bucket, the header partition of two hashed stand-in models (the same
    vectors under two keys), and an empty local data folder."""

    location: str
    data_dir: Path
    first: HashedEmbedder
    second: HashedEmbedder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 (as ``deploy/local_services.sh`` starts it); its endpoint."""
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
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def bucket(s3_server: str, tmp_path_factory: pytest.TempPathFactory,
           hashed_embedder: HashedEmbedder) -> Iterator[Bucket]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in CREDENTIALS.items():
            patch.setenv(name, value)
        pafs.S3FileSystem(endpoint_override=s3_server, scheme="http", region="us-east-1",
                          allow_bucket_creation=True).create_dir(BUCKET)
        location = (f"s3://{BUCKET}/warehouse?endpoint_override={s3_server}&scheme=http"
                    "&region=us-east-1")
        root = tmp_path_factory.mktemp("s3-cli")
        records = extract_corpus(write_corpus(root / "corpus", DUPLICATED_DOCS)).records
        second = HashedEmbedder(replace(hashed_embedder.spec, name="hashed-other",
                                        fingerprint="0000beef"))
        remote = Warehouse(root / "builder", location)
        for embedder in (hashed_embedder, second):
            build_partition(remote, records, ChunkingStrategy.HEADER, embedder)
        (root / "empty").mkdir()
        yield Bucket(location, root / "empty", hashed_embedder, second)


@pytest.fixture
def declared(bucket: Bucket, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    """The two stand-ins declared (first the default) and loaded instead of the real model."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    models = (bucket.first.spec, bucket.second.spec)
    by_key = {bucket.first.spec.key: bucket.first, bucket.second.spec.key: bucket.second}
    for module in ("edge", "evaluation"):
        monkeypatch.setattr(f"rag_pipeline.cli.{module}.declared_models_or_fail", lambda config=None: models)
    for module in ("ask", "evaluation"):
        monkeypatch.setattr(f"rag_pipeline.cli.{module}.load_model",
                            lambda spec, data_dir: by_key[spec.key])
    monkeypatch.setattr("rag_pipeline.core.evaluation.run.load_embedder", lambda spec: by_key[spec.key])
    return bucket


def _cli(bucket: Bucket, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--data-dir", str(bucket.data_dir), "--warehouse",
                                       bucket.location, *args])
    return result.exit_code, result.output


def test_status_reads_the_bucket(declared: Bucket):
    code, output = _cli(declared, "status")
    assert code == 0, output
    lines = output.splitlines()
    assert lines[0] == "documents: 4 ok, 0 failed, 0 stale"
    assert [line.split()[:4] for line in lines[2:4]] == [
        ["header", declared.second.spec.key, "6", "6"], ["header", declared.first.spec.key, "6", "6"]]


def test_models_lists_the_partitions_of_the_bucket(declared: Bucket):
    code, output = _cli(declared, "models")
    assert code == 0, output
    stored = output.split("\nstored partitions:\n", 1)[1].splitlines()
    # The stand-ins are not declared in rag_pipeline.toml, so `models` names them undeclared;
    # reading the empty local folder it listed no partition at all.
    assert sorted(line.split()[0] for line in stored if "NOT DECLARED" in line) == sorted(
        [declared.first.spec.key, declared.second.spec.key])


def test_ask_answers_from_the_bucket_and_never_from_a_serve_of_other_tables(
        declared: Bucket, tmp_path: Path):
    code, output = _cli(declared, "ask", QUESTION, "--json")
    assert code == 0, output
    answer = json.loads(output)
    assert (answer["answered"], answer["partition"]) == (True, f"header|{declared.first.spec.key}")
    assert TIMEOUTS_PARAGRAPH in answer["citations"][0]["quote"]
    # Planted: a running serve of the same partition recorded in the data folder, but serving
    # the tables of another warehouse (a local one). `ask --warehouse` must not send the
    # question there: it answers itself, from the bucket.
    local = build_index(tmp_path, declared.first)
    with (running_service(Warehouse(local.data_dir), ServeSettings("header", declared.first.spec.key),
                          lambda: declared.first, poll_seconds=3600) as service,
          serve_in_thread(create_app(service)) as url):
        write_serve_record(declared.data_dir, ServeRecord(
            "127.0.0.1", int(url.rsplit(":", 1)[1]), os.getpid(), "header",
            declared.first.spec.key, None, service.follower.warehouse.location))
        try:
            code, output = _cli(declared, "ask", QUESTION, "--timings")
        finally:
            remove_serve_record(declared.data_dir, os.getpid())
    assert code == 0, output
    assert output.splitlines()[-1].startswith("answered by: this process")


def test_serve_loads_the_bucket(declared: Bucket, monkeypatch: pytest.MonkeyPatch):
    import uvicorn

    from rag_pipeline.service import run

    monkeypatch.setattr(run, "load_service_model", lambda spec, *args: declared.first)
    monkeypatch.setattr(run, "pin_threads", lambda: None)
    served: list[str] = []

    def answer_once(server: uvicorn.Server, sockets: list[socket.socket]) -> None:
        # Instead of serving forever: the app the server was given answers one question.
        from fastapi.testclient import TestClient

        with TestClient(server.config.app, base_url="http://127.0.0.1") as client:
            served.append(client.get("/ask", params={"q": QUESTION}).json()["citations"][0]["quote"])

    monkeypatch.setattr(uvicorn.Server, "run", answer_once)
    code, output = _cli(declared, "serve", "--port", "0")
    assert code == 0, output
    assert output.splitlines()[0].startswith(f"serving header|{declared.first.spec.key} generation ")
    assert ": 6 chunks, 4 documents; ready in " in output.splitlines()[0]
    assert len(served) == 1 and TIMEOUTS_PARAGRAPH in served[0]


def test_eval_versus_scores_both_models_from_the_bucket(declared: Bucket, tmp_path: Path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps(row) for row in [
        {"corpus": "corpus", "documents": ["guide/install.md", "notes.txt"]},
        {"id": "g1", "needle": "Version 2 removed the legacy XML exporter",
         "question": "which version removed the XML exporter",
         "ticket": "cannot find the xml export any more"},
        {"id": "g2", "needle": "Run the upgrade command twice",
         "question": "how do I upgrade when the lock file is old",
         "ticket": "upgrade does nothing with an old lock"}]) + "\n")
    code, output = _cli(declared, "eval", "--gold", str(gold), "--versus", declared.second.spec.key)
    assert code == 0, output
    # Found by a new user: without --ood, another corpus's 60 out-of-domain questions (the
    # bundled set) scored the gate of this gold set; the default is ood.jsonl beside it.
    assert output.splitlines()[0] == (
        f"note: no out-of-domain questions ({tmp_path / 'ood.jsonl'} does not exist): the "
        "refusal gate is measured on the in-domain questions alone (one JSON line per question "
        'that the documents do not answer there: {"id": "o1", "query": "...", "kind": "near" or '
        '"off"})')
    assert output.splitlines()[1] == (f"4 in-domain queries, 0 out-of-domain, 0 gold-set errors, "
                                      f"model {declared.first.spec.key}")
    assert f"\n--- {declared.second.spec.key} on the same chunkers ---\n" in output
    assert (f"paired, {declared.first.spec.key} (a) vs {declared.second.spec.key} (b), same "
            "queries:") in output
    # Found by a new user: --json with --versus printed JSON, then the comparison as Markdown.
    result = CliRunner().invoke(main, ["--data-dir", str(declared.data_dir), "--warehouse",
                                       declared.location, "eval", "--gold", str(gold), "--versus",
                                       declared.second.spec.key, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    versus = report["versus"]
    assert (report["queries"], versus["model"], versus["report"]["queries"]) == (
        4, declared.second.spec.key, 4)
    a, b = (f"{key} header hybrid" for key in (declared.first.spec.key, declared.second.spec.key))
    assert [(p["style"], p["k"]) for p in versus["paired"] if (p["a"], p["b"]) == (a, b)] == [
        (style, k) for style in ("all", "question", "ticket") for k in (4, 8, 20)]
