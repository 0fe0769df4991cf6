"""Whether a process of this machine is still alive (to recognise what a killed run left)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while a process with this id exists (signal 0 probes without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
