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


EXPORTED_MARKER = ".exported"
"""Written into the folder after a complete export; its presence means: never export again."""


def export_python_reference(dest: Path, *, refresh: bool = False) -> list[Path]:
    """Writes one Markdown file per topic into ``dest``, once. A folder that holds a complete
    export (its marker file) is a corpus the user owns: it is left exactly as it is, edits and
    deletions included, unless ``refresh`` asks to rewrite every topic from CPython's copy.

    Returns the topic paths, sorted by topic name (whether or not they were written now).
    """
    from pydoc_data.topics import topics

    paths = [dest / f"{name}.md" for name in sorted(topics)]
    marker = dest / EXPORTED_MARKER
    if marker.is_file() and not refresh:
        return paths
    dest.mkdir(parents=True, exist_ok=True)
    for name, path in zip(sorted(topics), paths, strict=True):
        text = topic_to_markdown(topics[name])
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_suffix(".md.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
    marker.write_text("exported from pydoc_data.topics; delete this file or pass refresh to "
                      "export again\n", encoding="utf-8")
    return paths
