"""A folder on this machine as a corpus: every file under it but hidden ones.

An entry's fingerprint is its ``lstat`` size, modification time, mode, inode and change time:
an unchanged file is never opened, a touched one is read and its sha256 compared with its
record's. The inode and change time catch a file replaced by another of the same size and
modification time (``mv`` over it, ``cp -p``, ``rsync -a``), which size and time alone missed. The checks on
each file before it is opened (links out of the root, special files, the size) are those of
:func:`rag_pipeline.core.ingest.reading.read_document_bytes`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from rag_pipeline.core.ingest.formats import format_for
from rag_pipeline.core.ingest.reading import read_document_bytes
from rag_pipeline.core.ingest.sources.base import Entry, SourceError, hidden_top, shown_file_name


def discover(corpus_root: Path) -> list[Path]:
    """Every entry under the root but hidden ones and real directories, sorted by path.

    Files no format reads are listed too, and so are symlinks and special files, so that each
    one is answered (``skipped`` or ``failed`` with its reason) rather than silently left out.
    Symlinked directories are not walked into.
    """
    return listing(corpus_root)[0]


def listing(corpus_root: Path) -> tuple[list[Path], tuple[str, ...]]:
    """:func:`discover`'s entries, and the hidden names it left out, each once at its top (a
    hidden folder, not its files), sorted. A hidden folder is not walked into (a large
    ``.git`` costs one name, not a walk).

    Raises:
        SourceError: A folder could not be listed (unreadable, gone, an I/O error): the run
            stops rather than take that folder's documents for deleted."""
    found = []
    hidden = []

    def unlisted(error: OSError) -> None:
        folder = Path(error.filename or corpus_root)
        where = (shown_file_name(folder.relative_to(corpus_root).as_posix())
                 if folder != corpus_root and folder.is_relative_to(corpus_root) else str(folder))
        raise SourceError(f"the folder {where} of the corpus could not be listed "
                          f"({error.strerror or error}): nothing is published, the served index "
                          "is as it was; make it readable by this user, or rename it to start "
                          "with '.' to leave it out of the corpus") from error

    def is_link(path: Path) -> bool:
        try:
            return path.is_symlink()
        except OSError as error:  # a path longer than the system takes (ENAMETOOLONG)
            unlisted(error)
            raise

    for folder, folders, files in os.walk(corpus_root, onerror=unlisted):
        here = Path(folder)
        for name in list(folders):
            if name.startswith("."):
                hidden.append(here / name)
                folders.remove(name)
            elif is_link(here / name):
                found.append(here / name)
        for name in files:
            (hidden if name.startswith(".") else found).append(here / name)
    return sorted(found), tuple(sorted(path.relative_to(corpus_root).as_posix()
                                       for path in hidden))


def stat_fingerprint(path: Path) -> str:
    """``stat:<size>:<mtime ns>:<mode>:<inode>:<ctime ns>`` of the entry, and for a symlink also
    of its target (so an edited or swapped target changes it), or ``stat:gone`` when it vanished since the
    listing."""
    try:
        info = os.lstat(path)
    except OSError:
        return "stat:gone"
    own = f"stat:{info.st_size}:{info.st_mtime_ns}:{info.st_mode:o}:{info.st_ino}:{info.st_ctime_ns}"
    if _hard_linked(info):
        return f"{own}:links={info.st_nlink}"  # a link made or removed changes it
    if not stat.S_ISLNK(info.st_mode):
        return own
    try:
        target = os.stat(path)
    except OSError:
        return f"{own}:->gone:{os.readlink(path)}"
    return f"{own}:->{target.st_size}:{target.st_mtime_ns}:{target.st_mode:o}:{target.st_ino}"


def _hard_linked(info: os.stat_result) -> bool:
    """A regular file with more than one name."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def local_entry(path: Path, root: Path) -> Entry:
    """The entry of ``path`` under ``root``: its fingerprint and size (a link's target's).

    Skipped: a symlinked folder that no format's name claims (one that a format's suffix claims
    fails as "not a regular file" when read), and a symlink to a file inside the root. That
    file is read under its own name, or is hidden; read under the link's name, its words
    would take the link's ``[access]`` readers (a link in ``public/`` to ``hr/pay.md``) or
    expose a hidden file. A link out of the root fails when read. A file with more than one
    name (a hard link: ``ln hr/pay.md public/notes.md``) is skipped under each of them: no name
    is its own, and read under one, its words would take that name's readers."""
    try:
        info: os.stat_result | None = path.stat()
    except OSError:
        info = None
    size = info.st_size if info is not None and not stat.S_ISDIR(info.st_mode) else None
    skipped = None
    if path.is_symlink():
        if path.is_dir() and format_for(path) is None:
            skipped = "a symlink to a directory: not walked into"
        elif (target := _file_inside(path, root)) is not None:
            top = hidden_top(target)
            skipped = (f"a symlink to {shown_file_name(target)}: not followed (that file is read "
                       "under its own name)" if top is None else
                       f"a symlink into {shown_file_name(top)}, a hidden name: not followed, not "
                       "part of the corpus")
    elif info is not None and _hard_linked(info):
        skipped = (f"a hard link ({info.st_nlink} names for one file): not read under any of "
                   "them (another name may have other [access] readers); copy the file to "
                   "index it")
    return Entry(path.relative_to(root).as_posix(), stat_fingerprint(path), size, skipped=skipped)


def _file_inside(link: Path, root: Path) -> str | None:
    """The id (path under ``root``) of the regular file ``link`` resolves to, or ``None`` when
    it resolves to no file inside the root (a loop, a missing target, a special file, a path
    outside: reading it says which)."""
    try:
        target = link.resolve(strict=True)
        inside = target.relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return None
    return inside.as_posix() if target.is_file() else None


class LocalSource:
    """The files under ``root``."""

    content_addressed = False

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.uri = str(self.root)
        self.hidden: tuple[str, ...] = ()

    def _missing(self) -> str | None:
        if not self.root.is_dir():
            return f"corpus folder not found: {self.root}"
        return None

    def entries(self) -> list[Entry]:
        missing = self._missing()
        if missing is not None:
            raise SourceError(missing)
        paths, self.hidden = listing(self.root)
        return [local_entry(path, self.root) for path in paths]

    def path_of(self, document_id: str) -> Path:
        return self.root / document_id

    def read(self, entry: Entry, max_bytes: int) -> bytes:
        return read_document_bytes(self.path_of(entry.document_id), self.root, max_bytes)

    def prefetch(self, entries: list[Entry], max_bytes: int) -> None:
        return None  # reads are local: nothing to start ahead

    def location(self, document_id: str) -> str:
        return str(self.path_of(document_id))

    def revision(self) -> str | None:
        return None

    def watch_token(self) -> str:
        """Digest of every entry's relative path, size, modification time, inode and change
        time (``missing`` when the folder is not there): one ``lstat`` per file."""
        if not self.root.is_dir():
            return "missing"
        digest = hashlib.sha256()
        for path in discover(self.root):
            try:
                info = os.lstat(path)
            except FileNotFoundError:  # removed between the listing and now: the next tick sees it
                continue
            digest.update(f"{path.relative_to(self.root)}\0{info.st_size}\0{info.st_mtime_ns}\0"
                          f"{info.st_ino}\0{info.st_ctime_ns}\n"
                          .encode("utf-8", "surrogateescape"))
        return digest.hexdigest()[:16]

    def still_there(self) -> None:
        if not self.root.is_dir():
            raise SourceError(f"the corpus folder {self.root} disappeared while it was being "
                              "read: nothing is published, the served index is as it was")

    def close(self) -> None:
        return None
