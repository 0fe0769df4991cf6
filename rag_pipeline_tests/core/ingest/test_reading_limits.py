"""The limits of one document's reading: a reader stopped in Python code at its time or its
memory, limits nested, the clock stopped for OCR, the process's own alarm put back, no limit off
the main thread."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rag_pipeline.core.ingest import ExtractionError, ExtractionSettings, extract_corpus
from rag_pipeline.core.ingest.pdf_ocr import tesseract_version
from rag_pipeline.core.ingest.reading_limits import clock_stopped, document_reading_limits
from rag_pipeline_tests.core.ingest.archives import zipped

STOPPED = ("reading took over 0.3 s (max_document_seconds): its reader was stopped; the file may "
           "be built to break readers, or raise the limit and read it again with --retry-failed")
SLOW_RST = "Title\n=====\n\n" + "*a " * 20_000 + "\n"
"""60 KB of unclosed emphasis: docutils' inline parser takes 11 s on it here, its time growing
with the square of the paragraph's length."""


def _spin(seconds: float) -> None:
    """Python code that runs ``seconds`` and swallows every ``Exception`` it meets."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            sum(range(1000))
        except Exception:  # noqa: BLE001, S112 (a reader that takes any error for its own)
            continue


def test_a_reader_in_python_code_is_stopped_at_the_limit_whatever_it_catches():
    began = time.monotonic()
    with pytest.raises(ExtractionError) as stopped:
        with document_reading_limits(0.3):
            _spin(30)
    assert str(stopped.value) == STOPPED
    assert time.monotonic() - began < 5


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_reader_is_told_again_when_its_time_came_up_in_code_that_drops_exceptions():
    """Seen in a full test run: the signal came while the garbage collector ran a weak
    reference's callback (SQLAlchemy's), whose exception Python printed and dropped, and the
    document was read to its end as if it had no limit."""
    class Dropping:
        def __del__(self) -> None:
            _spin(0.6)  # the time comes up in here; Python drops what __del__ raises

    began = time.monotonic()
    with pytest.raises(ExtractionError) as stopped:
        with document_reading_limits(0.3):
            Dropping()
            _spin(30)
    assert str(stopped.value) == STOPPED
    assert time.monotonic() - began < 5


def test_a_regular_expression_backtracking_is_stopped():
    import re

    with pytest.raises(ExtractionError, match="^reading took over 0.3 s"):
        with document_reading_limits(0.3):
            re.match(r"(a+)+$", "a" * 40 + "b")


def test_a_reading_within_its_limit_ends_with_no_timer_left():
    with document_reading_limits(5):
        _spin(0.05)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_a_members_time_is_not_its_containers():
    # The container reads 0.2 s itself, its member 0.4 s under its own limit: 0.6 s in all,
    # over the container's 0.3 s, but the container's own time is not.
    with document_reading_limits(0.3):
        _spin(0.1)
        with document_reading_limits(0.3):
            _spin(0.2)
        with document_reading_limits(0.3):
            _spin(0.2)
        _spin(0.1)
    with pytest.raises(ExtractionError, match="^reading took over 0.3 s"):
        with document_reading_limits(0.3):
            with document_reading_limits(5):
                _spin(0.1)
            _spin(30)


def test_the_clock_stops_while_pages_are_ocrd():
    with document_reading_limits(0.3):
        with clock_stopped():
            time.sleep(0.5)
        _spin(0.1)
    with pytest.raises(ExtractionError, match="^reading took over 0.3 s"):
        with document_reading_limits(0.3):
            with clock_stopped():
                time.sleep(0.1)
            _spin(30)


def test_the_processs_own_alarm_is_put_back_less_the_time_spent():
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with pytest.raises(ExtractionError):
            with document_reading_limits(0.3):
                _spin(30)
        left, interval = signal.getitimer(signal.ITIMER_REAL)
        assert 29 < left < 29.8 and interval == 0
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        time.sleep(0.2)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_reading_has_no_limit():
    outcome: list[str] = []

    def read() -> None:
        with document_reading_limits(0.1):
            _spin(0.3)
        outcome.append("read")

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(10)
    assert outcome == ["read"]


def test_a_corpus_run_fails_the_slow_document_alone_and_keeps_the_failure(tmp_path: Path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "slow.rst").write_text(SLOW_RST, encoding="utf-8")
    (root / "fine.md").write_text("# Fine\n\nA fine document.\n", encoding="utf-8")
    (root / "bundle.zip").write_bytes(zipped({"inner/slow.rst": SLOW_RST,
                                              "inner/ok.md": "# Ok\n\nOk text.\n"}))
    settings = ExtractionSettings(max_document_seconds=0.3)
    began = time.monotonic()
    first = extract_corpus(root, settings=settings)
    spent = time.monotonic() - began
    assert [(r.document_id, r.status, r.error) for r in first.records] == [
        ("bundle.zip", "ok", None), ("bundle.zip/inner/slow.rst", "failed", STOPPED),
        ("bundle.zip/inner/ok.md", "ok", None), ("fine.md", "ok", None),
        ("slow.rst", "failed", STOPPED)]
    assert spent < 8
    # Unchanged, the failures stand: nothing is read again until the file changes.
    again = extract_corpus(root, first.records, settings)
    assert (again.reused, [r.error for r in again.records]) == (5, [r.error for r in first.records])
    with pytest.raises(ValueError, match="max_document_seconds must be positive, got 0"):
        ExtractionSettings(max_document_seconds=0)


@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed")
def test_an_images_ocr_is_not_counted_against_the_limit(tmp_path: Path):
    from rag_pipeline_tests.core.ingest.formats.test_image import encoded, whiteboard

    lines = [f"Gauge {n}: ship by Friday, then review costs." for n in range(1, 13)]
    (tmp_path / "board.png").write_bytes(encoded(whiteboard(lines, (1400, 1300)), "PNG",
                                                 dpi=(300, 300)))
    began = time.monotonic()
    (record,) = extract_corpus(tmp_path, settings=ExtractionSettings(max_document_seconds=0.2)).records
    assert time.monotonic() - began > 0.2  # Tesseract took longer than the limit (0.4 s here)
    assert (record.status, record.canonical_text.count("review costs.")) == ("ok", 12)


def test_a_reading_ending_as_its_time_runs_out_finishes_or_fails_never_escapes():
    """Found by an attack: a signal coming while the ``with`` statement ended the limit escaped
    it as its internal exception (19,997 of 20,000 readings, each ending at its limit), which
    no caller catches, and every later limit of the process failed the same way."""
    import random

    outcomes = {"read": 0, "failed": 0}
    for _ in range(3000):
        limit = 0.0005
        try:
            with document_reading_limits(limit):
                end = time.monotonic() + limit * random.uniform(0.97, 1.03)
                while time.monotonic() < end:
                    pass
            outcomes["read"] += 1
        except ExtractionError:
            outcomes["failed"] += 1
    assert sum(outcomes.values()) == 3000 and outcomes["failed"] > 0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


OVER_MEMORY = ("reading took over 1,024 MiB of memory: its reader was stopped; the file holds more "
               "structure than a document is read with (dense markup, a parser's tree of millions "
               "of nodes), or is built to break readers")


def _fresh_process(code: str) -> list[str]:
    """The lines ``code`` prints, run in a process of its own: the limit counts what a reading
    adds to the process's resident memory, and a test process holds memory earlier tests freed
    (the allocator keeps it), which a reading then takes without adding any."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


_HOLD = """
    import time
    from rag_pipeline.core.ingest import ExtractionError
    from rag_pipeline.core.ingest.reading_limits import MAX_READING_MEMORY, document_reading_limits

    def hold(mib, kept):  # 1 MiB at a time, written, so resident
        for _ in range(mib):
            kept.append(b"x" * (1 << 20))

    def spin(seconds):  # Python code running while the clock ticks
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            sum(range(1000))
"""


def test_a_reader_taking_more_than_the_memory_limit_is_stopped():
    """Found by a review of the readers' memory: 1.7 MiB of reStructuredText references became
    a docutils tree of several GiB, which no size or time limit stopped before the machine's
    memory ran out."""
    assert _fresh_process(_HOLD + """
    kept = []
    try:
        with document_reading_limits(600):
            hold((MAX_READING_MEMORY >> 20) + 256, kept)
            spin(30)  # the memory is taken faster than a tick: the next one stops it
        print("read")
    except ExtractionError as stopped:
        print(stopped)
    kept.clear()
    with document_reading_limits(600):  # within the limit: read
        hold(256, kept)
        spin(0.6)
    print("read within the limit")
    """) == [OVER_MEMORY, "read within the limit"]


def test_what_a_member_kept_is_not_its_containers_memory():
    assert _fresh_process(_HOLD + """
    kept = []
    with document_reading_limits(600):
        with document_reading_limits(600):
            hold(700, kept)  # the member's records, kept after its reading
            spin(0.3)
        hold(700, kept)  # the container's own: 700 MiB, 1,400 since it began
        spin(0.6)
    print("read")
    """) == ["read"]


def test_a_corpus_run_fails_the_memory_bomb_alone(tmp_path: Path):
    (tmp_path / "refs.rst").write_text("Refs\n====\n\n" + ("a_ " * 2000 + "\n\n") * 400,
                                       encoding="utf-8")
    (tmp_path / "fine.md").write_text("# Fine\n\nA fine document.\n", encoding="utf-8")
    assert _fresh_process(f"""
    from pathlib import Path
    from rag_pipeline.core.ingest import extract_corpus

    for record in extract_corpus(Path({str(tmp_path)!r})).records:
        print(record.document_id, record.status, record.error)
    """) == ["fine.md ok None", f"refs.rst failed {OVER_MEMORY}"]
