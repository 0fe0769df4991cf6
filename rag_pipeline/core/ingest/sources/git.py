"""A git repository's commit as a corpus: ``git+file:///path/to/repo[@ref]``, ``git+https://...``.

The files of the commit's tree are the corpus, tracked files only (never the work tree); ``ref``
is a branch, a tag or a commit, by default the repository's default branch (``HEAD``). The ref
is resolved once per listing, so one run reads one commit, recorded as its revision. A
document's id is its path in the tree and its fingerprint the blob id: an unchanged file is
never read, and a renamed one keeps its record (and so its vectors). Submodules, symbolic links
and Git LFS pointers are said, never indexed as pointer text. A repository that is not a local
folder is mirrored into ``cache_dir`` and fetched before each listing.

A credential in the URL (``git+https://deploy:TOKEN@host/repo.git``, a deploy token's usual
form) is used to fetch and never shown: the source's :attr:`GitSource.uri`, every document's
location (and so every citation's URL), the mirror's name and every message name the repository
without it (an ``ssh`` URL keeps its user name, a ``https`` one drops its user too: a token is
often given as the user).

Everything goes through the ``git`` command line (``ls-tree -r -l -z --full-tree`` for the
listing, one ``cat-file --batch`` process for the bytes).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.sources.base import (
    Entry,
    OriginalGoneError,
    SourceError,
    hidden_top,
    shown_key,
    unsafe_key_reason,
)

LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
LOCATION = re.compile(r"(?P<uri>git\+.+?)@(?P<commit>[0-9a-f]{40}(?:[0-9a-f]{24})?):(?P<path>.+)", re.S)
"""A document's location, as :meth:`GitSource.location` writes it: ``git+<url>@<commit>:<path>``
(the first ``@<commit>:``: a path may hold anything after it)."""
GIT_TIMEOUT_SECONDS = 300
"""A clone or fetch of a remote repository; local commands take milliseconds."""
BLOB_READ_SECONDS = 30


_USER_INFO = re.compile(r"(?i)(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^/@\s:]*)(?::[^/@\s]*)?@")


def without_credentials(text: str) -> str:
    """``text`` (a URL, or git's message naming one) with the credential of every URL in it
    left out: its user and password, or for an ``ssh`` URL its password only."""
    return _USER_INFO.sub(lambda found: found["scheme"] + (
        found["user"] + "@" if found["scheme"].lower().endswith("ssh://") and found["user"]
        else ""), text)


def parse_git_uri(uri: str) -> tuple[str, str | None]:
    """``(repository, ref)`` of ``git+<url>[@ref]``: the ref is what follows the last ``@`` of
    the URL's path (pip's rule; percent-encoded like the path: ``fix%231`` is ``fix#1``),
    ``None`` for the default branch. A ``file`` URL's repository is its local path.

    Raises:
        SourceError: If the URL names no repository, or holds a ``#`` or ``?`` (a URL would end
            its path there: a ref ``fix#1`` would be read as ``fix``), or a ``file`` URL names
            a host (``git+file://srv/docs`` is the folder ``/docs`` on a host ``srv``).
    """
    shown = without_credentials(uri)
    url = uri.removeprefix("git+")
    if "#" in url or "?" in url:
        raise SourceError(f"{shown}: a '#' or '?' ends a URL's path, so the repository or the ref "
                          "would be cut there: write them as %23 and %3F")
    parts = urlsplit(url)
    path, ref = parts.path, None
    if "@" in path:
        path, ref = path.rsplit("@", 1)
        if not ref:
            raise SourceError(f"{shown}: an empty ref after '@'")
        ref = unquote(ref)
    if not path or path == "/":
        raise SourceError(f"{shown}: no repository in the URL")
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise SourceError(f"{shown}: a file URL names a folder of this machine, written with "
                              f"three slashes (git+file:///path/to/repo), not a host "
                              f"({parts.netloc!r})")
        return unquote(path), ref
    if parts.scheme not in ("http", "https", "ssh"):
        raise SourceError(f"{shown}: git+file, git+https, git+ssh or git+http URLs only")
    return parts._replace(path=path).geturl(), ref


class GitSource:
    """The tree of one commit of a repository."""

    content_addressed = True

    def __init__(self, uri: str, cache_dir: Path | None = None) -> None:
        self.uri = without_credentials(uri)
        self.repository, self.ref = parse_git_uri(uri)
        self.local = uri.startswith("git+file:")
        if self.local:
            self.git_dir = Path(self.repository)
        else:
            if cache_dir is None:
                raise SourceError(f"{self.uri}: a remote repository needs a cache folder to "
                                  "mirror it")
            shown = without_credentials(self.repository)
            name = hashlib.sha256(shown.encode()).hexdigest()[:16]
            self.git_dir = Path(cache_dir) / f"{name}.git"
        self.commit: str | None = None
        self.hidden: tuple[str, ...] = ()
        self._batch: subprocess.Popen | None = None

    def _git(self, *args: str, timeout: float = GIT_TIMEOUT_SECONDS,
             where: Path | None = None) -> bytes:
        command = ["git", "-C", str(where or self.git_dir), *args]
        try:
            done = subprocess.run(command, capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise SourceError(f"{self.uri}: git {args[0]} had no answer within {timeout:.0f} s "
                              "(is the repository's host reachable?)") from exc
        except OSError as exc:
            raise SourceError(f"{self.uri}: git {args[0]} failed: {exc}") from exc
        if done.returncode != 0:
            message = without_credentials(done.stderr.decode(errors="replace")).strip().splitlines()
            fatal = next((line for line in message if line.startswith("fatal:")), None)
            said = fatal or (message[-1] if message else f"exit {done.returncode}")
            if fatal is not None and "dubious ownership" in fatal:
                said += (f" (git reads a repository another user owns only once trusted: `git "
                         f"config --global --add safe.directory {self.git_dir}` as the user "
                         "running rag-pipeline)")
            raise SourceError(f"{self.uri}: git {args[0]} failed: {said}")
        return done.stdout

    def _sync(self) -> None:
        """A local repository must exist; a remote one is mirrored, then fetched."""
        if self.local:
            if not self.git_dir.is_dir():
                raise SourceError(f"{self.uri}: no repository at {self.git_dir}")
            try:
                found = Path(self._git("rev-parse", "--absolute-git-dir", timeout=30)
                             .decode().strip()).resolve()
            except SourceError as exc:
                if "dubious ownership" in str(exc):
                    raise
                raise SourceError(f"{self.uri}: {self.git_dir} is not a git repository") from exc
            here = self.git_dir.resolve()
            if found != here:  # a bare repository or a .git folder is its own git folder
                try:
                    top = Path(self._git("rev-parse", "--show-toplevel", timeout=30)
                               .decode().strip()).resolve()
                except SourceError:  # inside a bare repository's or a .git folder's files
                    top = found
                if top != here:
                    # git itself would answer for the repository around the folder, whose
                    # whole tree (every other folder) would then be read as this corpus.
                    raise SourceError(
                        f"{self.uri}: {self.git_dir} is a folder inside the repository {top}, "
                        f"not a repository: a corpus is a commit's whole tree, so name the "
                        f"repository (git+file://{top}); [access] rules decide who reads "
                        "which of its folders")
            return
        if not self.git_dir.is_dir():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            self._git("clone", "--mirror", "--quiet", "--", self.repository, str(self.git_dir),
                      where=self.git_dir.parent)
        else:
            # The URL as configured now: a token rotated in the configuration is the one used.
            self._git("remote", "set-url", "origin", self.repository, timeout=30)
            self._git("remote", "update", "--prune")
            if self.ref is None:
                self._follow_default_branch()

    def _follow_default_branch(self) -> None:
        """Points the mirror's ``HEAD`` at the branch the remote's ``HEAD`` names now: a fetch
        never moves it, so a repository whose default branch changed (``master`` to ``main``)
        would be read at the old branch for ever."""
        out = self._git("ls-remote", "--symref", "--", self.repository, "HEAD", timeout=60,
                        where=Path("/")).decode(errors="replace")
        for line in out.splitlines():
            target, _, name = line.removeprefix("ref:").strip().partition("\t")
            if line.startswith("ref:") and name == "HEAD" and target.startswith("refs/heads/"):
                self._git("symbolic-ref", "HEAD", target, timeout=30)
                return

    def resolve(self) -> str:
        """The commit the ref names now.

        Raises:
            SourceError: If the ref does not exist (or the repository has no commit).
        """
        self._sync()
        wanted = self.ref or "HEAD"
        try:
            out = self._git("rev-parse", "--verify", "--quiet", "--end-of-options",
                            f"{wanted}^{{commit}}", timeout=30)
        except SourceError:
            if self.ref is None:
                raise SourceError(f"{self.uri}: {self._no_default_commit()}") from None
            raise SourceError(f"{self.uri}: the ref {self.ref!r} does not exist (a branch, tag "
                              "or commit of the repository)") from None
        return out.decode().strip()

    def _no_default_commit(self) -> str:
        """Why the default branch names no commit, with the branches that have one."""
        try:
            head = self._git("symbolic-ref", "--quiet", "--short", "HEAD", timeout=30).decode().strip()
            branches = self._git("for-each-ref", "--format=%(refname:short)", "refs/heads",
                                 timeout=30).decode().split()
        except SourceError:
            return "the default branch has no commit"
        if not branches:
            return f"the default branch {head!r} has no commit (the repository has none)"
        named = ", ".join(branches[:5]) + (", ..." if len(branches) > 5 else "")
        return (f"the default branch {head!r} has no commit; branches with commits: {named} "
                f"(name one after '@': {self.uri}@{branches[0]})")

    def entries(self) -> list[Entry]:
        self.commit = self.resolve()
        listing = self._git("ls-tree", "-r", "-l", "-z", "--full-tree", self.commit)
        out = []
        hidden = set()
        for record in listing.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, kind, oid, size = meta.decode().split()
            path = raw_path.decode("utf-8", "surrogateescape")
            refused = unsafe_key_reason(path, "path")
            if refused is not None:
                out.append(Entry(shown_key(path),
                                 f"blob:{oid}", refused=refused))
                continue
            top = hidden_top(path)
            if top is not None:
                hidden.add(top)
                continue
            if kind == "commit":
                out.append(Entry(path, f"commit:{oid}", refused=(
                    f"a git submodule (commit {oid[:12]} of another repository): its files are "
                    "not indexed; index that repository as a corpus of its own")))
            elif mode == "120000":
                out.append(Entry(path, f"blob:{oid}", int(size),
                                 skipped="a symbolic link in the commit's tree: not followed"))
            elif kind == "blob":
                out.append(Entry(path, f"blob:{oid}", int(size)))
        self.hidden = tuple(sorted(hidden))
        return sorted(out, key=lambda e: e.document_id)

    def _batch_process(self) -> subprocess.Popen:
        if self._batch is None or self._batch.poll() is not None:
            self._batch = subprocess.Popen(["git", "-C", str(self.git_dir), "cat-file", "--batch"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL)
        return self._batch

    def read(self, entry: Entry, max_bytes: int) -> bytes:
        if entry.size is not None and entry.size > max_bytes:
            raise ExtractionError(f"too large: {entry.size} bytes, over the limit of {max_bytes} "
                                  "bytes per document (max_document_bytes)")
        oid = entry.fingerprint.split(":", 1)[1]
        process = self._batch_process()
        stdin: IO[bytes] = process.stdin  # type: ignore[assignment]
        stdout: IO[bytes] = process.stdout  # type: ignore[assignment]
        try:
            stdin.write(f"{oid}\n".encode())
            stdin.flush()
            header = stdout.readline().split()
            if len(header) != 3:
                raise SourceError(f"{self.uri}: the blob {oid} of {entry.document_id} is missing "
                                  "from the repository")
            size = int(header[2])
            data = stdout.read(size)
            stdout.read(1)
        except (OSError, ValueError) as exc:
            raise SourceError(f"{self.uri}: git cat-file failed: {exc}") from exc
        if data.startswith(LFS_POINTER):
            raise ExtractionError("a Git LFS pointer: the file's content is in LFS storage, not "
                                  "in the repository, so it is not indexed (pointer text is no "
                                  "document)")
        return data

    def prefetch(self, entries: list[Entry], max_bytes: int) -> None:
        return None  # reads are local: nothing to start ahead

    def location(self, document_id: str) -> str:
        base = self.uri.rsplit("@", 1)[0] if self.ref is not None else self.uri
        return f"{base}@{self.commit}:{document_id}" if self.commit else f"{base}:{document_id}"

    def blob(self, commit: str, path: str, max_bytes: int) -> bytes:
        """The bytes of ``path`` at ``commit``, read from the repository as it is (a remote
        one's mirror, never fetched).

        Raises:
            SourceError: If the repository or the blob is not there, or the blob is larger than
                ``max_bytes``.
        """
        if not self.git_dir.is_dir():
            raise OriginalGoneError(f"{self.uri}: no repository (or mirror of it) at {self.git_dir}")
        spec = f"{commit}:{path}"
        try:
            size = int(self._git("cat-file", "-s", spec, timeout=BLOB_READ_SECONDS))
        except SourceError as exc:
            if isinstance(exc.__cause__, (OSError, subprocess.TimeoutExpired)):
                raise
            raise OriginalGoneError(f"{self.uri}: no blob {spec} in the repository (any more)") from exc
        if size > max_bytes:
            raise OriginalGoneError(f"{self.uri}: the blob {spec} is over {max_bytes} bytes")
        return self._git("cat-file", "blob", spec, timeout=BLOB_READ_SECONDS)

    def revision(self) -> str | None:
        return self.commit

    def watch_token(self) -> str:
        """The commit the ref names (a remote is asked with ``git ls-remote``, nothing fetched).

        Raises:
            SourceError: If the repository or the ref cannot be read.
        """
        if self.local:
            return self.resolve()
        out = self._git("ls-remote", "--", self.repository, self.ref or "HEAD", timeout=60,
                        where=Path("/"))
        # ls-remote matches the ref as a tail (``main`` lists refs/heads/feature/main too): the
        # ref named is the first of these, as git's own rev-parse reads a name.
        listed = dict(reversed(line.split("\t", 1)) for line in out.decode().splitlines()
                      if "\t" in line)
        if self.ref is None:
            return listed.get("HEAD", "ref:HEAD")
        return next((listed[name] for name in (
            self.ref, f"refs/{self.ref}", f"refs/tags/{self.ref}", f"refs/heads/{self.ref}",
            f"refs/remotes/{self.ref}", f"refs/remotes/{self.ref}/HEAD") if name in listed),
            f"ref:{self.ref}")

    def still_there(self) -> None:
        if self.local and not self.git_dir.is_dir():
            raise SourceError(f"{self.uri}: the repository disappeared while it was being read: "
                              "nothing is published, the served index is as it was")

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin is not None:
                self._batch.stdin.close()
            self._batch.wait(timeout=30)
            if self._batch.stdout is not None:
                self._batch.stdout.close()
            self._batch = None
