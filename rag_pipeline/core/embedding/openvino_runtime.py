"""OpenVINO, imported with its usage telemetry declined for this process.

OpenVINO's model conversion (and NNCF's quantisation) send usage events to Google Analytics
unless the user opted out with ``opt_in_out --opt_out``; with no consent file they count as
consent. This project sends nothing anywhere. On a machine without a network the send also
does harm: it runs ``urlopen`` in a forked child that can block in DNS resolution, and the
parent then hangs at exit joining it (seen after a full test run here). The consent check is
declined for this process only; the user's own choice (``~/intel/openvino_telemetry``) is
neither read nor written.
"""

from __future__ import annotations

import threading
from functools import cache
from types import ModuleType


def openvino() -> ModuleType:
    """The ``openvino`` module, after :func:`decline_telemetry`."""
    decline_telemetry()
    import openvino as ov

    return ov


_core_lock = threading.Lock()
_core = None


def openvino_core():
    """The process's one ``openvino.Core``: every model this process compiles goes through it,
    and it lives as long as the process.

    OpenVINO recommends one Core per application (its ``read_model`` and ``compile_model`` may
    be called from several threads at once: openvinotoolkit/openvino#27366); here it keeps signals
    deliverable. Each Core's CPU plugin gives the thread that first compiles on it an
    alternate signal stack of its own, and on being freed puts back the stack it found,
    unmapping its own. Two Cores made on one thread and freed in the order they were made
    leave that thread's alternate stack pointing at unmapped memory, and the next signal the
    thread handles (SIGTERM to the process, SIGINT) kills the process with SIGSEGV instead
    (OpenVINO 2026.4; ``test_openvino_runtime.py`` holds it). Threads asking at once get the
    same Core."""
    global _core
    with _core_lock:
        if _core is None:
            _core = openvino().Core()
        return _core


@cache
def decline_telemetry() -> bool:
    """Makes every OpenVINO telemetry consent check of this process answer "declined", so no
    event is sent and no client id is written. False when the telemetry package is absent
    (then nothing is sent anyway)."""
    try:
        from openvino_telemetry.utils.opt_in_checker import ConsentCheckResult, OptInChecker
    except ImportError:
        return False

    def declined(self, *args, **kwargs) -> ConsentCheckResult:
        return ConsentCheckResult.DECLINED

    OptInChecker.check = declined
    return True
