"""Bearer tokens: who a request is, as the groups it reads for.

A token is ``rp_<id>_<secret>``: ``id`` (8 hex digits) finds its record, ``secret`` (43 URL-safe
characters, 256 random bits) proves it. Only a salted hash of the secret is stored, in
``<data folder>/access/tokens.json``, file mode 0600, replaced atomically (a temporary file,
then a rename) so a reader never sees half a file, each change (``tokens add``, ``tokens
revoke``) under an exclusive lock of ``tokens.lock`` beside it so two at once never undo each
other (a revocation written over by an addition read before it): HMAC-SHA-256 keyed by the salt (scheme
``sha256``). A slow hash guards guessable passwords; 256 random bits cannot be guessed from a
fast one, and a check costs a microsecond, so guesses at a token's id cost the service nothing
and never stand between a holder and their token. Records written before (scheme ``scrypt``,
RFC 7914, ``n = 2**14, r = 8, p = 1``) are still checked, under the limits of :meth:`TokenStore.
verify`. ``tokens add`` prints the token once; nothing else ever holds it.

A running ``serve`` re-reads the file when its modification time changes (every poll), so a
revoked token stops working within the poll interval; a verified secret is remembered in memory
(by its SHA-256) for as long as its record is unchanged, so a request costs one scrypt per token
per file version, not one per request. When each token was last used is kept beside it, in
``tokens-used.json`` (also 0600), written by ``serve`` at most every :data:`USED_FLUSH_SECONDS`.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = ["ACCESS_DIR", "TOKENS_FILE", "TokenError", "TokenRecord", "TokenStore",
           "check_expires_days", "check_groups", "check_token_name"]

ACCESS_DIR = "access"
TOKENS_FILE = "tokens.json"
LOCK_FILE = "tokens.lock"
"""Beside the tokens file: held while a change reads, changes and replaces it."""
USED_FILE = "tokens-used.json"
TOKEN = re.compile(r"rp_(?P<id>[0-9a-f]{8})_(?P<secret>[A-Za-z0-9_-]{43})")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
GROUP = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")
SCRYPT = {"n": 2**14, "r": 8, "p": 1}
WRONG_SECRET_PAUSE = 1.0
"""Seconds a token id hashes no new secret from one client address after a wrong one from it
(the right one, once verified, is known without hashing and is never paused). Per address, so
wrong guesses from elsewhere cannot lock a holder out of their own token."""
ID_HASHES_PER_SECOND = 4
"""Secrets hashed for one token id in any second, from every address together: guesses from
many addresses cost at most this many hashes a second (a holder whose right token was
verified once since the service started is known without hashing, whatever the guesses)."""
MAX_PAUSES = 4096
"""Pauses remembered at most; past it, those that have run out are forgotten."""
_HASHING = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))
"""Secrets hashed at once, at most, whatever their ids and addresses (each scrypt takes 16 MB)."""
MAX_EXPIRES_DAYS = 36_500
"""A token's lifetime at most, in days (past it, a date no longer fits)."""
USED_FLUSH_SECONDS = 5.0
"""How often, at most, a serving process records when its tokens were last used."""


class TokenError(Exception):
    """A token that cannot be accepted, or a token command that cannot be done (one line)."""


def check_expires_days(days: float) -> float:
    """``days``, when a token may last that long: more than 0, at most :data:`MAX_EXPIRES_DAYS`.

    Raises:
        TokenError: Out of that range, infinite or NaN.
    """
    if not 0 < days <= MAX_EXPIRES_DAYS:  # NaN compares false
        raise TokenError(f"the days a token lasts must be more than 0 and at most "
                         f"{MAX_EXPIRES_DAYS:,} (100 years); got {days}")
    return days


def check_token_name(name: str) -> str:
    if NAME.fullmatch(name) is None:
        raise TokenError(f"a token name is 1 to 64 letters, digits, '.', '_', '@' or '-', "
                         f"starting with a letter or digit; got {name!r}")
    return name


def check_groups(text: str) -> tuple[str, ...]:
    """``a,b`` as group names (no empty, no duplicates)."""
    groups = [g.strip() for g in text.split(",")]
    if not groups or any(GROUP.fullmatch(g) is None for g in groups):
        raise TokenError(f"--groups must be a comma-separated list of group names (letters, "
                         f"digits, '.', '_', '@', '-'), got {text!r}")
    if len(set(groups)) != len(groups):
        raise TokenError(f"--groups names a group twice: {text!r}")
    return tuple(groups)


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _hash(secret: str, salt: bytes) -> str:
    """The ``scrypt`` scheme's hash (records written before ``sha256``)."""
    return hashlib.scrypt(secret.encode(), salt=salt, **SCRYPT, dklen=32).hex()


def _fast_hash(secret: str, salt: bytes) -> str:
    """The ``sha256`` scheme's hash: HMAC-SHA-256 of the secret keyed by the salt."""
    return hmac.new(salt, secret.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class TokenRecord:
    """What is stored of a token: never the token itself."""

    id: str
    name: str
    groups: tuple[str, ...]
    created: str
    salt: str
    hash: str
    expires: str | None = None
    scheme: str = "scrypt"
    """How ``hash`` was made: ``sha256`` (:func:`_fast_hash`), or ``scrypt`` (a record
    written before, with no ``scheme``)."""

    @classmethod
    def from_json(cls, data: Mapping) -> TokenRecord:
        return cls(str(data["id"]), str(data["name"]), tuple(data["groups"]), str(data["created"]),
                   str(data["salt"]), str(data["hash"]), data.get("expires"),
                   str(data.get("scheme", "scrypt")))

    def expired(self, now: datetime | None = None) -> bool:
        return self.expires is not None and (now or _now()) >= datetime.fromisoformat(self.expires)


def _write_private(path: Path, data: object) -> None:
    """``data`` as JSON at ``path``, mode 0600, by an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, sort_keys=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class TokenStore:
    """The tokens of one data folder.

    Args:
        data_dir: The data folder; the tokens live in its ``access/`` folder.
    """

    def __init__(self, data_dir: Path) -> None:
        self.folder = Path(data_dir) / ACCESS_DIR
        self.path = self.folder / TOKENS_FILE
        self.used_path = self.folder / USED_FILE
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._records: dict[str, TokenRecord] = {}
        self._verified: dict[str, tuple[str, str]] = {}
        self._id_hashes: dict[str, list[float]] = {}
        """Per token id: when its secrets were hashed in the last second."""
        self._hashing_until: dict[tuple[str, str], float] = {}
        """Per token id and client address: when a secret not seen before may be hashed again
        (a wrong one, or one being hashed, pauses that address's hashing for the id)."""
        self._used: dict[str, str] = {}
        self._used_dirty = False
        self._flushed_at = 0.0

    # -- the file ------------------------------------------------------------------------------

    def records(self) -> list[TokenRecord]:
        """Every token's record, by name."""
        return sorted(self._read().values(), key=lambda r: r.name)

    def _read(self) -> dict[str, TokenRecord]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise TokenError(f"{self.path} cannot be read as a token file: {exc}") from None
        try:
            return {r["id"]: TokenRecord.from_json(r) for r in data["tokens"]}
        except (KeyError, TypeError) as exc:
            raise TokenError(f"{self.path} is not a token file (missing {exc})") from None

    def _save(self, records: Mapping[str, TokenRecord]) -> None:
        _write_private(self.path, {"tokens": [asdict(r) for r in
                                              sorted(records.values(), key=lambda r: r.name)]})

    @contextmanager
    def _changing(self) -> Iterator[dict[str, TokenRecord]]:
        """The records as they are, under the exclusive lock of :data:`LOCK_FILE` until the
        block ends (after :meth:`_save`): changes from two processes at once run in turn."""
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        with os.fdopen(os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield self._read()

    def add(self, name: str, groups: tuple[str, ...], expires_days: float | None = None) -> str:
        """Creates a token; returns it (the only time it exists outside the caller).

        Raises:
            TokenError: A bad name, a name taken, or ``expires_days`` not a number of days in
                (0, :data:`MAX_EXPIRES_DAYS`].
        """
        check_token_name(name)
        if expires_days is not None:
            check_expires_days(expires_days)
        with self._changing() as records:
            if any(r.name == name for r in records.values()):
                raise TokenError(f"a token named {name!r} exists: revoke it first, or choose "
                                 "another name")
            token_id = secrets.token_hex(4)
            while token_id in records:
                token_id = secrets.token_hex(4)
            secret = secrets.token_urlsafe(32)
            salt = secrets.token_bytes(16)
            now = _now()
            records[token_id] = TokenRecord(
                token_id, name, tuple(groups), _iso(now), salt.hex(), _fast_hash(secret, salt),
                _iso(now + timedelta(days=expires_days)) if expires_days is not None else None,
                "sha256")
            self._save(records)
        return f"rp_{token_id}_{secret}"

    def revoke(self, name: str) -> TokenRecord:
        with self._changing() as records:
            found = next((r for r in records.values() if r.name == name), None)
            if found is None:
                raise TokenError(f"no token named {name!r}; `rag-pipeline tokens list` shows them")
            del records[found.id]
            self._save(records)
        return found

    def last_used(self) -> dict[str, str]:
        """``id -> when`` each token last authenticated a request (as ``serve`` recorded it)."""
        try:
            return dict(json.loads(self.used_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return {}

    # -- serving -------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Re-reads the file if it changed since the last read; True when it did."""
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp == self._stamp and self._stamp is not None:
                return False
        records = self._read() if stamp is not None else {}
        with self._lock:
            self._records, self._stamp = records, stamp
            self._verified = {k: v for k, v in self._verified.items()
                              if v[0] in records and records[v[0]].hash == v[1]}
        return True

    def verify(self, token: str, client: str | None = None) -> TokenRecord:
        """The record of a valid token, sent from ``client``'s address.

        Raises:
            TokenError: The token is malformed, unknown (or revoked) or expired.
        """
        match = TOKEN.fullmatch(token)
        if match is None:
            raise TokenError("malformed token: expected rp_<8 hex digits>_<43 characters>, "
                             "as `rag-pipeline tokens add` prints it")
        if self._stamp is None:
            self.refresh()
        fast = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            record = self._records.get(match["id"])
            known = self._verified.get(fast)
        if record is None and self.refresh():
            # A token added since the last poll (pasted the moment `tokens add` printed it):
            # the file is looked at now, one stat, not at the next poll.
            with self._lock:
                record = self._records.get(match["id"])
        if record is None:
            raise TokenError("unknown or revoked token")
        if record.scheme == "sha256":
            if not hmac.compare_digest(_fast_hash(match["secret"], bytes.fromhex(record.salt)),
                                       record.hash):
                raise TokenError("unknown or revoked token")
        elif known is None or known != (record.id, record.hash):
            # Each guess costs a scrypt (tens of ms, 16 MB): one at a time per id and address,
            # none for WRONG_SECRET_PAUSE seconds after a wrong one, ID_HASHES_PER_SECOND per
            # id from all addresses, and a few at once in all, so whoever knows a token's id
            # (every holder knows theirs) cannot keep the cores and memory busy with guesses.
            paused = (record.id, client or "")
            with self._lock:
                now = time.monotonic()
                recent = [t for t in self._id_hashes.get(record.id, ()) if now - t < 1.0]
                if now < self._hashing_until.get(paused, 0.0) or len(recent) >= ID_HASHES_PER_SECOND:
                    raise TokenError("unknown or revoked token")
                self._id_hashes[record.id] = [*recent, now]
                self._hashing_until[paused] = float("inf")
            wrong = False  # stays so when no hash was made: that pauses nothing
            try:
                if not _HASHING.acquire(blocking=False):  # never wait: a request may hold the loop
                    raise TokenError("unknown or revoked token")
                try:
                    wrong = not hmac.compare_digest(
                        _hash(match["secret"], bytes.fromhex(record.salt)), record.hash)
                finally:
                    _HASHING.release()
            finally:
                with self._lock:
                    now = time.monotonic()
                    if wrong:
                        self._hashing_until[paused] = now + WRONG_SECRET_PAUSE
                    else:
                        self._hashing_until.pop(paused, None)
                    if len(self._hashing_until) > MAX_PAUSES:
                        self._hashing_until = {k: t for k, t in self._hashing_until.items()
                                               if t > now}
            if wrong:
                raise TokenError("unknown or revoked token")
            with self._lock:
                self._verified[fast] = (record.id, record.hash)
        if record.expired():
            raise TokenError(f"token {record.name!r} expired at {record.expires}")
        with self._lock:
            self._used[record.id] = _iso(_now())
            self._used_dirty = True
        return record

    def record(self, token_id: str) -> TokenRecord | None:
        """The current record of ``token_id`` (None once revoked)."""
        with self._lock:
            return self._records.get(token_id)

    def flush_used(self, force: bool = False) -> None:
        """Writes when each token was last used, if a request used one since the last flush
        and (unless ``force``) :data:`USED_FLUSH_SECONDS` have passed since."""
        now = time.monotonic()
        with self._lock:
            if not self._used_dirty or (not force and now - self._flushed_at < USED_FLUSH_SECONDS):
                return
            used, self._used_dirty, self._flushed_at = dict(self._used), False, now
        merged = {**self.last_used(), **used}
        _write_private(self.used_path, {k: v for k, v in merged.items()})
