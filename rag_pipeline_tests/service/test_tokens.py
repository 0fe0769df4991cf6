"""Tests for ``rag_pipeline.service.tokens``: guesses at a known token id cost one hash, not one
each."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from rag_pipeline.service import tokens
from rag_pipeline.service.tokens import WRONG_SECRET_PAUSE, TokenError, TokenStore


def test_wrong_secrets_for_a_known_id_are_hashed_once_a_pause(tmp_path: Path, monkeypatch):
    token = TokenStore(tmp_path).add("ana", ("hr",))
    served = TokenStore(tmp_path)  # a running serve's store: the token never verified yet
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(tokens, "time", SimpleNamespace(monotonic=lambda: clock.now, time=lambda: 0.0))
    hashed: list[str] = []
    real = tokens._hash
    monkeypatch.setattr(tokens, "_hash", lambda secret, salt: hashed.append(secret) or real(secret, salt))
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
    token = TokenStore(tmp_path).add("dave", ("eng",))
    served = TokenStore(tmp_path)
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(tokens, "time", SimpleNamespace(monotonic=lambda: clock.now, time=lambda: 0.0))
    guess = token[:len("rp_12345678_")] + "x" * 43
    for _ in range(5):
        with pytest.raises(TokenError, match="^unknown or revoked token$"):
            served.verify(guess, "10.0.0.66")
        assert served.verify(token, "10.0.0.7").name == "dave"
        clock.now += WRONG_SECRET_PAUSE / 2
    with pytest.raises(TokenError, match="^unknown or revoked token$"):
        served.verify(guess, "10.0.0.66")
    with pytest.raises(TokenError, match="^unknown or revoked token$"):  # paused: not hashed
        served.verify(token[:-1] + ("A" if token[-1] != "A" else "B"), "10.0.0.66")
