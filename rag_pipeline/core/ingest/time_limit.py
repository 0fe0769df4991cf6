"""The time one document's reading may take (``[index] max_document_seconds``).

A reader's time can grow faster than its file: a paragraph of unclosed emphasis takes docutils
time growing with the square of its length, a regular expression may backtrack. Each document
is read under :func:`document_time_limit`: past the limit its reader is stopped and the
document fails with the limit as its reason, and the run goes on with the next one.

The clock is the process's interval timer (``SIGALRM``), whose handler Python runs in the main
thread between two of its instructions: a reader is stopped when it next runs Python code (a
library's C code runs to its end first). That code may be a callback the garbage collector runs
meanwhile, whose exceptions Python prints and drops, so once the time is up the signal comes
again every :data:`AGAIN_SECONDS` until the reader has stopped. A corpus run reads in its main
thread; anywhere else (a service's worker thread), and on a system without interval timers
(Windows), reading has no time limit.

Limits nest: a container's reading (an archive's listing, a mail's header and body) and each of
its members' is timed alone, the container's clock stopped while a member is read; the members
of one file together get a multiple of the limit (``ContainerLimits.max_reading_multiple``). OCR has its
own limits (per page, per document and per run: :mod:`rag_pipeline.core.ingest.pdf_ocr`), and
the clock stops while a document's pages are OCR'd (:func:`clock_stopped`).
"""

from __future__ import annotations

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
"""How the failure of a document stopped by its time limit begins."""
AGAIN_SECONDS = 1.0
"""How often a reader whose time is up is told again."""


class _TimeUp(BaseException):
    """Raised into the reader when its time is up; a ``BaseException``, so that no reader's
    ``except Exception`` takes it for an error of its own and goes on."""


@dataclass
class _Clock:
    """One document's clock: the seconds it has ``left``, running since ``since`` (None:
    stopped)."""

    left: float
    since: float | None = None

    def start(self) -> None:
        self.since = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, max(self.left, 1e-6), AGAIN_SECONDS)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if self.since is not None:
            self.left -= time.monotonic() - self.since
            self.since = None


_clocks: list[_Clock] = []
"""The clocks of the documents being read, innermost last: only the last one runs."""


_OWN_CODE = frozenset({__name__, "contextlib"})
"""Modules whose code starts and ends a limit (this one's, and the ``with`` statement's
``contextlib``): a signal coming while they run would escape the limit, so it waits for the
next one (a reader whose time is up is told again, :data:`AGAIN_SECONDS` later; a reading
that has ended stops its clock first)."""


def _time_up(signum: int, frame: FrameType | None) -> None:
    if not _clocks or _clocks[-1].since is None:
        return
    if frame is not None and frame.f_globals.get("__name__") in _OWN_CODE:
        return
    raise _TimeUp


def timed_here() -> bool:
    """Reading here can be timed: this is the main thread, where Python runs signal handlers,
    of a system with interval timers (not Windows)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def document_time_limit(seconds: float | None) -> Iterator[None]:
    """Reads one document within ``seconds`` of wall time (None: no limit).

    Outside the main thread there is no limit (:func:`timed_here`). A limit around another stops
    the outer clock while the inner one runs. The process's own ``SIGALRM`` handler and timer, if
    any, are put back when the outermost limit ends, less the time spent.

    Raises:
        ExtractionError: The reading took longer than ``seconds``.
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
        handler = signal.signal(signal.SIGALRM, _time_up)
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


__all__ = ["DEFAULT_MAX_DOCUMENT_SECONDS", "TIMED_OUT", "clock_stopped", "document_time_limit",
           "timed_here"]
