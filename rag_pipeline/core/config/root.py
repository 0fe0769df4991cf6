"""The project root (the folder of ``pyproject.toml``, where ``rag_pipeline.toml`` and its lock
live), the configuration file's name, and :func:`config_path`, the one answer to "which
configuration file": ``RAG_PIPELINE_CONFIG``, else the project's own. Their own module so that
:mod:`rag_pipeline.project_paths` can name them without importing the configuration's
dependencies (the chunkers, the model declarations)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]

CONFIG_NAME = "rag_pipeline.toml"
"""The configuration file's name, in the project root and beside a folder `init` wrote for."""

ENV_CONFIG = "RAG_PIPELINE_CONFIG"
"""The variable naming the configuration file: how ``--config`` reaches the Dagster UI, the
daemon and the runs it launches."""


class ConfigNotFoundError(FileNotFoundError):
    """``RAG_PIPELINE_CONFIG`` names no file (a missing path or a folder)."""


def config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The models-and-chunkers file: ``RAG_PIPELINE_CONFIG``, else ``rag_pipeline.toml`` here.
    The only place the configuration's location is read from the environment; ``load_config()``
    without a path asks it.

    Args:
        environ: The environment to read (the process's by default).

    Raises:
        ConfigNotFoundError: If ``RAG_PIPELINE_CONFIG`` is set but names no file: a typo must
            never fall back to the built-in default (other chunkers, other model keys).
    """
    configured = environ.get(ENV_CONFIG)
    if not configured:
        return PROJECT_ROOT / CONFIG_NAME
    path = Path(configured)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise ConfigNotFoundError(f"{ENV_CONFIG}={configured!r} {what}: it must name a "
                                  "rag_pipeline.toml file (unset it for the project's own)")
    return path
