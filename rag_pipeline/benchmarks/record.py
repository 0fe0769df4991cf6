"""Runs one benchmark and writes what it printed to ``docs/measurements/<name>.md``.

``python -m rag_pipeline.benchmarks.record ask_latency [ARGS...]`` runs
``python -m rag_pipeline.benchmarks.ask_latency ARGS...`` in a child process, prints its output
as it comes, and, when it exits 0, writes the page: the header of
:func:`rag_pipeline.benchmarks.figures.render` (date, machine, the command) and the benchmark's
output as it was printed (its Markdown tables as tables, other lines in a text block). A failed
benchmark writes nothing and exits with its status.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys

from rag_pipeline.benchmarks import offline_env
from rag_pipeline.benchmarks.figures import MEASUREMENTS_DIR, write_figures

_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")


def as_markdown(output: str) -> str:
    """A benchmark's output as Markdown: runs of ``| ... |`` lines stay tables, ``#`` heading
    lines stay headings (one level down), every other run of lines is a text block."""
    parts: list[str] = []
    text: list[str] = []

    def flush() -> None:
        while text and not text[-1].strip():
            text.pop()
        if any(line.strip() for line in text):
            parts.append("```text\n" + "\n".join(text) + "\n```")
        text.clear()

    lines = output.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_LINE.match(line):
            flush()
            table = []
            while i < len(lines) and _TABLE_LINE.match(lines[i]):
                table.append(lines[i].strip())
                i += 1
            parts.append("\n".join(table))
            continue
        if line.startswith("#"):
            flush()
            parts.append("#" + line)
        elif line.strip() or text:
            text.append(line)
        i += 1
    flush()
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmark", help="a module of rag_pipeline.benchmarks (ask_latency, ...)")
    parser.add_argument("--title", help="the page's title (default: the benchmark's first line)")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the benchmark's arguments")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", args.benchmark) or args.benchmark in ("record",
                                                                                 "figures"):
        parser.error(f"not a benchmark module: {args.benchmark!r}")
    module = f"rag_pipeline.benchmarks.{args.benchmark}"
    child = subprocess.Popen([sys.executable, "-m", module, *args.arguments], env=offline_env(),
                             stdout=subprocess.PIPE, text=True)
    captured = []
    assert child.stdout is not None
    for line in child.stdout:
        sys.stdout.write(line)
        captured.append(line)
    status = child.wait()
    if status != 0:
        print(f"record: {module} exited {status}; nothing written", file=sys.stderr)
        return status
    title = args.title or _first_line_of_docstring(module) or args.benchmark
    titled = ["--title", shlex.quote(args.title)] if args.title else []
    command = " ".join(["python -m rag_pipeline.benchmarks.record", *titled, args.benchmark,
                        *map(shlex.quote, args.arguments)])
    path = write_figures(args.benchmark, title, as_markdown("".join(captured)), command=command,
                         folder=MEASUREMENTS_DIR)
    print(f"record: wrote {path}")
    return 0


def _first_line_of_docstring(module: str) -> str | None:
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    import ast
    from pathlib import Path

    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8")))
    return doc.splitlines()[0].rstrip(".") if doc else None


if __name__ == "__main__":
    sys.exit(main())
