"""What a running Dagster daemon's code location builds, to compare with what ``index`` was
asked to build.

A daemon started for a configuration (``RAG_PIPELINE_CONFIG=FILE make dev``) serves the code
location its own environment resolves; ``rag-pipeline --config FILE index`` resolves its options.
Both go through :func:`~rag_pipeline.project_paths.resolve_context`, so they agree exactly when
the two builds have the same folders and partitions, whatever the shell's variables say.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.runtime.processes import process_environment
from rag_pipeline.orchestration.daemon_processes import daemon_pids
from rag_pipeline.project_paths import resolve_context

__all__ = ["build_differences", "daemon_build"]


def daemon_build(home: Path, fallback: Mapping[str, str]) -> BuildContext:
    """The build the running daemon of ``home`` serves, resolved from its environment (its
    ``RAG_PIPELINE_*`` variables, its configuration file); ``fallback`` (this shell's
    environment) when no daemon's environment can be read.

    Raises:
        ModelConfigError, FileNotFoundError: the daemon's configuration does not resolve.
    """
    for pid in daemon_pids(home):
        found = process_environment(pid)
        if found is not None:
            environ, cwd = found
            return resolve_context(environ, cwd=cwd)
    return resolve_context(fallback)


def build_differences(asked: BuildContext, served: BuildContext) -> list[str]:
    """What the build ``index`` was asked for and the build a daemon serves disagree on, one
    phrase each (empty: they build the same thing)."""
    differences = []
    mine, theirs = asked.folders, served.folders
    for label, a, b in (("data folder", mine.data_dir, theirs.data_dir),
                        ("tables", mine.tables_at, theirs.tables_at),
                        ("corpus", mine.corpus, theirs.corpus),
                        ("gold sets", mine.eval_dir, theirs.eval_dir),
                        ("chunkers", ", ".join(asked.chunker_keys), ", ".join(served.chunker_keys)),
                        ("models", ", ".join(asked.model_keys), ", ".join(served.model_keys))):
        if a != b:
            differences.append(f"{label} {a} (the daemon's: {b})")
    return differences
