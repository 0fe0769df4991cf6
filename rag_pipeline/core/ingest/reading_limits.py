"""The time and the memory one document's reading may take (``[index] max_document_seconds``;
:data:`MAX_READING_MEMORY`).

A reader's time and memory can grow faster than its file: a paragraph of unclosed emphasis
takes docutils time growing with the square of its length, a regular expression may backtrack,
and 0.2 MiB of reStructuredText references (``a_ a_ a_ ...``) become a 330 MiB tree. Each
document is read under :func:`document_reading_limits`: past either limit its reader is stopped
and the document fails with the limit as its reason, and the run goes on with the next one.

The clock is the process's interval timer (``SIGALRM``), ticking every :data:`TICK_SECONDS`
while a reading runs; its handler, which Python runs in the main thread between two of its
instructions, stops the reader when its time is up or the process's resident memory has grown by
more than :data:`MAX_READING_MEMORY` since the reading began (Linux: ``/proc/self/statm``;
elsewhere time alone). Memory the process holds free (the allocator keeps what earlier readings
freed) is taken again without growing it: a reading may hold that much more. A reader is stopped
when it next runs Python code (a library's C code runs to its end first). That code may be a
callback the garbage collector runs meanwhile, whose exceptions Python prints and drops, so the
next tick tells it again until the reader has stopped. A corpus run reads in its main thread;
anywhere else (a service's worker thread), and on a system without interval timers (Windows),
reading has no limit.

Limits nest: a container's reading (an archive's listing, a mail's header and body) and each of
its members' is limited alone, the container's clock stopped while a member is read (what the
member's reading kept in memory is not counted as the container's); the members of one file
together get a multiple of the time limit (``ContainerLimits.max_reading_multiple``). OCR has
its own limits (per page, per document and per run: :mod:`rag_pipeline.core.ingest.pdf_ocr`),
and the clock stops while a document's pages are OCR'd (:func:`clock_stopped`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from rag_pipeline.core.ingest.extracted import ExtractionError

DEFAULT_MAX_DOCUMENT_SECONDS = 600.0
"""Ten minutes: a 480-page PDF manual (1.8 MiB) is read in 15 s here, so a text PDF at the
20 MiB size limit takes about 170 s."""

TIMED_OUT = "reading took over"
"""How the failure of a document stopped by its time or memory limit begins."""
TICK_SECONDS = 0.25
"""How often a running reading's time and memory are looked at."""
MAX_READING_MEMORY = 1 << 30
"""1 GiB: how much a reading may add to the process's resident memory. Parsers' trees take up
to a few KB a node (docutils 5 KB a reference, lxml about 1 KB an element), so files within the
size limit can need tens of GiB; a 2 MiB reStructuredText manual takes about 90 MiB."""


class _TimeUp(BaseException):
    """Raised into the reader when its time is up; a ``BaseException``, so that no reader's
    ``except Exception`` takes it for an error of its own and goes on."""


class _MemoryUp(BaseException):
    """Raised into the reader when its memory is over the limit (as :class:`_TimeUp`)."""


def _resident_bytes() -> int | None:
    """The process's resident memory, None where it cannot be read (no ``/proc``)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass
class _Clock:
    """One document's clock: the seconds it has ``left``, running since ``since`` (None:
    stopped), and the resident memory its reading's growth is counted from (``memory_base``;
    None: not measured), the memory when it was stopped (``stopped_at``)."""

    left: float
    since: float | None = None
    memory_base: int | None = None
    stopped_at: int | None = None

    def start(self) -> None:
        resident = _resident_bytes()
        if self.memory_base is None or self.stopped_at is None or resident is None:
            self.memory_base = resident
        else:  # what was kept while it was stopped (a member's records) is not this reading's
            self.memory_base += max(resident - self.stopped_at, 0)
        self.since = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, max(min(self.left, TICK_SECONDS), 1e-6),
                         TICK_SECONDS)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.stopped_at = _resident_bytes()
        if self.since is not None:
            self.left -= time.monotonic() - self.since
            self.since = None

    def time_is_up(self) -> bool:
        return self.since is not None and time.monotonic() - self.since >= self.left

    def memory_is_up(self) -> bool:
        if self.memory_base is None:
            return False
        resident = _resident_bytes()
        return resident is not None and resident - self.memory_base > MAX_READING_MEMORY


_clocks: list[_Clock] = []
"""The clocks of the documents being read, innermost last: only the last one runs."""


_OWN_CODE = frozenset({__name__, "contextlib"})
"""Modules whose code starts and ends a limit (this one's, and the ``with`` statement's
``contextlib``): a signal coming while they run would escape the limit, so it waits for the
next one (a reader whose time is up is told again, :data:`TICK_SECONDS` later; a reading
that has ended stops its clock first)."""


def _tick(signum: int, frame: FrameType | None) -> None:
    if not _clocks or _clocks[-1].since is None:
        return
    if frame is not None and frame.f_globals.get("__name__") in _OWN_CODE:
        return
    if _clocks[-1].time_is_up():
        raise _TimeUp
    if _clocks[-1].memory_is_up():
        raise _MemoryUp


def timed_here() -> bool:
    """Reading here can be timed: this is the main thread, where Python runs signal handlers,
    of a system with interval timers (not Windows)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def document_reading_limits(seconds: float | None) -> Iterator[None]:
    """Reads one document within ``seconds`` of wall time (None: no limit) and
    :data:`MAX_READING_MEMORY` of memory.

    Outside the main thread there is no limit (:func:`timed_here`). A limit around another stops
    the outer clock while the inner one runs. The process's own ``SIGALRM`` handler and timer, if
    any, are put back when the outermost limit ends, less the time spent.

    Raises:
        ExtractionError: The reading took longer than ``seconds``, or more memory.
    """
    if seconds is None or not timed_here():
        yield
        return
    outer = _clocks[-1] if _clocks else None
    began = time.monotonic()
    if outer is not None:
        outer.stop()
        handler = None
        delay, interval = 0.0, 0.0
    else:
        handler = signal.signal(signal.SIGALRM, _tick)
        delay, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    clock = _Clock(seconds)
    _clocks.append(clock)
    clock.start()
    try:
        yield
    except _TimeUp:
        raise ExtractionError(f"{TIMED_OUT} {seconds:g} s (max_document_seconds): its reader "
                              "was stopped; the file may be built to break readers, or raise the "
                              "limit and read it again with --retry-failed") from None
    except _MemoryUp:
        raise ExtractionError(f"{TIMED_OUT} {MAX_READING_MEMORY >> 20:,} MiB of memory: its "
                              "reader was stopped; the file holds more structure than a "
                              "document is read with (dense markup, a parser's tree of "
                              "millions of nodes), or is built to break readers") from None
    finally:
        clock.stop()
        _clocks.pop()
        if outer is not None:
            outer.start()
        else:
            signal.signal(signal.SIGALRM, handler)
            if delay:
                signal.setitimer(signal.ITIMER_REAL, max(delay - (time.monotonic() - began), 1e-6),
                                 interval)


@contextmanager
def clock_stopped() -> Iterator[None]:
    """The document being read is not timed meanwhile (its pages are OCR'd, under OCR's own
    limits)."""
    clock = _clocks[-1] if _clocks and timed_here() else None
    if clock is None or clock.since is None:
        yield
        return
    clock.stop()
    try:
        yield
    finally:
        clock.start()


__all__ = ["DEFAULT_MAX_DOCUMENT_SECONDS", "MAX_READING_MEMORY", "TICK_SECONDS", "TIMED_OUT",
           "clock_stopped", "document_reading_limits",
           "timed_here"]
