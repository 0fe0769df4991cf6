"""What every benchmark shares (``rag_pipeline.benchmarks``): its offline environment and the
way it stops a server it started."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from rag_pipeline.benchmarks import go_offline, offline_env, stop


def test_a_childs_environment_is_offline_whatever_the_parent_set():
    assert offline_env({"PATH": "/bin", "HF_HUB_OFFLINE": "0"}, DAGSTER_HOME="/tmp/home") == {
        "PATH": "/bin", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
        "DAGSTER_HOME": "/tmp/home"}


def test_going_offline_keeps_what_the_caller_set(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    go_offline()
    assert (os.environ["HF_HUB_OFFLINE"], os.environ["TOKENIZERS_PARALLELISM"]) == ("1", "true")


def test_stop_ends_a_process_that_ignores_sigterm_by_killing_it():
    # Planted flaw: a child that ignores SIGTERM; stop must still end it (SIGKILL, -9).
    child = subprocess.Popen([sys.executable, "-c", "import signal, sys, time\n"
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                              "print('ready', flush=True)\ntime.sleep(60)\n"],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ready\n"
    started = time.monotonic()
    stop(child, 0.5)
    assert child.returncode == -9
    assert time.monotonic() - started < 30
    polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop(polite, 30)
    assert polite.returncode == -15
