"""The guard of a ``rag-pipeline index`` that runs its runs itself: what the command started is
marked ended even when the command is killed.

``python -m rag_pipeline.orchestration.index_guard --parent PID --since T`` asks the kernel for
SIGTERM when its parent ends (``PR_SET_PDEATHSIG``, so even ``kill -9`` of the command is seen)
and also polls the parent's pid. The command's run processes die with it (each asks the kernel
for SIGKILL when the command ends); when the parent ends without releasing the guard first
(SIGUSR1, sent at every end the command itself handles), the guard marks canceled every run
created since ``T`` that had not ended, so no run of a dead command stays "started" in the
Dagster UI. It inherits the command's instance lock, so the next ``index`` waits until this
clean-up is over. :func:`guard` is the command's side: it starts the guard and releases it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rag_pipeline.core.runtime.processes import pid_alive, set_parent_death_signal
from rag_pipeline.orchestration.index_worker import RUNS_LOG
from rag_pipeline.project_paths import PROJECT_ROOT

POLL_SECONDS = 0.2


@contextmanager
def guard(home: Path, since: float, lock_fd: int | None = None) -> Iterator[None]:
    """Runs the guard of this process for the block, holding ``lock_fd`` (the instance lock)
    until its clean-up is over; released at the block's end, however it ends, so only a
    command that dies without unwinding leaves the guard work to do."""
    command = [sys.executable, "-m", "rag_pipeline.orchestration.index_guard",
               "--parent", str(os.getpid()), "--since", repr(since)]
    with (home / RUNS_LOG).open("ab") as log:
        process = subprocess.Popen(command, cwd=PROJECT_ROOT,
                                   env={**os.environ, "DAGSTER_HOME": str(home)}, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   pass_fds=() if lock_fd is None else (lock_fd,))
    try:
        yield
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGUSR1)
        process.wait()


def cancel_runs_since(since: float, message: str) -> list[str]:
    """Marks canceled every run of the instance (``DAGSTER_HOME``) created since ``since``
    that has not ended; returns their ids."""
    import dagster as dg

    from rag_pipeline.orchestration.index_launch import ACTIVE

    canceled = []
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(
            statuses=list(ACTIVE), created_after=datetime.fromtimestamp(since, UTC)))
        for run in runs:
            instance.report_run_canceled(run, message)
            canceled.append(run.run_id)
    return canceled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.orchestration.index_guard")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--since", type=float, required=True)
    args = parser.parse_args(argv)
    released: list[bool] = []
    stop: list[str] = []

    def on_release(signum: int, frame: object) -> None:
        released.append(True)

    def on_signal(signum: int, frame: object) -> None:
        stop.append(signal.Signals(signum).name)

    signal.signal(signal.SIGUSR1, on_release)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    set_parent_death_signal(signal.SIGTERM)
    while not released and not stop and pid_alive(args.parent) and os.getppid() == args.parent:
        time.sleep(POLL_SECONDS)
    if released:
        return 0
    ended = not pid_alive(args.parent) or os.getppid() != args.parent
    reason = f"rag-pipeline index (pid {args.parent}) ended" if ended or not stop \
        else f"the guard of rag-pipeline index (pid {args.parent}) got {stop[0]}"
    canceled = cancel_runs_since(args.since, f"{reason} before its runs did")
    print(f"index guard: {reason}; marked {len(canceled)} run(s) canceled", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
