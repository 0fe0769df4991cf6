"""Where the project keeps its data by default (importable without loading Dagster)."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = PROJECT_ROOT / "data"
DEFAULT_CORPUS_DIR = DEFAULT_DATA_DIR / "corpus" / "python-reference"
DEFAULT_EVAL_DIR = DEFAULT_DATA_DIR / "eval" / "python-reference"
DAGSTER_HOME = PROJECT_ROOT / "dagster_home"

DATA_DIR_VARIABLE = "RAG_PIPELINE_DATA_DIR"
CORPUS_VARIABLE = "RAG_PIPELINE_CORPUS"
EVAL_DIR_VARIABLE = "RAG_PIPELINE_EVAL_DIR"
"""Environment variables read at the process edges (the CLI and the code location) only."""
