"""Where the project keeps its data by default (importable without loading Dagster)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rag_pipeline.core.config.root import ENV_CONFIG as ENV_CONFIG  # named here with every variable
from rag_pipeline.core.config.root import PROJECT_ROOT, config_path

if TYPE_CHECKING:
    from rag_pipeline.core.config.schema import ProjectConfig

DEFAULT_DATA_DIR = PROJECT_ROOT / "data"


def corpus_export_dir(data_dir: Path) -> Path:
    """Where the bundled corpus (the Python reference) is exported for a data folder."""
    return Path(data_dir) / "corpus" / "python-reference"


DEFAULT_CORPUS_DIR = corpus_export_dir(DEFAULT_DATA_DIR)
DEFAULT_EVAL_DIR = DEFAULT_DATA_DIR / "eval" / "python-reference"
DAGSTER_HOME = PROJECT_ROOT / "dagster_home"
INDEX_LOCK = "rag-pipeline-index.lock"
"""The file in a Dagster home that one ``rag-pipeline index`` at a time holds (the corpus watch
reads its holder: an ``index`` that holds it launches its own documents run)."""

# Read only at the process edge (the CLI and ``definitions.defs``), never in the core; but for
# ENV_CONFIG, read by ``config_path`` (core/config/root.py), which ``load_config()`` asks.
ENV_DATA_DIR = "RAG_PIPELINE_DATA_DIR"
ENV_WAREHOUSE = "RAG_PIPELINE_WAREHOUSE"
ENV_CORPUS = "RAG_PIPELINE_CORPUS"
ENV_WATCH_INTERVAL = "RAG_PIPELINE_WATCH_INTERVAL"
"""Seconds between the corpus watch's looks at the corpus (default 5)."""
ENV_EVAL_DIR = "RAG_PIPELINE_EVAL_DIR"
ENV_TORCH_THREADS = "RAG_PIPELINE_TORCH_THREADS"
ENV_REPORT_URL = "RAG_PIPELINE_REPORT_URL"
ENV_PROFILE = "RAG_PIPELINE_PROFILE"


def active_config(environ: Mapping[str, str] = os.environ) -> ProjectConfig:
    """The configuration restricted to the profile this process builds: ``RAG_PIPELINE_PROFILE``,
    else the file's ``[index] profile``, else ``production`` when a user's corpus is set
    (``RAG_PIPELINE_CORPUS`` or ``[index] corpus``) and ``evaluation`` for the bundled one.
    The code location (the UI, the daemon, the runs) and ``rag-pipeline index`` agree through
    these variables."""
    from rag_pipeline.core.config.parse import choose_profile, load_config, select_profile

    config = load_config(config_path(environ))
    user_corpus = bool(environ.get(ENV_CORPUS)) or config.corpus is not None
    return select_profile(config, choose_profile(config, environ.get(ENV_PROFILE) or None,
                                                 user_corpus))
