"""Tests for ``rag_pipeline.service.tokens``: guesses at a known token id cost one hash, not one
each."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from rag_pipeline.service import tokens
from rag_pipeline.service.tokens import WRONG_SECRET_PAUSE, TokenError, TokenStore


def _clock_and_hashes(monkeypatch: pytest.MonkeyPatch) -> tuple[SimpleNamespace, list[str]]:
    """A clock the test moves (``.now``) for the store, and the secrets it hashes with scrypt."""
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(tokens, "time", SimpleNamespace(monotonic=lambda: clock.now, time=lambda: 0.0))
    hashed: list[str] = []
    real = tokens._hash
    monkeypatch.setattr(tokens, "_hash", lambda secret, salt: hashed.append(secret) or real(secret, salt))
    return clock, hashed


def _scrypt_token(folder: Path, name: str) -> str:
    """A token whose record is of the ``scrypt`` scheme, as ``tokens add`` wrote them before."""
    token = TokenStore(folder).add(name, ("eng",))
    path = folder / "access" / "tokens.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for record in data["tokens"]:
        if record["name"] == name:
            record["hash"] = tokens._hash(token.split("_", 2)[2], bytes.fromhex(record["salt"]))
            del record["scheme"]
    path.write_text(json.dumps(data), encoding="utf-8")
    return token


def test_a_new_token_is_checked_by_a_fast_hash_and_guesses_never_refuse_its_holder(
        tmp_path: Path, monkeypatch):
    """Guesses at a new token's id from 100 addresses refused its holder (found by an attack,
    against scrypt and its pauses): a 256-bit secret needs no slow hash."""
    token = TokenStore(tmp_path).add("gail", ("eng",))
    record = json.loads((tmp_path / "access" / "tokens.json").read_text())["tokens"][0]
    secret = token.split("_", 2)[2]
    assert (record["scheme"], record["hash"]) == (
        "sha256", hmac.new(bytes.fromhex(record["salt"]), secret.encode(), hashlib.sha256).hexdigest())
    monkeypatch.setattr(tokens, "_hash", lambda secret, salt: pytest.fail("a scrypt was made"))
    served = TokenStore(tmp_path)
    guess = token[:len("rp_12345678_")] + "z" * 43
    for n in range(100):
        with pytest.raises(TokenError, match="^unknown or revoked token$"):
            served.verify(guess, f"10.0.4.{n}")
        assert served.verify(token, f"10.0.4.{n}").name == "gail"


def test_a_token_written_with_scrypt_still_verifies(tmp_path: Path):
    token = _scrypt_token(tmp_path, "hal")
    assert TokenStore(tmp_path).verify(token, "10.0.5.1").name == "hal"


def test_wrong_secrets_for_a_known_id_are_hashed_once_a_pause(tmp_path: Path, monkeypatch):
    token = _scrypt_token(tmp_path, "ana")
    served = TokenStore(tmp_path)  # a running serve's store: the token never verified yet
    clock, hashed = _clock_and_hashes(monkeypatch)
    prefix = token[:len("rp_12345678_")]  # the id part (a secret may hold "_" too)
    guesses = [prefix + f"{n:043d}" for n in range(50)]
    for guess in guesses:
        with pytest.raises(TokenError, match="^unknown or revoked token$"):
            served.verify(guess)
    assert hashed == [guesses[0][len(prefix):]]  # 50 guesses, one scrypt
    clock.now += WRONG_SECRET_PAUSE
    assert served.verify(token).name == "ana"  # the pause is over: the right secret is hashed
    assert len(hashed) == 2
    with pytest.raises(TokenError):
        served.verify(guesses[1])
    assert served.verify(token).name == "ana"  # once verified, known without hashing, never paused
    assert len(hashed) == 3


def test_wrong_guesses_from_one_address_never_pause_the_holder_elsewhere(tmp_path: Path,
                                                                        monkeypatch):
    """One wrong guess every half second at a token's id refused its holder's right token on
    every try (found by an attack): the pause is per address."""
    token = _scrypt_token(tmp_path, "dave")
    served = TokenStore(tmp_path)
    clock, hashed = _clock_and_hashes(monkeypatch)
    guess = token[:len("rp_12345678_")] + "x" * 43
    with pytest.raises(TokenError, match="^unknown or revoked token$"):
        served.verify(guess, "10.0.0.66")
    assert served.verify(token, "10.0.0.7").name == "dave"  # another address: hashed, right
    assert len(hashed) == 2
    for _ in range(4):  # the guesser's address is paused; the holder is known without hashing
        clock.now += WRONG_SECRET_PAUSE / 2
        with pytest.raises(TokenError, match="^unknown or revoked token$"):
            served.verify(guess, "10.0.0.66")
        assert served.verify(token, "10.0.0.7").name == "dave"
    assert len(hashed) == 4  # one more guess each second the pause ran out


def test_guesses_from_many_addresses_cost_a_few_hashes_a_second(tmp_path: Path, monkeypatch):
    """Keyed by address alone, 40 guesses from 40 addresses cost 40 scrypts (found by a
    review): an id's hashes are counted across addresses too."""
    token = _scrypt_token(tmp_path, "erin")
    served = TokenStore(tmp_path)
    clock, hashed = _clock_and_hashes(monkeypatch)
    guess = token[:len("rp_12345678_")] + "y" * 43
    for n in range(40):
        with pytest.raises(TokenError, match="^unknown or revoked token$"):
            served.verify(guess, f"10.0.1.{n}")
    assert len(hashed) == tokens.ID_HASHES_PER_SECOND
    clock.now += 1.0
    assert served.verify(token, "10.0.2.1").name == "erin"
    assert len(hashed) == tokens.ID_HASHES_PER_SECOND + 1


def test_no_secret_waits_for_a_hash_slot(tmp_path: Path, monkeypatch):
    token = _scrypt_token(tmp_path, "finn")
    served = TokenStore(tmp_path)
    taken = 0
    while tokens._HASHING.acquire(blocking=False):
        taken += 1
    try:
        with pytest.raises(TokenError, match="^unknown or revoked token$"):
            served.verify(token, "10.0.3.1")
    finally:
        for _ in range(taken):
            tokens._HASHING.release()
    assert served.verify(token, "10.0.3.1").name == "finn"  # refused, not paused


def test_a_token_added_while_serving_is_accepted_at_once(tmp_path: Path):
    # Found by a user's trial: a token pasted a second after `tokens add` was "unknown or
    # revoked" until the service's next poll of the file.
    served = TokenStore(tmp_path)
    first = served.add("ann", ("eng",))
    assert served.verify(first).name == "ann"
    added = TokenStore(tmp_path).add("bo", ("hr",))  # as `tokens add` in another process
    assert served.verify(added).name == "bo"
    with pytest.raises(TokenError, match="^unknown or revoked token$"):
        served.verify(added[:len("rp_12345678_")].replace(added[3:11], "0" * 8) + "z" * 43)


def test_a_revocation_and_an_addition_at_once_run_in_turn(tmp_path: Path):
    """Found by an attack: `tokens revoke` and `tokens add` at once each read the file, and the
    later write put back the token the revocation had removed."""
    import fcntl
    import threading

    store = TokenStore(tmp_path)
    victim = store.add("victim", ("hr",))
    store.add("other", ("staff",))
    lock = tmp_path / "access" / tokens.LOCK_FILE
    with lock.open("r+") as held:  # another administrator's change, under way
        fcntl.flock(held, fcntl.LOCK_EX)
        revoking = threading.Thread(target=TokenStore(tmp_path).revoke, args=("victim",))
        revoking.start()
        revoking.join(0.5)
        assert revoking.is_alive()  # it waits for the change under way to end
        assert [r.name for r in TokenStore(tmp_path).records()] == ["other", "victim"]
        TokenStore(tmp_path)._save({r.id: r for r in store.records() if r.name != "other"})
    revoking.join(10)
    assert not revoking.is_alive()
    # The revocation read the file as the other change left it: neither undid the other.
    assert [r.name for r in TokenStore(tmp_path).records()] == []
    with pytest.raises(TokenError, match="unknown or revoked token"):
        TokenStore(tmp_path).verify(victim)
