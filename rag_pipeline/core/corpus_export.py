"""Exports the Python Language Reference shipped with CPython as a folder of Markdown files.

The default corpus is ``pydoc_data.topics.topics``: 79 reference topics written in reST style,
with headings underlined by ``*`` (the topic title), ``=``, ``-`` or ``~`` (deeper sections).
Each topic becomes ``<topic>.md``: ``# Title`` from its first heading, every deeper underlined
heading becomes a ``## `` section, and the prose stays byte for byte as CPython ships it.
"""

from __future__ import annotations

import re
from pathlib import Path

_UNDERLINE = re.compile(r"^([*=\-~^])\1{2,}$")


def topic_to_markdown(raw: str) -> str:
    """Turns one reST-style topic into Markdown: the first heading is the title, others ``## ``."""
    lines = raw.split("\n")
    out: list[str] = []
    seen_title = False
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        is_heading = (
            line.strip()
            and _UNDERLINE.match(nxt)
            and len(nxt) >= len(line.rstrip()) - 2
            and not line.startswith(" ")
        )
        if is_heading:
            out.append(("## " if seen_title else "# ") + line.strip())
            seen_title = True
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out).strip("\n") + "\n"


def export_python_reference(dest: Path) -> list[Path]:
    """Writes one Markdown file per topic into ``dest``; files already identical are left alone.

    Returns the paths written or kept, sorted.
    """
    from pydoc_data.topics import topics

    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in sorted(topics):
        path = dest / f"{name}.md"
        text = topic_to_markdown(topics[name])
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_suffix(".md.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        paths.append(path)
    return paths
