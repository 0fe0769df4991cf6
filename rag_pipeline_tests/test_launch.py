"""Tests for ``rag_pipeline.launch``: the console script's Ctrl-C while the CLI still imports."""

from __future__ import annotations

import subprocess
import sys

from rag_pipeline.project_paths import PROJECT_ROOT

# The CLI's import replaced by a SIGINT to the process itself: the signal lands, for certain,
# while the console script loads the CLI.
_INTERRUPTED_LOAD = """
import os, signal, time
from rag_pipeline import launch
def load():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    raise SystemExit("the SIGINT did not end the process")
launch._load = load
launch.run()
"""

_LOADED = """
import signal, sys
from rag_pipeline import launch
def cli(prog_name):
    print(prog_name, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
launch._load = lambda: cli
launch.run()
"""


def test_a_sigint_while_the_cli_imports_ends_quietly_with_130():
    ended = subprocess.run([sys.executable, "-c", _INTERRUPTED_LOAD], cwd=PROJECT_ROOT,
                           capture_output=True, text=True, timeout=60)
    assert (ended.returncode, ended.stdout, ended.stderr) == (
        130, "", "\nstopped by SIGINT before the command began\n")


def test_once_loaded_the_cli_runs_with_pythons_own_sigint_handling():
    ran = subprocess.run([sys.executable, "-c", _LOADED], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, timeout=60)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "rag-pipeline True\n", "")
