"""The hostile-clients benchmark's attackers against a real guarded uvicorn on 127.0.0.1, its
source addresses and its verdict line."""

from __future__ import annotations

from collections import Counter

import pytest

from rag_pipeline.benchmarks.hostile_clients import (
    SLOW_BODY,
    Measured,
    hold_slow,
    send_big_headers,
    slow_addresses,
    verdict,
)
from rag_pipeline.service.protocol import ClientLimits
from rag_pipeline_tests.service.test_protocol import echo_body, serving


def test_slow_addresses_are_one_or_each_its_own():
    assert slow_addresses(3, spread=False) == ["127.0.0.2"] * 3
    assert slow_addresses(256, spread=True)[252:] == ["127.0.1.253", "127.0.1.254", "127.0.2.1",
                                                      "127.0.2.2"]
    with pytest.raises(SystemExit, match="--slow over 508"):
        slow_addresses(509, spread=True)


def test_the_verdict_judges_only_the_attacked_rounds_and_what_the_client_saw():
    fast, slow = Measured([1.0] * 99 + [49.0]), Measured([1.0] * 98 + [50.0, 50.0])
    refused = Measured([1.0], Counter({"HTTP 503": 1}))
    rounds = {"alone": {"health": slow, "ask": slow},
              "spread": {"health": fast, "ask": fast, "ask in the server": slow}}
    assert verdict(rounds, 50.0) == ("verdict: PASS: under every attack the honest client's p99 < 50 ms, "
                                     "0 errors")
    rounds["body"] = {"health": refused, "ask": slow}
    assert verdict(rounds, 50.0) == ("verdict: FAIL against p99 < 50 ms with 0 errors: body health, body ask "
                                     "(with no attacker too: health p99 50.0 ms, ask p99 50.0 ms)")
    rounds["alone"] = {"health": fast, "ask": fast}
    assert verdict(rounds, 50.0) == "verdict: FAIL against p99 < 50 ms with 0 errors: body health, body ask"


def test_slow_attackers_are_counted_by_what_the_server_answered():
    limits = ClientLimits(head_seconds=0.5, body_seconds=0.5, per_client=2, max_connections=1024,
                          max_requests=256)
    with serving(echo_body, limits) as port:
        heads = hold_slow(port, slow_addresses(3, spread=False), dribble=0.2, seconds=1.3)
        bodies = hold_slow(port, slow_addresses(3, spread=True), dribble=0.2, seconds=1.3, sends=SLOW_BODY)
    # One address, 2 allowed: the third is refused (503) and reopened at each dribble; the two
    # let in are cut off at 0.5 s and reopened. Counts depend on timing; the kinds do not.
    assert set(heads) == {"opened", "408", "503", "held at the end"}
    assert heads["408"] >= 2 and heads["503"] >= 2
    assert set(bodies) - {"held at the end"} == {"opened", "408"} and bodies["408"] >= 3


def test_a_big_header_is_cut_off_long_before_it_is_sent():
    with serving(echo_body, ClientLimits()) as port:
        outcome = send_big_headers(port, mib=150, seconds=1.0)
    assert outcome and all(k.startswith("cut off after ") for k in outcome), outcome
