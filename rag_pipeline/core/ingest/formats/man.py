"""Manual pages written in roff (``man(7)`` and the common ``mdoc(7)`` macros): ``rsync.1``,
``tar.1.gz`` through the compressed-file rule, ``.man`` files.

A file no format claims by its name is read here when its bytes begin as a manual page does
(:func:`looks_like_roff`: comment lines, then requests, a ``.TH`` or ``.Dd`` among the first);
a rotated log ``syslog.1`` stays plain text. The reader is a small roff interpreter, not a
typesetter: it keeps the words and their order and drops the typesetting.

- ``.TH NAME SECTION`` titles the document ``NAME(SECTION)``; ``.SH`` and ``.SS`` (``.Sh``,
  ``.Ss``) are headings of level 1 and 2, one section each.
- Filled text is joined into paragraphs (``.PP``, ``.LP``, ``.P``, ``.sp``, a blank line end
  one; ``.br`` a line). A tagged paragraph (``.TP``, ``.IP tag``, ``.It`` of a list) is its tag
  on one line and its body indented on the next, as a definition list's entry, so that no
  chunk holds a tag without what it means.
- Font changes (``.B``, ``.BR``, ``\\fB``...) keep their words; escapes become the characters
  they draw (``\\-`` ``-``, ``\\(em`` ``—``, ``\\(aq`` ``'``); size, motion and other drawing
  escapes are dropped.
- No-fill text (``.nf``/``.fi``, ``.EX``/``.EE``) keeps its lines; a ``tbl`` table
  (``.TS``/``.TE``) is a line per row, its cells joined by `` | ``.
- A synopsis (``.SY``, ``.OP``), a link's address (``.UR``), a reference (``.MR``) and mdoc's
  enclosures (``Aq``, ``Op``) keep their words. A conditional is read as a terminal formatter
  reads it (``.ie n`` true, its ``.el`` false; ``.if t`` false; strings compared as written; a
  number of the arguments' count, ``\\n(.$-1``, true above 0; another register false). A
  page's own macro (``.de OM``) is read where it is called, its arguments in place of
  ``\\$1``..., and its own string (``.ds``, ``.as``) where it is interpolated (``\\*(sd``, up
  to :data:`MAX_STRING_CHARS` in all); ``.so`` inclusions and other requests are left out
  (nothing is read from outside the file).

Cited ``#char=``.
"""

from __future__ import annotations

import re
import unicodedata

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import Extracted, ExtractionError, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.formats.rst import Block, blocks_to_extracted
from rag_pipeline.core.ingest.tables import layout_table, without_blank_rows, worded_as_header

__all__ = ["ManFormat", "looks_like_roff", "roff_blocks"]

SNIFF_LINES = 300
"""How many of a file's first lines :func:`looks_like_roff` reads."""
MAX_MACRO_LINES = 200_000
"""Lines a page's own macros may give when called, all calls together (a macro calling
itself, or one of many lines called often, stops here)."""
MAX_HELD_CONDITIONS = 16
"""Conditionals one line may hold in a row (``.if n .if t .if n ...``); a further one is left
out with its line. Real pages nest two or three; each one read again the rest of the line, so a
line of thousands took time growing with their square."""

_NAMED = {
    "em": "—", "en": "–", "bu": "•", "aq": "'", "dq": '"', "lq": "“", "rq": "”", "oq": "‘",
    "cq": "’", "co": "©", "rg": "®", "tm": "™", "mi": "-", "hy": "-", "ti": "~", "ha": "^",
    "mu": "×", "de": "°", "ga": "`", "sl": "/", "rs": "\\", "ba": "|", "<=": "≤", ">=": "≥",
    "!=": "≠", "->": "→", "<-": "←", "Fo": "«", "Fc": "»", "fo": "‹", "fc": "›", "sq": "□",
    "ci": "○", "pl": "+", "eq": "=", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "at": "@",
    "sh": "#", "Do": "$", "ct": "¢", "Po": "£", "Ye": "¥", "Eu": "€", "ss": "ß", "ae": "æ",
    "oe": "œ", "+-": "±", "12": "½", "14": "¼", "34": "¾", "sc": "§", "ps": "¶", "dg": "†",
}
"""Special characters (``\\(em``, ``\\[em]``) by name."""
_ACCENTS = {"'": "\u0301", "`": "\u0300", ":": "\u0308", "^": "\u0302", "~": "\u0303",
            ",": "\u0327", "o": "\u030a", "v": "\u030c"}
"""groff's accented letters (``\\('e`` ``é``, ``\\(:u`` ``ü``, ``\\(,c`` ``ç``): the accent's
combining mark, by the character naming it."""
_LETTERS = {"/o": "ø", "/O": "Ø", "AE": "Æ", "OE": "Œ", "-D": "Đ", "Sd": "ð", "TP": "Þ", "Tp": "þ",
            ".i": "ı"}
_STRINGS = {"lq": "“", "rq": "”", "R": "®", "Tm": "™", "Aq": "'", "aq": "'"}
"""Predefined strings (``\\*(lq``) by name; the page's own (``.ds``) are :class:`_Strings`, and
a string neither defines reads as nothing."""
MAX_STRING_CHARS = 1_000_000
"""Characters a page's own strings may put into its lines, all interpolations together; past
it a string reads as nothing (a string defined as itself twice over, thirty times, would be a
gigabyte)."""
_STRING_CALL = re.compile(r"(?<!\\)((?:\\\\)*)\\\*(?:\((..)|\[([^\]\n]{0,64})\]|([^(\[]))")
"""A string's interpolation (``\\*(sd``, ``\\*[name]``, ``\\*x``), not after an escaped
backslash."""
_ESCAPE = re.compile(
    r"""\\(?:
      \((?P<two>..)                              # \(em
    | \[(?P<long>[^\]\n]{0,64})\]                # \[em], \[u00E9]
    | \*(?:\((?P<s2>..)|\[(?P<sl>[^\]\n]{0,64})\]|(?P<s1>.))   # a string: \*(lq
    | f(?:\(..|\[[^\]\n]{0,64}\]|.)              # a font change
    | s[+-]?(?:\d{1,3}|\(\d\d|\[[^\]\n]{0,64}\])   # a size change
    | [nFgmMkYV](?:\(..|\[[^\]\n]{0,64}\]|.)     # a register, font family, colour...
    | [hvwlLXZDoNbxSRCA]'[^'\n]{0,256}'          # motion, drawing, width...
    | \$.                                        # a macro's argument
    | (?P<one>.)                                 # one character: \- \& \e \(space)...
    )""", re.VERBOSE)
"""An escape: the names and arguments it may hold are bounded, so a line of unclosed ``\\[``
is read in linear time."""
_ONE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "'": "'", "`": "`",
        ".": ".", "t": "\t"}
"""Escapes of one character that draw one (``\\-``); any other one draws nothing (``\\&``,
``\\|``, ``\\c``)."""
_PARAGRAPH = {"PP", "LP", "P", "sp", "Pp", "Lp", "HP"}
_FONTS = {"B", "I", "SM", "SB", "R"}
_ALTERNATING = {"BR", "BI", "IB", "IR", "RB", "RI"}
_END_OF_MACRO = re.compile(r"^[.']\s*\.\s*$")
_SKIP_BLOCKS = {"de": _END_OF_MACRO, "de1": _END_OF_MACRO, "am": _END_OF_MACRO,
                "am1": _END_OF_MACRO, "ig": _END_OF_MACRO, "EQ": re.compile(r"^[.']\s*EN\b")}
"""Requests whose lines up to an end request are no text: macro definitions, ignored input,
equations."""
_MDOC_PREFIX = {"Fl": "-", "Ar": "", "Cm": "", "Pa": "", "Ev": "", "Va": "", "Dv": "", "Ic": "",
                "Ad": "", "Er": "", "Fn": "", "Fa": "", "Ft": "", "Nm": "", "Em": "", "Sy": "",
                "Li": "", "Oo": "", "Oc": "", "No": "", "Ns": "", "Xr": "", "Ms": "", "Tn": "",
                "Ux": "", "At": "", "Bx": "", "Dl": "", "D1": "", "Sx": "", "An": "", "Lk": "",
                "Mt": "", "Lb": "", "Vt": "", "Cd": "", "In": ""}
"""mdoc's inline macros, which may also start a line: their arguments are text, a flag's
prefixed with ``-``."""
_MDOC_ENCLOSURES = {"Aq": ("<", ">"), "Pq": ("(", ")"), "Bq": ("[", "]"), "Brq": ("{", "}"),
                    "Op": ("[", "]"), "Dq": ("“", "”"), "Qq": ('"', '"'), "Sq": ("‘", "’"),
                    "Ql": ("‘", "’")}
"""mdoc's macros that enclose the rest of their line (``Op Fl v`` ``[-v]``)."""


def looks_like_roff(data: bytes) -> bool:
    """Whether ``data`` begins as a manual page in roff does: its first line that is not blank
    a request or a comment (``.``, ``'`` or ``\\"``), and a ``.TH`` or ``.Dd`` request among
    its first :data:`SNIFF_LINES` lines."""
    lines = data[:65_536].removeprefix(b"\xef\xbb\xbf").decode("latin-1").split("\n")[:SNIFF_LINES]
    first = next((line.lstrip() for line in lines if line.strip()), "")
    if not first.startswith((".", "'", '\\"')):
        return False
    return any(re.match(r"^[.']\s*(?:TH|Dd)(?:\s|$)", line) for line in lines)


def _unescaped(text: str) -> str:
    """``text`` with roff's escapes replaced by what they draw and its comment (``\\"``) cut."""
    text = _without_comment(text)

    def drawn(match: re.Match[str]) -> str:
        if match["two"] is not None:
            return _named(match["two"])
        if match["long"] is not None:
            name = match["long"]
            if re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
                return chr(int(name[1:], 16))
            return _named(name)
        string = match["s2"] or match["sl"] or match["s1"]
        if string is not None:
            return _STRINGS.get(string, "")
        if match["one"] is not None:
            return _ONE.get(match["one"], "")
        return ""

    return _ESCAPE.sub(drawn, text)


def _without_comment(value: str) -> str:
    """``value`` up to its first comment: a ``\\"`` whose backslash is no escaped one (each
    escape read left to right, ``\\\\`` one of them)."""
    for escape in re.finditer(r"\\(.)", value):
        if escape[1] == '"':
            return value[:escape.start()]
    return value


class _Strings:
    """The page's own strings (``.ds name value``, ``.as`` appending), interpolated into each
    line as it is read, as roff does: ``.ds sd \\fIsed\\fP`` then ``\\*(sd is a stream editor``
    reads "sed is a stream editor" (Debian's sed.1)."""

    def __init__(self) -> None:
        self.defined: dict[str, str] = {}
        self.budget = MAX_STRING_CHARS

    def define(self, rest: str, append: bool) -> None:
        """``.ds``/``.as``'s arguments: the name, then the value (a leading ``"`` lets it
        begin with blanks)."""
        found = re.match(r"(\S+)[ \t]*(.*)$", rest)
        if found is not None:
            # Read in copy mode: a comment (``\\"``) ends the value, the blanks before it kept
            # (GNU pages write ``.ds la <\\"``), and an escaped backslash is one backslash.
            value = _without_comment(found[2].removeprefix('"'))
            name, value = found[1], value.replace("\\\\", "\\")
            self.defined[name] = (self.defined.get(name, "") if append else "") + value

    def remove(self, rest: str) -> None:
        """``.rm``'s arguments: the names of strings (or macros) it removes."""
        for name in rest.split():
            self.defined.pop(name, None)

    def interpolated(self, line: str) -> str:
        """``line`` with each of the page's strings in place of its interpolation; the
        predefined ones are left to :func:`_unescaped`."""
        if not self.defined or "\\*" not in line:
            return line

        def value(call: re.Match[str]) -> str:
            name = call[2] or call[3] or call[4]
            if name not in self.defined:
                return call[0]
            found = self.defined[name]
            if len(found) > self.budget:
                return call[1]
            self.budget -= len(found)
            return call[1] + found

        return _STRING_CALL.sub(value, line)


def _named(name: str) -> str:
    """The character a special character's name draws (``em``, ``'e``), or ``""``."""
    if name in _NAMED or name in _LETTERS:
        return _NAMED.get(name) or _LETTERS[name]
    if len(name) == 2 and name[0] in _ACCENTS and name[1].isalpha():
        return unicodedata.normalize("NFC", name[1] + _ACCENTS[name[0]])
    return ""


def _arguments(rest: str) -> list[str]:
    """A request's arguments as :func:`_raw_arguments` splits them, each unescaped."""
    return [_unescaped(word) for word in _raw_arguments(rest)]


def _raw_arguments(rest: str) -> list[str]:
    """A request's arguments as roff splits them, as written (a macro's ``\\$1`` takes them
    so): words, a quoted one with its spaces (``"SEE ALSO"``, ``""`` a quote inside it), an
    escaped space (``\\ ``) no split, a quote inside a word (``a"b``) part of it."""
    rest = re.split(r'\\"', rest, maxsplit=1)[0]
    words: list[str] = []
    i, n = 0, len(rest)
    while i < n:
        if rest[i] in " \t":
            i += 1
            continue
        if rest[i] == '"':
            i += 1
            word = []
            while i < n:
                if rest[i] == '"':
                    if rest[i + 1:i + 2] == '"':
                        word.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                word.append(rest[i])
                i += 1
            words.append("".join(word))
            continue
        start = i
        while i < n and rest[i] not in " \t":
            i += 2 if rest[i] == "\\" else 1
        words.append(rest[start:i])
    return words


def _macro_body(lines: list[str]) -> list[str]:
    """A macro's lines as it will be read when called: continued lines joined, and its
    escapes' doubled backslashes read once (copy mode: ``\\\\$1`` is ``\\$1``)."""
    body, index = [], 0
    while index < len(lines):
        line, index = _joined_line(lines, index)
        body.append(line.replace("\\\\", "\\"))
    return body


def _called(body: list[str], arguments: list[str]) -> list[str]:
    """A macro's lines for one call: ``\\$1`` to ``\\$9`` its arguments, ``\\$*`` and
    ``\\$@`` all of them, ``\\n(.$`` their count."""
    def argument(match: re.Match[str]) -> str:
        which = match.group(1)
        if which in ("*", "@"):
            return " ".join(f'"{a}"' if which == "@" else a for a in arguments)
        number = int(which)
        return arguments[number - 1] if number <= len(arguments) else ""

    count = str(len(arguments))
    return [re.sub(r"\\\$([1-9*@])", argument, line).replace("\\n(.$", count).replace(
        "\\n[.$]", count) for line in body]


def _mdoc_text(words: list[str]) -> str:
    """mdoc macro calls on a line (``Fl v Aq Ar file``) as their text (``-v <file>``)."""
    out: list[str] = []
    prefix = ""
    for at, word in enumerate(words):
        if word in _MDOC_ENCLOSURES:
            left, right = _MDOC_ENCLOSURES[word]
            out.append(f"{prefix}{left}{_mdoc_text(words[at + 1:])}{right}")
            break
        if word in _MDOC_PREFIX:
            prefix = _MDOC_PREFIX[word]
            continue
        out.append(prefix + word)
        prefix = ""
    text = " ".join(out)
    return re.sub(r"\s+([.,;:)\]])", r"\1", text)


class _Page:
    """Collects a page's blocks while its lines are read."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.lines: list[str] = []
        self.tag: str | None = None
        self.tagging = False
        self.filled = True

    def text(self, words: str) -> None:
        """A line of text: a pending tag's, or the paragraph's."""
        words = words.strip() if self.filled else words.rstrip()
        if not words and self.filled:
            self.close()
            return
        if self.tagging:
            self.tag = words if self.tag is None else f"{self.tag}\n{words}"
            self.tagging = False
            return
        self.lines.append(words)

    def close(self) -> None:
        """Ends the paragraph (and its tag): a tag of a few characters (a bullet, ``1.``)
        before its body on one line, a longer one on the line above it."""
        body = (" ".join(self.lines) if self.filled else "\n".join(self.lines)).strip("\n")
        if self.filled:
            body = re.sub(r" *\n *", "\n", re.sub(r"[ \t]+", " ", body)).strip()
        if self.tag is not None:
            tag = "\n".join(" ".join(line.split()) for line in self.tag.split("\n"))
            if not body:
                self.blocks.append((tag, 0, None))
            elif len(tag) <= 3:
                self.blocks.append((f"{tag} {body}", 0, None))
            else:
                self.blocks.append((f"{tag}\n  {body}", 0, None))
        elif body:
            self.blocks.append((body, 0, None))
        self.lines, self.tag, self.tagging = [], None, False

    def heading(self, title: str, level: int) -> None:
        self.close()
        title = " ".join(title.split())
        if title:
            self.blocks.append((title, level, None))

    def tagged(self, tag: str | None) -> None:
        """A tagged paragraph: ``tag``, or (None) the next text line."""
        self.close()
        if tag is None:
            self.tagging = True
        else:
            self.tag = tag


def roff_blocks(text: str) -> tuple[str | None, list[Block]]:
    """The page's title (``.TH``, ``.Dt``; None without one) and its blocks (module
    docstring)."""
    page = _Page()
    title: str | None = None
    mdoc = False
    program: str | None = None  # mdoc's .Nm, which a bare .Nm repeats
    lines = text.split("\n")
    index = 0
    heading_next = 0
    # The request or text a true conditional holds, and a called macro's lines, read next;
    # each with whether it came from a macro (a block a false conditional opens is skipped
    # where its line came from).
    pending: list[tuple[str, bool]] = []
    held = 0  # how many conditionals the line being read is held by
    last_ie = False
    link: str | None = None  # .UR's address, written at .UE
    reference: list[str] | None = None  # mdoc's .Rs ... .Re: its parts (.%A, .%T, ...)
    macros: dict[str, list[str]] = {}  # the page's own macros (.de), their lines
    macro_lines = 0
    strings = _Strings()
    while pending or index < len(lines):
        if pending:
            line, from_macro = pending.pop()
        else:
            (line, index), held, from_macro = _joined_line(lines, index), 0, False
        line = strings.interpolated(line)
        if line[:1] in (".", "'"):
            request = re.match(r"^[.']\s*([^\s\\]*)\s*(.*)$", line)
            name, rest = request.group(1), request.group(2)
            if name.startswith('\\"') or not name:
                continue
            if name in _SKIP_BLOCKS:
                end = _SKIP_BLOCKS[name]
                marker = _arguments(rest)[0 if name == "ig" else 1:][:1]
                if name != "EQ" and marker:  # .de XX yy ends at .yy, .ig yy too
                    end = re.compile(rf"^[.']\s*{re.escape(marker[0])}(?:\s|$)")
                body_start = index
                while index < len(lines) and not end.match(lines[index]):
                    index += 1
                if name in ("de", "de1", "am", "am1") and (defined := _arguments(rest)[:1]):
                    body = [] if name.startswith("de") else macros.get(defined[0], [])
                    macros[defined[0]] = body + _macro_body(lines[body_start:index])
                index += 1
                continue
            if name in ("if", "ie", "el"):
                if held == MAX_HELD_CONDITIONS:
                    continue
                holds, body = (not last_ie, rest) if name == "el" else _condition(rest)
                last_ie = holds if name == "ie" else last_ie
                block = body.lstrip().startswith("\\{")
                body = body.lstrip().removeprefix("\\{").strip()
                if not holds and block and from_macro:
                    _past_called_block(pending, body)
                elif not holds:
                    index = _past_block(lines, index, body) if block else index
                elif body:
                    pending.append((body, from_macro))
                    held += 1
                continue
            if name in ("ds", "ds1", "as", "as1"):
                strings.define(rest, append=name.startswith("as"))
                continue
            if name == "rm":
                strings.remove(rest)
                continue
            words = _arguments(rest)
            if name in ("TH", "Dt"):
                title = f"{words[0]}({words[1]})" if len(words) > 1 else (words[0] if words else None)
            elif name == "Dd":
                mdoc = True
            elif name in ("SH", "Sh", "SS", "Ss"):
                level = 1 if name in ("SH", "Sh") else 2
                if words:
                    page.heading(" ".join(words), level)
                else:
                    page.close()
                    heading_next = level
            elif name in _PARAGRAPH:
                page.close()
            elif name == "br":
                if page.filled and page.lines:
                    page.lines.append("\n")
            elif name in ("TP", "TQ"):
                if name == "TQ" and page.tag is not None and not page.lines:
                    page.tagging = True
                else:
                    page.tagged(None)
            elif name == "IP":
                if words and words[0]:
                    page.tagged(words[0])
                else:
                    page.close()
            elif name == "It":
                page.tagged(_mdoc_text(words) if words else None)
            elif name in ("nf", "EX", "Bd"):
                page.close()
                page.filled = False
            elif name in ("fi", "EE", "Ed"):
                page.close()
                page.filled = True
            elif name == "TS":
                page.close()
                index = _table_body(lines, index, page)
            elif name in _FONTS:
                if words:
                    page.text(" ".join(words))
                elif index < len(lines) and lines[index][:1] not in (".", "'"):
                    page.text(_unescaped(strings.interpolated(lines[index])))  # in its font
                    index += 1
            elif name in _ALTERNATING:
                page.text("".join(words))
            elif name == "SY":
                page.close()
                page.text(" ".join(words))
            elif name == "OP":
                page.text(f"[{' '.join(words)}]")
            elif name == "YS":
                page.close()
            elif name in ("UR", "MT"):
                link = words[0] if words else None
            elif name in ("UE", "ME"):
                if link:
                    page.text(f"<{link}>{''.join(words)}")
                link = None
            elif name == "MR" and words:
                page.text(f"{words[0]}({words[1]}){''.join(words[2:])}" if len(words) > 1 else words[0])
            elif name in ("Nd",):
                page.text("— " + " ".join(words))
            elif mdoc and name == "Nm":
                program = program or (words[0] if words else None)
                page.text(" ".join(words) if words else program or "")
            elif mdoc and name == "Rs":
                page.close()
                reference = []
            elif mdoc and name.startswith("%") and reference is not None:
                reference.append(" ".join(words))
            elif mdoc and name == "Re":
                if reference:
                    page.text(", ".join(reference) + ".")
                page.close()
                reference = None
            elif name == "als" and len(words) > 1 and words[1] in macros:
                macros[words[0]] = macros[words[1]]
            elif (name in macros and name not in ("TH", "SH", "SS")
                  and macro_lines + len(macros[name]) <= MAX_MACRO_LINES):
                macro_lines += len(macros[name])
                pending.extend((called, True) for called in
                               reversed(_called(macros[name], _raw_arguments(rest))))
            elif mdoc and name == "Xr" and len(words) > 1:
                page.text(f"{words[0]}({words[1]}){''.join(words[2:])}")
            elif mdoc and (name in _MDOC_PREFIX or name in _MDOC_ENCLOSURES) and words:
                page.text(_mdoc_text([name, *words]))
            continue
        words = _unescaped(line)
        if heading_next:
            page.heading(words, heading_next)
            heading_next = 0
        else:
            page.text(words)
    page.close()
    return title, page.blocks


def _joined_line(lines: list[str], index: int) -> tuple[str, int]:
    """``lines[index]`` with the lines an escaped new line (a ``\\`` ending it) continues it
    with, and the index after them."""
    parts = [lines[index]]
    index += 1
    while parts[-1].endswith("\\") and not parts[-1].endswith("\\\\") and index < len(lines):
        parts[-1] = parts[-1][:-1]
        parts.append(lines[index])
        index += 1
    return "".join(parts), index


_TERMINAL_REGISTERS = {".H": 24, ".V": 40}
"""groff's horizontal and vertical resolution registers on a terminal (``nroff``)."""
_REGISTER_COMPARED = re.compile(r"\\n(?:\((\.[HV])|\[(\.[HV])\])(>=|<=|==|[<>=])(\d+)(?=\s|\\\{|$)")


def _condition(rest: str) -> tuple[bool, str]:
    """A conditional's truth as a terminal formatter reads it, and what it holds: ``n`` true;
    ``t``, ``o``, ``e``, ``v`` false (``!`` negates); a comparison of strings true when they
    are the same as written (strace(1)'s ``'#'#'`` true, ``''#'`` false); a number, or one
    number plus or minus another (a macro's ``\\n(.$-1`` once its count is in place), true
    above 0; a terminal's resolution compared with a number (:data:`_TERMINAL_REGISTERS`: old
    pod2man pages' ``\\n(.H>23`` picks their accents for a terminal, ``Skytta\\*:`` reading
    "Skyttae" as man shows it); any other condition (a register) false, its word skipped."""
    rest = rest.lstrip()
    negate = rest.startswith("!")
    rest = rest[1:] if negate else rest
    known = re.match(r"([ntoev])(?=\s|\\\{|$)", rest)
    if known is not None:
        return (known.group(1) == "n") != negate, rest[1:]
    compared = re.match(r"""(['"])([^'"]*)\1([^'"]*)\1""", rest)
    if compared is not None:
        return (compared.group(2) == compared.group(3)) != negate, rest[compared.end():]
    register = _REGISTER_COMPARED.match(rest)
    if register is not None:
        value, bound = _TERMINAL_REGISTERS[register[1] or register[2]], int(register[4])
        holds = {">": value > bound, "<": value < bound, ">=": value >= bound,
                 "<=": value <= bound, "=": value == bound, "==": value == bound}[register[3]]
        return holds != negate, rest[register.end():]
    number = re.match(r"\(?(-?\d+)([-+])(\d+)\)?(?=\s|\\\{|$)|\(?(-?\d+)\)?(?=\s|\\\{|$)", rest)
    if number is not None:
        value = (int(number[1]) + (int(number[3]) if number[2] == "+" else -int(number[3]))
                 if number[1] is not None else int(number[4]))
        return (value > 0) != negate, rest[number.end():]
    word = re.match(r"\S+", rest)
    return False, rest[word.end():] if word else ""


def _past_called_block(pending: list[tuple[str, bool]], opened: str) -> None:
    """Drops from ``pending`` (a called macro's lines, next last) the lines of the block a
    false conditional in the macro opened, up to its ``\\}``."""
    depth = 1 + opened.count("\\{") - opened.count("\\}")
    while depth > 0 and pending and pending[-1][1]:
        depth += pending[-1][0].count("\\{") - pending[-1][0].count("\\}")
        pending.pop()


def _past_block(lines: list[str], index: int, opened: str) -> int:
    """The index after the ``\\}`` that closes the block a false conditional opened (``opened``:
    the rest of its line, after its ``\\{``), blocks inside it counted."""
    depth = 1 + opened.count("\\{") - opened.count("\\}")
    while depth > 0 and index < len(lines):
        depth += lines[index].count("\\{") - lines[index].count("\\}")
        index += 1
    return index


def _table_body(lines: list[str], index: int, page: _Page) -> int:
    """Reads a ``tbl`` table from ``lines[index]`` (its options and format lines, then its
    rows up to ``.TE``) into ``page`` as a table block of a line per row; returns the index
    after its ``.TE`` line. Its header is the rows above a ``.TH`` in it, else its first row
    when a rule (``_``, ``=``) follows that row or a format line of its own sets it apart
    (bold, ``lB lB``, or aligned otherwise, ``c c`` over ``l l.``) or its words make it one
    (:func:`~rag_pipeline.core.ingest.tables.worded_as_header`: xz(1)'s ``Filter | Alignment |
    Notes``); else it has none (last(1)'s ``YYYYMMDDhhmmss`` is its first row: a header taken
    wrongly shifts every row's citation)."""
    end = next((at for at in range(index, len(lines)) if re.match(r"^[.']\s*TE\b", lines[at])),
               len(lines))
    # Options (``allbox; tab(@);``) and format lines (``l l.``) up to the one ending in ``.``;
    # without one, the rows start at once.
    start = next((at + 1 for at in range(index, end) if lines[at].rstrip().endswith(".")),
                 index + (index < end and lines[index].rstrip().endswith(";")))
    options = " ".join(line for line in lines[index:start] if line.rstrip().endswith(";"))
    formats = [line for line in lines[index:start] if not line.rstrip().endswith(";")]
    tab = match[1] if (match := re.search(r"tab\s*\((.)\)", options)) else "\t"
    rows, header_rows, ruled_after = _tbl_rows(lines[start:end], tab)
    rows = without_blank_rows([[" ".join(cell.split()) for cell in row] for row in rows])
    if not rows:
        return end + 1
    if header_rows is None:
        # Its own format line: the first of several, or the only one before ``.T&`` ones.
        own = len(formats) > 1 or any(re.match(r"^[.']\s*T&", line) for line in lines[start:end])
        keys = [_column_keys(line) for line in formats]
        set_apart = own and bool(formats) and (
            bool(re.search(r"[bB]", re.sub(r"w\([^)]*\)", "", formats[0])))
            or (len(keys) > 1 and keys[0] != keys[1]))
        header_rows = 1 if len(rows) > 1 and (ruled_after == 1 or set_apart or worded_as_header(
            rows[0], rows[1:])) else 0
    page.blocks.append((layout_table(rows, 0, header_rows)[0], 0, (rows, header_rows)))
    return end + 1


def _column_keys(format_line: str) -> str:
    """A ``tbl`` format line's column alignments (``lc`` of ``lB cw(2i)``), its modifiers
    (bold, widths, fonts) left out."""
    bare = re.sub(r"w\([^)]*\)|f(?:\([^)]*\)|[A-Z]{1,2})", "", format_line.rstrip(". "))
    return "".join(re.findall(r"[lrcnas^]", bare.lower()))


def _tbl_rows(lines: list[str], tab: str) -> tuple[list[list[str]], int | None, int]:
    """A ``tbl`` table's data lines as rows of cells, unescaped (split at ``tab``; a ``T{`` ...
    ``T}`` text block one cell, its lines joined, a font request's words kept: ``.BR
    namespaces (7).``), the rows above its ``.TH`` (None without one) and the rows above its
    first rule line (``_``, ``=``; -1 without one)."""
    rows: list[list[str]] = []
    header_rows: int | None = None
    ruled_after = -1
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        if re.match(r"^[.']\s*TH\b", line):
            header_rows = len(rows)
        if line.strip() in ("_", "=") and ruled_after == -1:
            ruled_after = len(rows)
        if re.match(r"^[.']\s*T&", line):  # new format lines follow, up to one ending in "."
            while at < len(lines) and not lines[at - 1].rstrip().endswith("."):
                at += 1
            continue
        if line[:1] in (".", "'") or line.strip() in ("_", "=", ""):
            continue
        cells: list[str] = []
        parts = line.split(tab)
        while parts and parts[-1].rstrip().endswith("T{"):
            block = []
            while at < len(lines) and not lines[at].startswith("T}"):
                block.append(_block_line_text(lines[at]))
                at += 1
            rest = lines[at][2:] if at < len(lines) else ""
            at += 1
            cells += [*map(_unescaped, parts[:-1]),
                      _unescaped(parts[-1].rstrip()[:-2]) + " ".join(block)]
            parts = rest.split(tab)[1:]
        rows.append(cells + [_unescaped(part) for part in parts])
    return rows, header_rows, ruled_after


def _block_line_text(line: str) -> str:
    """The words a line of a ``T{`` text block shows: a font request's (``.BR euser``,
    ``.I file``), none of another request's (pandoc indents its ``.PP``), else its own."""
    request = re.match(r"^\s*[.']\s*(\S*)\s*(.*)$", line)
    if request is None:
        return _unescaped(line)
    words = _arguments(request.group(2))
    if request.group(1) in _FONTS:
        return " ".join(words)
    return "".join(words) if request.group(1) in _ALTERNATING else ""


class ManFormat(DocumentFormat):
    """Manual pages in roff: ``.man`` files, and files no format claims that look like one
    (:func:`looks_like_roff`)."""

    name = "man"
    suffixes = (".man",)
    plain_text = True

    def extractor(self) -> Extractor:
        return Extractor("man-roff", "9")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """The page's text, a section per heading (the module docstring).

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`), or no text
                once its requests are read.
        """
        decoded = decode_text(data, "manual page")
        title, blocks = roff_blocks(decoded.text)
        if not blocks:
            raise ExtractionError("a manual page without text once its requests are read")
        extracted = blocks_to_extracted(blocks, title or stem, first_is_title=False)
        return Extracted(title=title or extracted.title, canonical_text=extracted.canonical_text,
                         sections=extracted.sections, tables=extracted.tables,
                         notes=decoded.notes)
