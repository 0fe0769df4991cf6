"""Tables of figures for the documentation, written by the benchmark that measured them.

A benchmark given ``--write-docs`` writes its tables to ``docs/measurements/<name>.md`` through
:func:`write_figures`, headed by when, on what machine and by which command they were measured,
so no figure in the documentation is typed by hand and none can go stale without its date
saying so. ``rag_pipeline_tests/benchmarks/test_figures.py`` checks every page there carries the
header.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rag_pipeline.core.config.root import PROJECT_ROOT
from rag_pipeline.core.runtime.cpu import CPUINFO, this_cpu

MEASUREMENTS_DIR = PROJECT_ROOT / "docs" / "measurements"
HEADER_PREFIX = "<!-- written by "
"""The first line of every generated page: which command wrote it (the test looks for it)."""
INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


@dataclass(frozen=True)
class Machine:
    """What the figures were measured on."""

    cpu: str
    cores: int
    flags: tuple[str, ...]
    load: tuple[float, float, float]

    def line(self) -> str:
        extras = ", ".join(self.flags) or "no int8 dot-product instructions (AVX2 or older)"
        load = ", ".join(f"{value:.2f}" for value in self.load)
        return f"{self.cpu}, {self.cores} cores ({extras}), load average {load} at the start"


def this_machine(cpuinfo: Path = CPUINFO) -> Machine:
    """The CPU model, the cores this process may use, its int8 instructions and the load."""
    cpu = this_cpu(cpuinfo)
    return Machine(cpu=cpu.name, cores=len(os.sched_getaffinity(0)),
                   flags=tuple(f for f in INT8_FLAGS if f in cpu.flags), load=os.getloadavg())


def command_line(argv: Sequence[str] | None = None) -> str:
    """``python -m <module> <arguments>`` as the benchmark was run."""
    argv = list(sys.argv if argv is None else argv)
    module = sys.modules["__main__"].__spec__
    head = f"python -m {module.name}" if module is not None else f"python {argv[0]}"
    return " ".join([head, *argv[1:]])


def render(title: str, body: str, *, command: str, machine: Machine, when: datetime) -> str:
    """A measurements page: the header comment, the title, what it was measured on, the body."""
    return (f"{HEADER_PREFIX}{command} -->\n"
            f"# {title}\n\n"
            f"Measured {when.strftime('%Y-%m-%d %H:%M')} UTC on {machine.line()}, by "
            f"`{command}`. This page is written by that command: run it again to refresh it.\n\n"
            f"{body.strip()}\n")


def write_figures(name: str, title: str, body: str, *, command: str | None = None,
                  folder: Path = MEASUREMENTS_DIR) -> Path:
    """Writes ``folder/<name>.md`` (a temporary file, then a rename) and returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    page = render(title, body, command=command or command_line(), machine=this_machine(),
                  when=datetime.now(UTC))
    target = folder / f"{name}.md"
    temporary = target.with_suffix(".md.tmp")
    temporary.write_text(page, encoding="utf-8")
    temporary.replace(target)
    return target


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table, ``|`` in cells escaped."""
    def cells(values: Sequence[object]) -> str:
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"

    return "\n".join([cells(header), "|" + "---|" * len(header), *map(cells, rows)])


__all__ = ["HEADER_PREFIX", "MEASUREMENTS_DIR", "Machine", "markdown_table", "render",
           "this_machine", "write_figures"]
