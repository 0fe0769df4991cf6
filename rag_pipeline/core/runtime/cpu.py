"""The CPU this process runs on, as ``/proc/cpuinfo`` names it: what a runtime's timing and a
benchmark's figures are said to hold for."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CPUINFO", "Cpu", "this_cpu"]

CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class Cpu:
    """The CPU's model name and its feature flags (x86 ``flags``, Arm ``Features``)."""

    name: str
    flags: frozenset[str]


def this_cpu(cpuinfo: Path = CPUINFO) -> Cpu:
    """The first processor's model name and flags in ``cpuinfo``; without the file (or a name
    in it), the name :mod:`platform` gives and no flags."""
    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if value.strip():
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    return Cpu(name=name, flags=frozenset(fields.get("flags", fields.get("Features", "")).split()))
