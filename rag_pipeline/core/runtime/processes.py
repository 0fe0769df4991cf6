"""Processes of this machine: whether one is alive, the members of a process group, a
parent-death signal, a child stopped politely then by force, a lock file that names its
holder, another process's environment.

Linux only where it reads ``/proc`` or calls ``prctl`` (the project's deployment target).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal this process gets when the thread that forked it ends."""


def pid_alive(pid: int) -> bool:
    """True while a process with this id exists and is not a zombie (signal 0 probes without
    signalling; a zombie has ended and only waits to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _state(pid) not in ("Z", "X", None)


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name (which may hold spaces and parentheses)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def _state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def process_ids() -> Iterator[int]:
    """The ids of this machine's processes (``/proc``), zombies included."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def group_members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (zombies excluded), sorted."""
    members = []
    for pid in process_ids():
        fields = _stat_fields(pid)
        # Fields after the name: state, ppid, pgrp, ...
        if fields and len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in "ZX":
            members.append(pid)
    return sorted(members)


def set_parent_death_signal(signum: int = signal.SIGTERM) -> None:
    """Asks the kernel to send ``signum`` to this process when its parent ends, even by
    ``kill -9`` (``prctl(PR_SET_PDEATHSIG)``).

    Raises:
        OSError: If the kernel refuses.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def restore_default_interrupts() -> None:
    """Gives SIGINT and SIGTERM their default handling when this process inherited them ignored.

    A shell without job control starts a background job (``cmd &``, a CI runner's step) with
    SIGINT ignored, and Dagster's daemon, code servers and run workers map SIGTERM to whatever
    SIGINT does (``setup_interrupt_handlers``): started from such a process, every one of them
    would ignore SIGTERM, so a request to stop them would wait out its grace period and end in
    SIGKILL. Called at the process edges (the CLI, the test session), before any child starts.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def stop_process(process: subprocess.Popen, timeout: float, group: bool = False) -> None:
    """Asks ``process`` to end (SIGTERM), waits ``timeout`` seconds, then kills it (SIGKILL)
    and reaps it; a process that has already ended is only reaped. With ``group`` both signals
    go to its process group (a process started with ``start_new_session``: a server or daemon
    and the workers it started)."""
    if process.poll() is not None:
        return
    if group:
        os.killpg(process.pid, signal.SIGTERM)
    else:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        if group:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
        process.wait()


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lock file: its process id, when it took the lock, and what it does."""

    pid: int
    started_at: str
    command: str

    def describe(self) -> str:
        alive = "" if pid_alive(self.pid) else ", now gone: its clean-up is finishing"
        return f"pid {self.pid}, started {self.started_at}{alive}"


class LockHeldError(Exception):
    """The lock is held by another process; the message names it."""

    def __init__(self, path: Path, holder: LockHolder | None) -> None:
        self.path = path
        self.holder = holder
        who = holder.describe() if holder else "holder unknown"
        super().__init__(f"{holder.command if holder else 'another process'} holds {path} "
                         f"({who})")


def lock_holder(path: Path) -> LockHolder | None:
    """Who last took the lock file ``path`` (``None``: never taken, or unreadable); whether it
    still holds it is :func:`pid_alive` of its pid."""
    return _read_holder(path)


def _read_holder(path: Path) -> LockHolder | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return LockHolder(int(data["pid"]), str(data["started_at"]), str(data["command"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextmanager
def exclusive_lock(path: Path, command: str, wait_seconds: float = 0.0) -> Iterator[int]:
    """Holds an exclusive ``flock`` on ``path`` for the block and writes the holder (this pid,
    the time, ``command``) into it. The kernel releases the lock when every descriptor of it is
    closed, so a killed holder never leaves it taken. Yields the descriptor (a child process
    given it keeps the lock until it ends too).

    Waits up to ``wait_seconds`` while the holder is gone (a child of it still finishes its
    clean-up); a live holder is refused at once.

    Raises:
        LockHeldError: If another process holds the lock.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            holder = _read_holder(path)
            if (holder is not None and pid_alive(holder.pid)) or time.monotonic() >= deadline:
                raise LockHeldError(path, holder)
            time.sleep(0.2)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "started_at": stamp,
                                  "command": command}).encode(), 0)
        yield fd
    finally:
        os.close(fd)


def lock_held(path: Path) -> bool:
    """Whether a process holds the ``flock`` of the lock file ``path`` now (a lock of
    :func:`exclusive_lock`; what :func:`lock_holder` reads is only who took it last)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def process_environment(pid: int) -> tuple[dict[str, str], Path] | None:
    """Another process's environment and working folder (Linux ``/proc``), or None when they
    cannot be read (the process is gone, or not this user's)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None
    environ = {}
    for entry in raw:
        name, sep, value = entry.partition(b"=")
        if sep:
            environ[os.fsdecode(name)] = os.fsdecode(value)
    return environ, cwd


class Stopped(Exception):
    """A recorded SIGINT or SIGTERM, raised by :meth:`SignalLatch.checkpoint` at a point the
    command chose (never from inside the handler)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        """What a shell reports for a process ended by the signal: 128 + its number."""
        return 128 + self.signum


class SignalLatch:
    """Records the first of the signals it handles and nothing else: a handler that raised
    would raise inside whatever library frame runs when the signal lands (a database
    connection's close, a ``subprocess`` wait), where the exception is caught, printed and lost.
    The command calls :meth:`checkpoint` where it can stop cleanly.

    Attributes:
        signum: The first signal received, or None.
    """

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self, signum: int, frame: object) -> None:
        if self.signum is None:
            self.signum = signum

    def checkpoint(self) -> None:
        """Raises :class:`Stopped` once a signal was recorded.

        Raises:
            Stopped: If a signal was received.
        """
        if self.signum is not None:
            raise Stopped(self.signum)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""What stops a long command in order: Ctrl-C, a kill, the terminal it runs in closed (an SSH
session ended)."""


@contextmanager
def recorded_signals(signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM),
                     ) -> Iterator[SignalLatch]:
    """Handles ``signums`` with one :class:`SignalLatch` for the block; the previous handlers
    come back after it. A signal that arrives while the block unwinds is still recorded."""
    latch = SignalLatch()
    previous = {s: signal.signal(s, latch) for s in signums}
    try:
        yield latch
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
