"""Invoking the CLI in-process, as the tests of every command group do."""

from __future__ import annotations

from click.testing import CliRunner

from rag_pipeline.cli import main

CHUNKERS = "blind, blind_overlap, boundaries, boundaries_overlap, header, header_overlap"
"""The declared chunkers, as an unknown chunker's error lists them."""


def one_line_failure(*args: str) -> tuple[int, str]:
    """The exit code and the one stderr line of a failing invocation (nothing on stdout)."""
    result = CliRunner().invoke(main, list(args))
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    return result.exit_code, result.stderr.rstrip("\n")


def run(*args: str) -> tuple[int, str]:
    """The exit code and the whole output of an invocation (never a traceback)."""
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output
