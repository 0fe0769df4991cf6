"""The worker of a ``rag-pipeline index`` that runs its runs itself: one process that runs them
one after the other, as the command sends them; :class:`IndexWorker` is the command's handle
on it (imported before Dagster: the worker starts first).

``python -m rag_pipeline.orchestration.index_worker --parent PID --requests FD --replies FD``
loads the code location the daemon would load (``--definitions``, default
``rag_pipeline.definitions:defs``, built from the ``RAG_PIPELINE_*`` variables it is started
with) while the command opens the instance, then opens the instance itself and reads ``(job,
partition, run config, tags, run id, models to load)`` requests from the pipe ``--requests``,
runs each on the instance of ``DAGSTER_HOME`` (``execute_in_process``, its pid in the run's
tag ``rag_pipeline/pid``) and writes whether it succeeded to ``--replies``. What a run loaded
stays for the next: the model is loaded once for every partition and the evaluation
(:func:`~rag_pipeline.core.embedding.embedder.load_embedder`). It asks the kernel for SIGKILL
when the command ends (``PR_SET_PDEATHSIG``) and ends at the end of the requests, without the
interpreter's teardown.

A process of its own (started, not forked: the command's threads, a database connection or a
lock held at the moment of a fork could hang it).
"""

from __future__ import annotations

import argparse
import fcntl
import importlib
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

from rag_pipeline.core.runtime.processes import lock_held, set_parent_death_signal
from rag_pipeline.project_paths import INDEX_LOCK, PROJECT_ROOT

if TYPE_CHECKING:
    import dagster as dg

    from rag_pipeline.core.embedding.models import ModelSpec

DEFAULT_DEFINITIONS = "rag_pipeline.definitions:defs"
RUNS_LOG = "rag-pipeline-runs.log"
"""In the Dagster home: what the worker prints (Dagster's console log of each run, a crash)."""
RUNS_LOG_KEEP_BYTES = 16 * 2**20
"""A runs log past this size is moved to ``rag-pipeline-runs.log.1`` (the one before it
dropped) when the next worker starts."""
WORKER_STOP_SECONDS = 60.0
"""How long an idle worker told to end may take before it is killed."""


class IndexWorker:
    """The worker process of the runs (:mod:`rag_pipeline.orchestration.index_worker`), started
    as soon as the command knows its environment, so it loads the code location while the
    command takes its lock, opens the instance and loads its own. In a session of its own, so a terminal's
    Ctrl-C (sent to the whole foreground group) reaches the command alone, which kills the
    worker and marks its run canceled (Dagster's own interrupt handling in the worker would
    mark the run failed first, if it won the race). A context manager: the worker ends with
    the block (killed, if it never ran a run: it holds nothing yet)."""

    def __init__(self, env: Mapping[str, str], log_path: Path,
                 definitions: str = DEFAULT_DEFINITIONS) -> None:
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        rotate(log_path, busy=log_path.parent / INDEX_LOCK)
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "rag_pipeline.orchestration.index_worker",
                 "--parent", str(os.getpid()), "--requests", str(requests_read),
                 "--replies", str(replies_write), "--definitions", definitions],
                cwd=PROJECT_ROOT, env=dict(env), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
                pass_fds=(requests_read, replies_write))
        os.close(requests_read)
        os.close(replies_write)
        self.requests = Connection(requests_write, readable=False)
        self.replies = Connection(replies_read, writable=False)
        self.ran = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def __enter__(self) -> IndexWorker:
        """For the block, a terminal's stop (Ctrl-Z: SIGTSTP, which reaches the command alone)
        stops the worker too, and ``fg``/``bg`` (SIGCONT) continues it (handlers set in the
        main thread only)."""
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            self._previous = {signal.SIGTSTP: signal.signal(signal.SIGTSTP, self._stop_too),
                              signal.SIGCONT: signal.signal(signal.SIGCONT, self._continue_too)}
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.close()
        finally:
            # SIGCONT's first: its handler sets SIGTSTP's again.
            for signum, handler in reversed(self._previous.items()):
                signal.signal(signum, handler)

    def _stop_too(self, signum: int, frame: object) -> None:
        """Stops the worker, then this process as the terminal asked; continues the worker
        when this process continues, or at once when the kernel does not stop it (a process
        group with no shell to continue it, "orphaned", is not stopped by SIGTSTP). The
        worker alone is stopped, not its group: the compute-log tails Dagster starts in it end
        with the worker, and a stopped one left by a killed worker would stay stopped."""
        self._signal_worker(signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        try:
            os.kill(os.getpid(), signal.SIGTSTP)  # stops here, until SIGCONT
        finally:
            signal.signal(signal.SIGTSTP, self._stop_too)
            self._signal_worker(signal.SIGCONT)

    def _continue_too(self, signum: int, frame: object) -> None:
        """Continues the worker (a SIGSTOP then SIGCONT that the command got from elsewhere, or
        the continuation of :meth:`_stop_too`'s own stop, whose handler may run before that
        method's ``finally``): the stop handler is set again first, so a Ctrl-Z that comes as
        soon as the worker runs stops the worker too, not the command alone."""
        signal.signal(signal.SIGTSTP, self._stop_too)
        self._signal_worker(signal.SIGCONT)

    def _signal_worker(self, signum: int) -> None:
        if self.process.poll() is None:
            try:
                os.kill(self.process.pid, signum)
            except ProcessLookupError:
                pass

    def send(self, order: tuple) -> None:
        self.ran = True
        self.requests.send(order)

    def kill(self) -> None:
        """Kills the worker and what it started (it leads its own process group: Dagster's
        compute-log tails); a run it was running is left to the caller to mark."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def close(self) -> None:
        """Tells an idle worker to end and waits for it; kills one that never ran a run."""
        if self.process.poll() is None:
            if not self.ran:
                self.kill()
            else:
                try:
                    self.requests.send(None)
                except OSError:
                    pass
        for end in (self.requests, self.replies):
            if not end.closed:
                end.close()
        try:
            self.process.wait(timeout=WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()


INSTANCE_OPEN_LOCK = ".rag-pipeline-instance-open.lock"
"""In the Dagster home: held while the command or its worker opens the instance."""
INSTANCE_OPEN_WAIT_SECONDS = 60.0
INSTANCE_OPEN_SAY_SECONDS = 5.0
"""An open takes about a second; a wait this long is said."""


def open_instance(home: Path, wait_seconds: float = INSTANCE_OPEN_WAIT_SECONDS,
                  waiting: Callable[[str], None] | None = None,
                  say_after: float = INSTANCE_OPEN_SAY_SECONDS) -> dg.DagsterInstance:
    """The Dagster instance of ``home``, opened while holding :data:`INSTANCE_OPEN_LOCK`: the
    command and its worker open it at the same time, and Dagster creates a fresh home's SQLite
    tables and stamps their schema version on first open, unguarded against a second process
    doing the same at that moment. A holder that takes longer than ``wait_seconds`` is not
    waited for further; ``waiting`` is told in one line when the wait passes ``say_after``."""
    import dagster as dg

    lock = home / INSTANCE_OPEN_LOCK
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        began = time.monotonic()
        said = waiting is None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - began
                if waited >= wait_seconds:
                    break
                if not said and waited >= say_after:
                    waiting(f"waiting for another process opening the Dagster instance (it holds "
                            f"{lock}; going ahead without it after {wait_seconds:.0f} s)")
                    said = True
                time.sleep(0.02)
        return dg.DagsterInstance.from_config(str(home))
    finally:
        os.close(fd)


def rotate(log_path: Path, keep_bytes: int = RUNS_LOG_KEEP_BYTES,
           busy: Path | None = None) -> None:
    """Moves a log grown past ``keep_bytes`` to ``<name>.1``, replacing the one there; not
    while a process holds the lock file ``busy`` (the index lock: another index writes to the
    log now)."""
    if busy is not None and lock_held(busy):
        return
    try:
        if log_path.stat().st_size > keep_bytes:
            log_path.replace(log_path.with_name(log_path.name + ".1"))
    except FileNotFoundError:
        pass


def load_definitions(target: str):
    """The ``Definitions`` named ``module:attribute``."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute or "defs")


_LOADED_AHEAD: set[ModelSpec] = set()
"""The models a :func:`load_models` thread of this process has loaded or is loading."""
_LOADED_AHEAD_LOCK = threading.Lock()


def load_models(specs: Sequence[ModelSpec]) -> None:
    """Loads ``specs`` for the runs to come, a line each in the runs log; a model that fails to
    load is left for the run that needs it to report. A model another thread loads (or tried)
    ahead is skipped: a second chunks run's thread does not wait for that load and print it
    twice."""
    from rag_pipeline.core.embedding import embedder

    for spec in specs:
        with _LOADED_AHEAD_LOCK:
            if spec in _LOADED_AHEAD or embedder.is_loaded(spec):
                continue
            _LOADED_AHEAD.add(spec)
        began = time.monotonic()
        try:
            embedder.load_embedder(spec)
        except Exception as exc:  # noqa: BLE001 - the run that embeds with it says why
            print(f"rag-pipeline index: {spec.key} not loaded ahead ({type(exc).__name__}); "
                  "the run that embeds with it loads it", flush=True)
            continue
        print(f"rag-pipeline index: loaded {spec.key} for the runs after this one in "
              f"{time.monotonic() - began:.1f} s", flush=True)


def serve(requests: Connection, replies: Connection, definitions: str) -> None:
    """Runs each requested run in order and replies with its success, until the requests end
    (``None``, or the command closed its end)."""
    from rag_pipeline.orchestration.run_tags import PID_TAG

    # The code location first, then the instance: the command opens the instance (on a fresh
    # Dagster home it creates the instance's databases, 1.5 to 2 s) while this loads the
    # code location, then loads its own; this opens the instance the command made.
    defs = load_definitions(definitions)
    instance = open_instance(Path(os.environ["DAGSTER_HOME"]))
    try:
        while True:
            try:
                order = requests.recv()
            except EOFError:
                return
            if order is None:
                return
            job_name, partition_key, run_config, tags, run_id, warm = order
            if warm:
                threading.Thread(target=load_models, args=(warm,), daemon=True,
                                 name="load-models").start()
            try:
                result = defs.resolve_job_def(job_name).execute_in_process(
                    run_config=run_config, instance=instance, partition_key=partition_key,
                    raise_on_error=False, run_id=run_id,
                    tags={**tags, PID_TAG: str(os.getpid())})
                success = result.success
            except Exception:  # noqa: BLE001 - said in the log; the run is reported failed
                traceback.print_exc()
                success = False
            sys.stdout.flush()
            sys.stderr.flush()
            replies.send(success)
    finally:
        instance.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.orchestration.index_worker")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--replies", type=int, required=True)
    parser.add_argument("--definitions", default=DEFAULT_DEFINITIONS)
    args = parser.parse_args(argv)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != args.parent:  # the command ended before the request reached the kernel
        return 1
    serve(Connection(args.requests, writable=False), Connection(args.replies, readable=False),
          args.definitions)
    # Every run's writes are committed and the instance disposed: the interpreter's own
    # teardown (the model's runtime, thousands of modules) took 1.2 s the command waited for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
