"""Where the project keeps its data by default (importable without loading Dagster)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = PROJECT_ROOT / "data"
DEFAULT_CORPUS_DIR = DEFAULT_DATA_DIR / "corpus" / "python-reference"
DEFAULT_EVAL_DIR = DEFAULT_DATA_DIR / "eval" / "python-reference"
DAGSTER_HOME = PROJECT_ROOT / "dagster_home"

# Read only at the process edge (the CLI and ``definitions.defs``), never in the core.
ENV_DATA_DIR = "RAG_PIPELINE_DATA_DIR"
ENV_WAREHOUSE = "RAG_PIPELINE_WAREHOUSE"
ENV_CORPUS = "RAG_PIPELINE_CORPUS"
ENV_EVAL_DIR = "RAG_PIPELINE_EVAL_DIR"
ENV_TORCH_THREADS = "RAG_PIPELINE_TORCH_THREADS"
ENV_CONFIG = "RAG_PIPELINE_CONFIG"
ENV_REPORT_URL = "RAG_PIPELINE_REPORT_URL"


class ConfigNotFoundError(FileNotFoundError):
    """``RAG_PIPELINE_CONFIG`` names no file (a missing path or a folder)."""


def config_path() -> Path:
    """The models-and-chunkers file: ``RAG_PIPELINE_CONFIG``, else ``rag_pipeline.toml`` here.

    Raises:
        ConfigNotFoundError: If ``RAG_PIPELINE_CONFIG`` is set but names no file: a typo must
            never fall back to the built-in default (other chunkers, other model keys).
    """
    configured = os.environ.get(ENV_CONFIG)
    if not configured:
        return PROJECT_ROOT / "rag_pipeline.toml"
    path = Path(configured)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise ConfigNotFoundError(f"{ENV_CONFIG}={configured!r} {what}: it must name a "
                                  "rag_pipeline.toml file (unset it for the project's own)")
    return path
