"""The guard of the Dagster daemon that ``rag-pipeline index`` starts: the daemon lives exactly
as long as the command that started it.

``python -m rag_pipeline.orchestration.index_guard --parent PID --since T -- dagster-daemon run ...`` runs in
its own session (so its process group holds the daemon, its code servers and every run worker
they start), asks the kernel for SIGTERM when its parent ends (``PR_SET_PDEATHSIG``, so even
``kill -9`` of the command is seen) and also polls the parent's pid. When the parent ends, when
it is told to stop (SIGTERM, SIGINT, SIGHUP) or when the daemon exits, it kills the code servers
and runs first (so nothing new is launched or published), then the daemon (SIGTERM, then
SIGKILL), then every process left in its group, and marks canceled every run created since
``T`` that had not ended. It inherits the command's instance lock, so the next ``index`` waits
until this clean-up is over.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

from rag_pipeline.core.runtime.processes import (
    group_members,
    kill_group,
    pid_alive,
    set_parent_death_signal,
    stop_process,
)

DAEMON_STOP_SECONDS = 10.0
POLL_SECONDS = 0.2


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


def stop_group(daemon: subprocess.Popen) -> None:
    """Kills the group's runs and code servers, then the daemon, then whatever is left."""
    me, group = os.getpid(), os.getpgid(0)
    for pid in group_members(group):
        if pid not in (me, daemon.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    stop_process(daemon, DAEMON_STOP_SECONDS)
    kill_group(group, spare=me)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.orchestration.index_guard")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--since", type=float, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    stop: list[str] = []

    def on_signal(signum: int, frame: object) -> None:
        stop.append(signal.Signals(signum).name)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != args.parent:  # the parent ended before the request reached the kernel
        return 0
    daemon = subprocess.Popen(command)
    while not stop and daemon.poll() is None and pid_alive(args.parent) \
            and os.getppid() == args.parent:
        time.sleep(POLL_SECONDS)
    reason = (f"signal {stop[0]}" if stop else
              f"the daemon exited with code {daemon.returncode}" if daemon.poll() is not None
              else f"rag-pipeline index (pid {args.parent}) ended")
    stop_group(daemon)
    canceled = cancel_runs_since(args.since, f"stopped with the Dagster daemon of rag-pipeline "
                                             f"index (pid {args.parent}): {reason}")
    print(f"index guard: {reason}; stopped the daemon and its processes; marked "
          f"{len(canceled)} run(s) canceled", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
