"""Optional answer generation through an OpenAI-compatible chat endpoint, and the checks its text passes.

Off by default: nothing here runs unless a caller builds :class:`GeneratorSettings`. The client uses
only the standard library (``http.client``, ``json``) and speaks the ``/chat/completions`` route
that OpenAI, vLLM, llama.cpp's server, Ollama and LM Studio share.

The model is trusted with prose and ``[n]`` markers only. :func:`check_answer` lists the markers,
flags those that name no source, and strips every link the model wrote, because a model can invent
a URL but cannot invent a :class:`~rag_pipeline.core.answer.citations.Citation`: the server appends the
real locations itself in :func:`render_answer`.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rag_pipeline.core.answer.citations import Citation
from rag_pipeline.core.config.validation import check_endpoint_url

ERROR_BODY_CHARS = 500

_MARKER = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")
_MARKER_LABEL = re.compile(r"\d+(?:\s*,\s*\d+)*")
SCHEMES_WITHOUT_SLASHES = (
    "about", "blob", "callto", "data", "file", "ftp", "gopher", "intent", "irc", "javascript",
    "magnet", "mailto", "news", "nntp", "sftp", "sms", "ssh", "tel", "telnet", "urn",
    "vbscript", "view-source", "ws", "wss",
)
"""Schemes removed even where no ``//`` follows (``javascript:``, ``data:``, ``mailto:``...);
any other scheme is removed when ``://`` follows it or it is written as ``<scheme:...>``."""
_HTML_LINKING_TAGS = ("a", "area", "audio", "base", "embed", "form", "iframe", "img", "link",
                      "meta", "object", "script", "source", "track", "video")
_BARE_URL = (r"(?<![\w@.+\-])(?:[A-Za-z][A-Za-z0-9+.\-]*://|www\.|(?i:"
             + "|".join(re.escape(scheme) for scheme in SCHEMES_WITHOUT_SLASHES) + r"):)"
             r"(?:[^\s<>\[\]()\"'`]|\([^\s()<>]*\))+")
_LINK_OR_URL = re.compile(
    r"!?\[(?P<label>[^\[\]\n]*)\]\(\s*<?(?P<target>(?:[^\s()<>]|\([^\s()<>]*\))+)>?(?:\s+\"[^\"\n]*\")?\s*\)"
    r"|<(?P<autolink>[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*)>"
    r"|(?P<tag></?(?i:" + "|".join(_HTML_LINKING_TAGS) + r")\b[^<>]*>)"
    r"|<?(?P<url>" + _BARE_URL + r")>?"
)
_TAG_URL = re.compile(
    r"(?i:\b(?:href|src|srcset|action|formaction|poster|data|content|background|cite))"
    r"\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+))")
_URL_IN_LABEL = re.compile(_BARE_URL)
_TRAILING_PUNCTUATION = ".,;:!?"


class GenerationError(Exception):
    """The chat endpoint could not be reached, failed, or answered something that is not a chat reply."""


@dataclass(frozen=True)
class GeneratorSettings:
    """Where and how to ask an OpenAI-compatible chat endpoint.

    Attributes:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1``; ``/chat/completions`` is appended.
        model: The model name the endpoint serves.
        api_key: Sent as ``Authorization: Bearer <api_key>`` when set.
        timeout_s: Seconds for the whole exchange: connection, request and every byte of
            the reply (an endpoint that trickles its answer ends there too).
        temperature: Sampling temperature; ``0.0`` asks for the most likely answer.
        max_tokens: Upper bound on the tokens generated.
        max_reply_bytes: A reply body longer than this is refused unread past the limit.

    Raises:
        ValueError: If ``base_url`` is not an http(s) URL with a host and a valid port,
            ``model`` is empty, ``timeout_s``, ``max_tokens`` or ``max_reply_bytes`` is not
            positive, or ``temperature`` is negative.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    temperature: float = 0.0
    max_tokens: int = 512
    max_reply_bytes: int = 4 * 1024 * 1024

    def __post_init__(self) -> None:
        check_endpoint_url(self.base_url, "base_url")
        if not self.model:
            raise ValueError("model must name the model the endpoint serves")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.max_reply_bytes < 1:
            raise ValueError(f"max_reply_bytes must be >= 1, got {self.max_reply_bytes}")

    @property
    def endpoint(self) -> str:
        """The chat route: ``base_url`` without trailing slashes, plus ``/chat/completions``."""
        return f"{self.base_url.rstrip('/')}/chat/completions"


def generate(prompt: str, settings: GeneratorSettings) -> str:
    """Ask the chat endpoint for one completion of a single user message.

    Environment proxy variables are ignored: the request goes straight to ``settings.base_url``,
    and the whole exchange ends within ``settings.timeout_s``.

    Args:
        prompt: The whole prompt, sent as the one ``user`` message.
        settings: Endpoint, model and sampling settings.

    Returns:
        ``choices[0].message.content`` of the reply.

    Raises:
        GenerationError: On an HTTP error status, a refused or failed connection, a timeout, a reply
            over ``settings.max_reply_bytes``, a reply that is not JSON, or JSON without a text
            ``choices[0].message.content``.
    """
    url = settings.endpoint
    body = {
        "model": settings.model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if settings.api_key is not None:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    status, reason, raw = _post(url, json.dumps(body).encode("utf-8"), headers, settings)
    if status >= 400:
        detail = raw[:ERROR_BODY_CHARS].decode("utf-8", errors="replace").strip()
        raise GenerationError(f"{url} answered HTTP {status} {reason}"
                              + (f": {detail}" if detail else ""))
    if len(raw) > settings.max_reply_bytes:
        raise GenerationError(f"{url} answered more than {settings.max_reply_bytes} bytes "
                              "(max_reply_bytes): refused")
    return _reply_text(raw, url)


def _post(url: str, data: bytes, headers: dict[str, str],
          settings: GeneratorSettings) -> tuple[int, str, bytes]:
    """POSTs ``data`` and reads the reply, all within ``settings.timeout_s`` in total: at the
    deadline a timer shuts the socket down, so an endpoint that trickles a byte at a time ends
    there too. Returns the status, its reason and at most ``max_reply_bytes + 1`` bytes."""
    parts = urlsplit(url)
    connection_class = (http.client.HTTPSConnection if parts.scheme == "https"
                        else http.client.HTTPConnection)
    connection = connection_class(parts.hostname, parts.port, timeout=settings.timeout_s)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        if connection.sock is not None:
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(settings.timeout_s, expire)
    timer.daemon = True
    timer.start()
    too_late = GenerationError(f"no answer from {url} within {settings.timeout_s} s")
    try:
        connection.request("POST", path, body=data, headers=headers)
        response = connection.getresponse()
        raw = response.read(settings.max_reply_bytes + 1)
    except ConnectionRefusedError as exc:
        raise GenerationError(f"connection to {url} refused: is the server running?") from exc
    except TimeoutError as exc:
        raise too_late from exc
    except socket.gaierror as exc:
        raise GenerationError(f"cannot reach {url}: {exc}") from exc
    except (OSError, http.client.HTTPException) as exc:
        if expired.is_set():
            raise too_late from exc
        raise GenerationError(f"connection to {url} failed: {exc}") from exc
    finally:
        timer.cancel()
        connection.close()
    if expired.is_set():  # the shutdown ended a read early: what was read is not the reply
        raise too_late
    return response.status, response.reason, raw


def _reply_text(raw: bytes, url: str) -> str:
    try:
        reply: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GenerationError(
            f"{url} answered malformed JSON ({exc}): {raw[:ERROR_BODY_CHARS]!r}") from exc
    if isinstance(reply, dict) and "choices" not in reply and "error" in reply:
        raise GenerationError(f"{url} answered an error: {reply['error']}")
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise GenerationError(
            f"{url} answered JSON without choices[0].message.content: {raw[:ERROR_BODY_CHARS]!r}") from exc
    if not isinstance(content, str):
        raise GenerationError(f"{url} answered a non-text choices[0].message.content: {content!r}")
    return content


@dataclass(frozen=True)
class CheckedAnswer:
    """A model's answer with its links removed and its ``[n]`` markers sorted into valid and unknown.

    Attributes:
        text: The answer without the links the model wrote; Markdown links keep their label.
        cited: Distinct source indices in ``1..n_sources`` that the answer cites, ascending.
        unknown_citations: Distinct marker numbers outside ``1..n_sources``, ascending; their
            markers stay in ``text``.
        removed_urls: The URLs taken out of the text, distinct, in order of appearance.
    """

    text: str
    cited: tuple[int, ...]
    unknown_citations: tuple[int, ...]
    removed_urls: tuple[str, ...]


def check_answer(raw: str, n_sources: int) -> CheckedAnswer:
    """Strip the model's own links and sort its citation markers against ``n_sources`` sources.

    Markers are ``[n]``, ``[n, m, ...]`` and runs such as ``[n][m]``, read after the links are
    removed. Removed links are any ``scheme://...`` (http, https, file, ftp, ...), any
    ``www....`` and any URL of a scheme in :data:`SCHEMES_WITHOUT_SLASHES` (``javascript:...``,
    ``data:...``, ``mailto:...``), optionally in ``<...>``, each ending at whitespace, a quote, an
    angle or square bracket or an unbalanced parenthesis (so a marker written right after a URL
    survives); Markdown autolinks ``<scheme:...>`` of any scheme; HTML tags that link or embed
    (``<a>``, ``</a>``, ``<img>``, ``<iframe>``, ``<script>``, ...), whose text between the tags
    stays and whose ``href``/``src``-like attribute values count as removed URLs; and Markdown
    links or images ``[label](target)``, which keep ``label`` (as ``[label]`` when the label is
    itself a marker such as ``[1](https://...)``). Sentence punctuation right after a URL stays;
    the spaces around a removed link collapse to one, or to none at either end of a line (a
    line's indentation stays).

    Args:
        raw: The model's answer.
        n_sources: How many sources the prompt numbered ``[1]..[n_sources]``.

    Returns:
        The cleaned text with its valid and unknown citations and the removed URLs.

    Raises:
        ValueError: If ``n_sources`` is negative.
    """
    if n_sources < 0:
        raise ValueError(f"n_sources must be >= 0, got {n_sources}")
    text, removed = _strip_links(raw)
    numbers = {int(n) for marker in _MARKER.finditer(text) for n in marker[1].split(",")}
    return CheckedAnswer(
        text=text,
        cited=tuple(sorted(n for n in numbers if 1 <= n <= n_sources)),
        unknown_citations=tuple(sorted(n for n in numbers if not 1 <= n <= n_sources)),
        removed_urls=tuple(dict.fromkeys(removed)),
    )


def _strip_links(raw: str) -> tuple[str, list[str]]:
    """``raw`` without its links, and the removed URLs in order of appearance."""
    removed: list[str] = []
    text = ""
    position = 0
    for match in _LINK_OR_URL.finditer(raw):
        text += raw[position:match.start()]
        position = match.end()
        if match["url"] is not None:
            url = match["url"].rstrip(_TRAILING_PUNCTUATION)
            removed.append(url)
            replacement = match["url"][len(url):]
        elif match["autolink"] is not None:
            removed.append(match["autolink"])
            replacement = ""
        elif match["tag"] is not None:
            removed += [next(v for v in value if v) for value in _TAG_URL.findall(match["tag"])
                        if any(value)]
            replacement = ""
        else:
            label = match["label"]
            for inner in _URL_IN_LABEL.finditer(label):
                removed.append(inner[0])
            label = _URL_IN_LABEL.sub("", label).strip()
            removed.append(match["target"])
            replacement = f"[{label}]" if _MARKER_LABEL.fullmatch(label) else label
            if replacement:
                text += replacement
                continue
        before = text.rstrip(" \t")
        at_line_start = before == "" or before.endswith("\n")
        if replacement:
            text = (text if at_line_start else before) + replacement
            continue
        after = len(raw) - len(raw[position:].lstrip(" \t"))
        spaced = before != text or after != position
        at_line_end = after == len(raw) or raw[after] == "\n"
        if not at_line_start:
            text = before + (" " if spaced and not at_line_end else "")
        position = after
    return text + raw[position:], removed


def render_answer(checked: CheckedAnswer, citations: Sequence[Citation]) -> str:
    """The reply a user sees: the checked text, a warning for unknown markers, then the sources.

    The layout is the text, a blank line, ``Warning: ...`` when the answer has unknown markers,
    ``Sources:``, and one ``[index] document_name — locator_label — url`` line per citation, in the
    order given. The URLs come from the citations, never from the model.

    Args:
        checked: The answer as returned by :func:`check_answer`.
        citations: The sources the prompt numbered, attached by the server.

    Returns:
        The rendered answer, without a trailing newline.

    Raises:
        ValueError: If the answer cites an index that no citation carries.
    """
    indices = {citation.index for citation in citations}
    missing = [n for n in checked.cited if n not in indices]
    if missing:
        raise ValueError(f"the answer cites {_markers(missing)}, but no citation carries that index")
    lines = [checked.text.strip(), ""]
    if checked.unknown_citations:
        unknown = checked.unknown_citations
        lines.append(f"Warning: the answer cites {_markers(unknown)}, which "
                     f"{'is' if len(unknown) == 1 else 'are'} not among the sources below.")
    lines.append("Sources:" if citations else "Sources: none")
    lines.extend(f"[{c.index}] {c.document_name} — {c.locator_label} — {c.url}" for c in citations)
    return "\n".join(lines)


def _markers(numbers: Sequence[int]) -> str:
    return " ".join(f"[{n}]" for n in numbers)
