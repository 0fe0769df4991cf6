"""The CLI's options come from the enums and constants of the core (fast: no index, no model)."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from rag_pipeline.cli import main


def _ask_params(*args: str) -> dict[str, object]:
    command = main.commands["ask"]
    return command.make_context("ask", ["a question", *args]).params


def _choices(command: str, name: str) -> list[str]:
    option = next(p for p in main.commands[command].params if p.name == name)
    assert isinstance(option.type, click.Choice)
    return list(option.type.choices)


def test_ask_choices_and_defaults_are_the_cores():
    # The chunker is free text checked against the declared chunkers (one-line error).
    assert _choices("ask", "retriever") == ["dense", "bm25", "hybrid"]
    assert _choices("ask", "analyzer") == ["plain", "english", "code"]
    params = _ask_params()
    assert (params["chunker"], params["retriever"], params["analyzer"], params["max_sources"],
            params["cut"]) == ("header", "hybrid", "code", 4, None)
    # No --cut: ask uses the cut declared for its model in rag_pipeline.toml.


def test_threshold_is_the_documented_spelling_of_cut():
    assert _ask_params("--threshold", "0.5")["cut"] == 0.5
    assert _ask_params("--cut", "0.55")["cut"] == 0.55


def test_ask_without_an_index_fails_plainly(tmp_path: Path):
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "ask", "what is a loop"])
    assert (result.exit_code, result.output) == (
        2, "error: no index built yet: run `rag-pipeline index` first\n")
