"""reStructuredText: the document docutils parses, as text; sections at its titles, literal blocks verbatim.

Parsed by docutils (public domain / BSD) with everything that reaches outside the file off:
no ``include``, no ``raw``, no file or URL inserted by a directive (``file_insertion_enabled``
and ``raw_enabled`` false), no report printed. The tree becomes paragraphs as a reader sees
them: a section title is a line outside every section (its body, up to the next title, is a
section titled by it, of its depth), a paragraph is one line with its wrapping collapsed, a
literal block (``::``, ``code``, ``code-block``) and a doctest block keep their lines exactly,
list items are lines ``- item`` or ``1. item`` (nested ones indented two spaces a level), a
definition is its term, then the definition indented, a table its title (if any) then one
line per row with cells joined by ``" | "`` (a cell spanning columns or rows leaves an empty
place in each column or row it covers, so no column shifts), declared as a
:class:`~rag_pipeline.core.ingest.extracted.TableSpan` whose header is the table's header rows
(none for a table without), an admonition its kind (``Note: ...``). Roles docutils does not know
(Sphinx's ``:func:`name```) keep their text (``name``). A directive docutils does not know
(Sphinx's), or knows and cannot run (Sphinx's ``class:: joiner(sep=', ')``, a ``code-block``
with Sphinx's ``:caption:``, kept with its caption), keeps its words, on the line of the list
item, note, table cell or definition it stands in: ``versionadded``, ``versionchanged``, ``deprecated`` and
``versionremoved`` read as Sphinx shows them (``New in version 3.5: ...``), any other its
arguments (a ``py:function``'s signature) above its content, read as reStructuredText (code,
a grammar or a diagram's source, ``testcode``, ``productionlist``, ``graphviz``, line for line);
those that only arrange or point (``toctree``, ``index``, ``highlight``, ``currentmodule``,
``literalinclude``...), raw HTML, an image's path and comments are left out. A document has
no locator finer than itself (``#char=``).
"""

from __future__ import annotations

import dataclasses
import io
import re
from typing import TYPE_CHECKING

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import (
    Extracted,
    ExtractionError,
    Extractor,
    TableSpan,
)
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.heading_sections import heading_sections
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.tables import layout_table, without_blank_rows

if TYPE_CHECKING:
    from docutils import nodes

SETTINGS = {
    "file_insertion_enabled": False, "raw_enabled": False, "report_level": 5, "halt_level": 5,
    "warning_stream": None, "doctitle_xform": False, "sectsubtitle_xform": False,
    "sectnum_xform": False, "syntax_highlight": "none", "input_encoding": "unicode", "_disable_config": True,
}
"""docutils settings: nothing from outside the file, nothing printed, nothing halts; sections
numbered here (:func:`_number_sections`)."""

_UNKNOWN_ROLE = re.compile(r"(?<![\w.+-]):[\w.+-]+(?::[\w.+-]+)*:`([^`]*)`")
"""A role docutils does not know (``:py:func:`len```). Tried only where a role's name can begin
(not inside one): a paragraph of ``:a:a:a...`` is one try, not one per colon."""
_SKIP = ("system_message", "comment", "substitution_definition", "target", "pending", "raw",
         "footnote_reference", "citation_reference")
_ADMONITIONS = ("attention", "caution", "danger", "error", "hint", "important", "note", "tip",
                "warning", "seealso")


_VERSION_NOTES = {"versionadded": "New in version {}", "versionchanged": "Changed in version {}",
                  "deprecated": "Deprecated since version {}", "versionremoved": "Removed in version {}"}
"""Sphinx's version directives, as Sphinx words them."""
_ARRANGING = frozenset({"toctree", "index", "highlight", "currentmodule", "module", "py:module",
                        "py:currentmodule", "literalinclude", "tabularcolumns", "default-role",
                        "default-domain", "autosummary", "sectionauthor", "codeauthor", "todolist",
                        "include", "raw"})
"""Directives docutils does not know that hold no words a reader reads as the document's: a table
of contents, index entries, settings, a file inserted from elsewhere."""
_VERBATIM = frozenset({"code", "code-block", "sourcecode", "parsed-literal",
                       "testcode", "testoutput", "testsetup", "testcleanup", "doctest",
                       "productionlist", "ipython", "jupyter-execute", "prompt", "graphviz",
                       "digraph", "graph", "mermaid", "uml", "plantuml"})
"""Directives docutils does not know whose content is code, a grammar or a diagram's source:
kept line for line, as a literal block is, never read as reStructuredText."""
_CONDITIONS = frozenset({"only", "ifconfig", "image", "figure"})
"""Directives whose arguments are a condition (``only:: html``) or a file's path (an image's),
not words: their content (a figure's caption) is kept."""
_DIRECTIVE_LINE = re.compile(r"\.\.[ \t]+([\w:.+-]+)[ \t]*::[ \t]*(.*)")
MAX_DIRECTIVE_NESTING = 8
"""Directives docutils does not know read inside one another up to this depth; deeper ones keep
their source lines as they are."""
MAX_DIRECTIVES_READ = 1000
"""Contents of directives docutils does not know read as reStructuredText in one document (each
is parsed on its own: 2,000 took 2.6 s); later ones keep their source lines as they are."""


_OPTION_LINE = re.compile(r"\s+:([\w-]+):(?:\s+(.*))?$")
"""A directive's option line (``:caption: The setup``); a first content line that starts
with a role (``:func:`x` does ...``) is none: a role's name ends in a backquote."""


def _unknown_directive(message: nodes.Node) -> tuple[str, str, dict[str, str], str] | None:
    """The name, the arguments (continuation lines joined), the options and the content
    (dedented) of the directive that ``message`` reports: one docutils does not know, or one it
    knows and could not run (Sphinx's ``class:: joiner(sep=', ')``, a ``code-block`` with
    Sphinx's ``:caption:``); its source is the message's literal block. None for any other
    message."""
    import textwrap

    from docutils import nodes as n

    source = next((c for c in message.children if isinstance(c, n.literal_block)), None)
    if source is None or int(message.get("level", 0)) < 2:
        return None
    lines = source.astext().split("\n")
    head = _DIRECTIVE_LINE.match(lines[0])
    if head is None:
        return None
    arguments, options, rest = [head.group(2).strip()], {}, 1
    while rest < len(lines) and lines[rest].strip():
        if (option := _OPTION_LINE.match(lines[rest])) is not None:
            options[option.group(1)] = (option.group(2) or "").strip()
        elif arguments[0] and not options:
            arguments.append(lines[rest].strip())  # a signature that runs on
        else:
            break
        rest += 1
    content = textwrap.dedent("\n".join(lines[rest:])).strip("\n")
    name, argument = head.group(1), " ".join(arguments).strip()
    if name in _VERSION_NOTES:  # the version, then the explanation (Sphinx's second argument)
        argument, _, explanation = argument.partition(" ")
        content = f"{explanation}\n\n{content}".strip("\n") if explanation else content
    return name, argument, options, content


def _directive_words(name: str, arguments: str, options: dict[str, str], content: str) -> str:
    """A directive's words on one line, unparsed (one inside a list item, a note, a table
    cell or a definition, whose text is one line)."""
    if name in _ARRANGING:
        return ""
    words = " ".join(content.split())
    if name in _VERSION_NOTES:
        return _version_note(name, arguments, words)
    shown = "" if name in _CONDITIONS or name in _VERBATIM else arguments
    return " ".join(part for part in (options.get("caption", ""), shown, words) if part)


def _message_words(message: nodes.Node) -> str:
    """The words of a docutils report: its directive's (:func:`_directive_words`), else none."""
    directive = _unknown_directive(message)
    return _directive_words(*directive) if directive is not None else ""


def _version_note(name: str, version: str, words: str) -> str:
    """A version directive as Sphinx words it: ``New in version 3.5: <words>``, or
    ``New in version 3.5.`` without words."""
    label = _VERSION_NOTES[name].format(version)
    return f"{label}: {words}" if words else f"{label}."


def _parsed(source: str) -> nodes.document:
    from docutils.core import publish_doctree

    # docutils replaces a document holding a line over its limit (10,000 characters) by one
    # error; the file's size, which max_document_bytes bounds, is the limit here.
    tree = publish_doctree(source, settings_overrides={
        **SETTINGS, "warning_stream": io.StringIO(), "line_length_limit": max(len(source), 1)})
    _number_sections(tree)
    return tree


def _number_sections(tree: nodes.document) -> None:
    """Numbers the sections as a ``sectnum`` directive asks (its depth, start, prefix and
    suffix), as docutils numbers them, but below the document's title and subtitle: they stay
    sections here (``doctitle_xform`` off), and docutils would number the title 1 and every
    question of a FAQ one level too deep ("1.2.7" for its 2.7)."""
    from docutils import nodes as n

    settings = tree.settings
    if not hasattr(settings, "sectnum_start"):
        return
    depth = 1_000 if settings.sectnum_depth is None else settings.sectnum_depth

    def promoted(node: n.Element) -> n.section | None:
        """The section docutils would promote to ``node``'s title (DocTitle's rule: after
        nothing but bibliographic matter, and last)."""
        index = node.first_child_not_matching_class(n.PreBibliographic)
        if index is None or len(node) > index + 1 or not isinstance(node[index], n.section):
            return None
        return node[index]

    # Below the title, and below the subtitle when the title's section holds one alone.
    root = promoted(tree) or tree
    root = promoted(root) or root if root is not tree else root

    def number(node: n.Element, numbers: tuple[str, ...], level: int) -> None:
        value = settings.sectnum_start if not numbers else 1
        for child in node.children:
            if isinstance(child, n.section) and child.children:
                mine = (*numbers, str(value))
                label = settings.sectnum_prefix + ".".join(mine) + settings.sectnum_suffix
                child[0].insert(0, n.generated("", label + "\u00a0" * 3, classes=["sectnum"]))
                if level < depth:
                    number(child, mine, level + 1)
                value += 1

    number(root, (), 1)


def _role_text(match: re.Match[str]) -> str:
    text = match.group(1)
    titled = _titled_target(text)
    return (text if titled is None else titled).lstrip("~!")


def _titled_target(text: str) -> str | None:
    """The title of a role's ``title <target>`` text (the blanks before ``<`` left out); None
    when it names no target. Read from the end, never by a pattern trying every split of the
    blanks before ``<``."""
    body = text.removesuffix("\n")
    start = body.rfind("<")
    if not body.endswith(">") or start < 0 or ">" in body[start + 1:-1]:
        return None
    title = body[:start].rstrip()
    return None if "\n" in title else title


def _own_text(node: nodes.Node) -> str:
    """A node's text without docutils' own messages (an unknown role's ``ERROR/3`` report,
    which the parser adds to the list item or paragraph that holds the role), a directive's
    report its words (:func:`_directive_words`)."""
    from docutils import nodes as n

    if isinstance(node, n.system_message):
        return _message_words(node)
    if next(iter(node.findall(n.system_message)), None) is None:
        return node.astext()
    node = node.deepcopy()
    for message in list(node.findall(n.system_message)):
        if words := _message_words(message):
            message.parent.replace(message, n.paragraph(words, f" {words} "))
        else:
            message.parent.remove(message)
    return node.astext()


def inline_text(node: nodes.Node) -> str:
    """A node's text on one line: wrapping collapsed, unknown roles reduced to their text,
    docutils' messages left out."""
    return " ".join(_UNKNOWN_ROLE.sub(_role_text, _own_text(node)).split())


Table = tuple[list[list[str]], int]
"""A table's rows (blank ones left out) and how many of them are its header."""
Block = tuple[str, int, "Table | None"]
"""A block's text, its heading level (0: not a heading) and, for a table, its rows."""


LEAD_IN_MAX_CHARS = 120
"""A paragraph at most this long followed by an indented block (a block quote) is that
block's name: ``startsecs`` above the setting's description."""


class _Writer:
    """Collects blocks and heading positions while walking the tree. A short paragraph that an
    indented block follows (a setting's name above its description, as in a definition list)
    is kept with that block's first paragraph, one line above it, so that no chunk ends with
    the name and the next begins with its description."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.lead_in = ""
        self.nesting = 0
        self.directives_read = [0]  # shared with the writers of nested directives

    def add(self, text: str, level: int = 0, table: Table | None = None) -> None:
        if not text.strip():
            return
        if self.lead_in and level == 0 and table is None:
            text, self.lead_in = f"{self.lead_in}\n  {text}", ""
        self.flush()
        self.blocks.append((text, level, table))

    def flush(self) -> None:
        """Adds a lead-in whose indented block held no text."""
        if self.lead_in:
            lead_in, self.lead_in = self.lead_in, ""
            self.blocks.append((lead_in, 0, None))

    def walk(self, node: nodes.Node, depth: int = 0) -> None:
        from docutils import nodes as n

        for index, child in enumerate(node.children):
            name = child.tagname
            if name == "system_message" and (directive := _unknown_directive(child)) is not None:
                self.directive(*directive)
                continue
            if name in _SKIP or isinstance(child, n.Invisible):
                continue
            # The next element a reader sees: docutils' reports between (an "unexpected
            # indentation" under a glossary entry of two terms) are none.
            following = next((c for c in node.children[index + 1:] if c.tagname != "system_message"
                              or _unknown_directive(c) is not None), None)
            if name == "section":
                title = next((c for c in child.children if c.tagname == "title"), None)
                if title is not None:
                    self.add(inline_text(title), depth + 1)
                self.walk(child, depth + 1)
            elif name in ("title", "subtitle", "rubric"):
                if node.tagname != "section":
                    self.add(inline_text(child))
            elif name in ("literal_block", "doctest_block"):
                self.add(_own_text(child).rstrip())
            elif name == "line_block":
                self.add("\n".join(inline_text(line) for line in child.children))
            elif name in ("bullet_list", "enumerated_list"):
                self.add("\n".join(_list_lines(child, 0)))
            elif name == "definition_list":
                for item in child.children:
                    term = " ".join(inline_text(c) for c in item.children if c.tagname != "definition")
                    definition = next((c for c in item.children if c.tagname == "definition"), None)
                    body = " ".join(text for c in definition.children
                                    if (text := inline_text(c))) if definition else ""
                    self.add(f"{term}\n  {body}" if body else term)
            elif name == "field_list" or name == "docinfo":
                self.add("\n".join(_field_line(field) for field in child.children))
            elif name == "table":
                title = next((c for c in child.children if c.tagname == "title"), None)
                if title is not None:
                    self.add(inline_text(title))
                rows, header_rows = _table_rows(child)
                if rows:
                    self.add(layout_table(rows, 0, header_rows)[0], table=(rows, header_rows))
            elif name in _ADMONITIONS or name == "admonition":
                label = name.capitalize() if name != "seealso" else "See also"
                body = " ".join(text for c in child.children
                                if c.tagname != "title" and (text := inline_text(c)))
                title = next((inline_text(c) for c in child.children if c.tagname == "title"), label)
                self.add(f"{title}: {body}")
            elif name == "paragraph" and isinstance(following, n.block_quote):
                self.flush()
                text = inline_text(child)
                if len(text) <= LEAD_IN_MAX_CHARS:
                    self.lead_in = text
                else:
                    self.add(text)
            elif name in ("paragraph", "attribution", "caption", "term", "label"):
                self.add(inline_text(child))
            elif isinstance(child, n.TextElement) or isinstance(child, n.Text):
                self.add(inline_text(child))
            else:
                self.walk(child, depth)

    def directive(self, name: str, arguments: str, options: dict[str, str], content: str) -> None:
        """The words of a directive docutils does not know, or could not run (the module
        docstring)."""
        if name in _CONDITIONS:
            arguments = ""
        if name in _ARRANGING or not (arguments or content):
            return
        if name in _VERBATIM:
            if options.get("caption"):
                self.add(options["caption"])
            self.add(content)
            return
        if self.nesting >= MAX_DIRECTIVE_NESTING or self.directives_read[0] >= MAX_DIRECTIVES_READ:
            self.add("\n".join(part for part in (arguments, content) if part))
            return
        inner = _Writer()
        inner.nesting, inner.directives_read = self.nesting + 1, self.directives_read
        if content:
            self.directives_read[0] += 1
            inner.walk(_parsed(content))
            inner.flush()
        if name in _VERSION_NOTES:
            self.add(_version_note(name, arguments, " ".join(
                " ".join(text for text, _, _ in inner.blocks).split())))
            return
        if arguments:
            self.flush()
            self.lead_in = arguments if len(arguments) <= LEAD_IN_MAX_CHARS else ""
            if not self.lead_in:
                self.add(arguments)
        for text, _, table in inner.blocks:
            self.add(text, 0, table)
        self.flush()


def _field_line(field: nodes.Node) -> str:
    parts = [inline_text(c) for c in field.children] if field.children else [inline_text(field)]
    return ": ".join(part for part in parts if part)


def _list_lines(node: nodes.Node, level: int) -> list[str]:
    lines = []
    number = int(node.get("start", 1))
    for item in node.children:
        marker = "-" if node.tagname == "bullet_list" else f"{number}."
        number += 1
        own = [inline_text(c) for c in item.children
               if c.tagname not in ("bullet_list", "enumerated_list")]
        lines.append(f"{'  ' * level}{marker} {' '.join(text for text in own if text)}")
        for nested in item.children:
            if nested.tagname in ("bullet_list", "enumerated_list"):
                lines += _list_lines(nested, level + 1)
    return lines


def _table_rows(table: nodes.Node) -> Table:
    """The rows of a table's groups, header rows first, and how many are the header. A cell
    spanning columns (``morecols``) is its text, then an empty cell per further column; under
    a cell spanning rows (``morerows``) each later row has an empty cell, so no column shifts."""
    rows: list[list[str]] = []
    header_rows = 0
    for group in (c for c in table.children if c.tagname == "tgroup"):
        width = int(group.get("cols", 0))
        covered: dict[int, int] = {}  # column -> rows still covered by a cell above
        for part in (c for c in group.children if c.tagname in ("thead", "tbody")):
            for row in (c for c in part.children if c.tagname == "row"):
                entries = iter(e for e in row.children if e.tagname == "entry")
                cells: list[str] = []
                column = 0
                while True:
                    if covered.get(column, 0):
                        covered[column] -= 1
                        cells.append("")
                        column += 1
                        continue
                    entry = next(entries, None)
                    if entry is None:
                        break
                    spans = 1 + int(entry.get("morecols", 0))
                    below = int(entry.get("morerows", 0))
                    for spanned in range(column, column + spans):
                        if below:
                            covered[spanned] = below
                    cells += [inline_text(entry)] + [""] * (spans - 1)
                    column += spans
                for later in range(column, width):
                    if covered.get(later, 0):
                        covered[later] -= 1
                if without_blank_rows([cells]):
                    rows.append(cells)
                    header_rows += part.tagname == "thead"
    return rows, header_rows


def blocks_to_extracted(blocks: list[Block], stem: str, first_is_title: bool = True,
                        ) -> Extracted:
    """Blocks joined by blank lines; sections by their heading blocks
    (:func:`~rag_pipeline.core.ingest.heading_sections.heading_sections`; ``first_is_title``:
    whether the first level-1 heading is the document's title); each table block declared.
    The title: that heading, else ``stem``."""
    title = next((text for text, level, _ in blocks if level == 1), stem) if first_is_title else stem
    canonical = "\n\n".join(text for text, _, _ in blocks) + ("\n" if blocks else "")
    headings: list[tuple[int, int, int, str]] = []
    tables: list[TableSpan] = []
    offset = 0
    for text, level, table in blocks:
        if level:
            headings.append((offset, offset + len(text), level, text))
        elif table is not None:
            tables.append(layout_table(table[0], offset, table[1])[1])
        offset += len(text) + 2
    return Extracted(title=title, canonical_text=canonical, tables=tuple(tables),
                     sections=heading_sections(headings, len(canonical), title, first_is_title))


class RstFormat(DocumentFormat):
    """``.rst`` and ``.rest`` files."""

    name = "rst"
    suffixes = (".rst", ".rest")
    plain_text = True

    def extractor(self) -> Extractor:
        return Extractor("rst-docutils", f"12+docutils-{library_version('docutils')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """The parsed document as text (the module docstring).

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`), or docutils cannot parse
                it.
        """
        decoded = decode_text(data, "reStructuredText")
        writer = _Writer()
        try:
            writer.walk(_parsed(decoded.text))
            writer.flush()
        except Exception as exc:  # docutils' own errors, and RecursionError on absurd nesting
            raise ExtractionError(f"unreadable reStructuredText: {type(exc).__name__}: {exc}") from exc
        extracted = blocks_to_extracted(writer.blocks, stem)
        return dataclasses.replace(extracted, notes=extracted.notes + decoded.notes)
