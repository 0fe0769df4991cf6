"""``serve`` records its address in the data folder while it runs and removes the record when
SIGTERM stops it (uvicorn re-raises the signal after its graceful shutdown)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SERVER = """
import sys
from pathlib import Path
import rag_pipeline.service.run as run
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline_tests.core.index_builder import build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

embedder = HashedEmbedder()
built = build_index(Path(sys.argv[1]), embedder)
run.load_service_model = lambda *args, **kwargs: embedder   # the hashed stand-in, no torch
run.pin_threads = lambda: None
run.serve_forever(Warehouse(built.data_dir), embedder.spec, ServeSettings("header", embedder.spec.key),
                  host="127.0.0.1", port=0, poll_seconds=3600, access_log=False, echo=print)
"""


def test_serve_writes_its_record_and_removes_it_on_sigterm(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        records = list(tmp_path.rglob("serve.json"))
        deadline = time.monotonic() + 120
        while not records and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            records = list(tmp_path.rglob("serve.json"))
        assert records, server.communicate(timeout=10)[0] if server.poll() is not None else ""
        record = json.loads(records[0].read_text())
        assert (record["host"], record["pid"], record["chunker"], record["base_url"],
                record["location"]) == ("127.0.0.1", server.pid, "header", None,
                                        str(tmp_path / "data" / "warehouse"))
        assert record["port"] > 0
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 128 + signal.SIGTERM
        assert not records[0].exists()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
