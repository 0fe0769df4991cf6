"""``make dev``: ``dagster dev`` with its arguments, stopped whole by SIGTERM or SIGINT.

``dagster dev`` handles SIGTERM as it handles SIGINT, and a shell without job control starts a
background job (``make dev &`` in a script, a CI step) with SIGINT ignored: started from there,
``dagster dev`` ignored SIGTERM as well and ran on until killed. And a SIGTERM to ``dagster dev``
alone left its code servers running until their heartbeat ran out (45 s), where a Ctrl-C in a
terminal reaches every process of the job at once.

So ``dagster dev`` runs here in a process group of its own, with SIGINT and SIGTERM at their
defaults, and either signal to this process is passed on as a SIGINT to that whole group: the
Ctrl-C of a terminal. This process gets a SIGTERM when the one that started it ends (``make``,
killed), and ``dagster dev`` one when this process ends (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from rag_pipeline.core.runtime.processes import (
    recorded_signals,
    restore_default_interrupts,
    set_parent_death_signal,
)
from rag_pipeline.project_paths import dagster_home, dagster_home_line

POLL_SECONDS = 0.2


def _started() -> None:
    """In the child before ``dagster dev`` runs: default interrupts, and SIGTERM when the
    process that started it ends, by any means."""
    restore_default_interrupts()
    set_parent_death_signal(signal.SIGTERM)


def main(arguments: list[str]) -> int:
    """Runs ``dagster dev <arguments>`` (the ``dagster`` beside this Python) to its end;
    returns its exit code. A new ``DAGSTER_HOME`` gets the project's ``dagster.yaml`` first (its
    run queue and pools), as ``index`` gives one; a home of files without one is named."""
    dagster = Path(sys.executable).with_name("dagster")
    if (line := dagster_home_line(dagster_home())) is not None:
        print(line, file=sys.stderr, flush=True)
    with recorded_signals() as latch:
        set_parent_death_signal(signal.SIGTERM)  # make ended (``kill`` of ``make dev``): stop too
        dev = subprocess.Popen([str(dagster), "dev", *arguments], start_new_session=True,
                               preexec_fn=_started)
        forwarded = False
        while dev.poll() is None:
            if latch.signum is not None and not forwarded:
                os.killpg(dev.pid, signal.SIGINT)
                forwarded = True
            try:
                dev.wait(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass
    return dev.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
