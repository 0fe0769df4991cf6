"""Where the project keeps its data by default (importable without loading Dagster)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rag_pipeline.core.config.root import ENV_CONFIG as ENV_CONFIG  # named here with every variable
from rag_pipeline.core.config.root import PROJECT_ROOT, config_path

if TYPE_CHECKING:
    from rag_pipeline.core.config.build_context import BuildContext
    from rag_pipeline.core.embedding.models import ModelSpec

DEFAULT_DATA_DIR = PROJECT_ROOT / "data"


def corpus_export_dir(data_dir: Path) -> Path:
    """Where the bundled corpus (the Python reference) is exported for a data folder."""
    return Path(data_dir) / "corpus" / "python-reference"


DEFAULT_CORPUS_DIR = corpus_export_dir(DEFAULT_DATA_DIR)
DEFAULT_EVAL_DIR = DEFAULT_DATA_DIR / "eval" / "python-reference"
DAGSTER_HOME = PROJECT_ROOT / "dagster_home"


def dagster_home(environ: Mapping[str, str] = os.environ) -> Path:
    """The Dagster instance's folder: ``DAGSTER_HOME`` when the user set it, else the project's
    ``dagster_home/``."""
    return Path(environ.get("DAGSTER_HOME") or DAGSTER_HOME).absolute()


def prepare_dagster_home(home: Path) -> bool:
    """Makes the Dagster home folder; a new one (missing or empty) gets the project's
    ``dagster.yaml``, so that a daemon started on it queues runs as the project's does (Dagster
    would otherwise run it on its defaults and say so in a warning). Returns whether it wrote
    one; a home with files of its own is left as it is (:func:`unsized_home_note`)."""
    home.mkdir(parents=True, exist_ok=True)
    if home == DAGSTER_HOME.absolute() or any(home.iterdir()):
        return False
    shutil.copyfile(DAGSTER_HOME / "dagster.yaml", home / "dagster.yaml")
    return True


def dagster_home_line(home: Path) -> str | None:
    """Prepares ``home`` (:func:`prepare_dagster_home`) and returns what ``index`` and ``make
    dev`` say of it: that it got the project's ``dagster.yaml``, or :func:`unsized_home_note`
    (None: nothing to say)."""
    if prepare_dagster_home(home):
        return (f"new Dagster home {home}: wrote the project's dagster.yaml there (its run queue "
                "sized to the machine)")
    return unsized_home_note(home)


def unsized_home_note(home: Path) -> str | None:
    """A line for a Dagster home of files but no ``dagster.yaml`` (an instance on Dagster's
    defaults, left as it is): its runs are not queued by the project's pools, so model runs
    start side by side on every core; ``None`` for a home that has one."""
    if (home / "dagster.yaml").exists():
        return None
    return (f"note: the Dagster home {home} has no dagster.yaml: its runs are not queued by the "
            "project's pools (model runs start side by side); copy the project's "
            f"{DAGSTER_HOME / 'dagster.yaml'} there and restart the daemon")


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


def resolve_context(environ: Mapping[str, str], *, config_file: Path | None = None,
                    profile: str | None = None, data_dir: Path | None = None,
                    location: str | None = None, corpus: Path | str | None = None,
                    specs: Sequence[ModelSpec] | None = None,
                    models: Sequence[ModelSpec] | None = None,
                    cwd: Path | None = None) -> BuildContext:
    """The one answer to "what does this process build": explicit arguments (the CLI's options)
    first, then the ``RAG_PIPELINE_*`` variables of ``environ``, then the configuration file's
    ``[index]`` (``corpus``, ``data_dir``, ``profile``), then the project's defaults. The code
    location and ``rag-pipeline index`` both ask it, so they agree on the same inputs.

    Args:
        environ: The environment to read (a daemon's, for ``index`` to compare with).
        config_file: The configuration file (default: ``RAG_PIPELINE_CONFIG``, else the
            project's own).
        profile: The profile to build (default: ``RAG_PIPELINE_PROFILE``, else the file's,
            else by the corpus).
        specs: The declared models' specs (default: made from the file and its lock); the
            profile's are kept.
        models: Exactly the models to build (tests, benchmarks), instead of the profile's.
        cwd: What relative paths in ``environ`` are relative to (default: this process's).
    """
    from rag_pipeline.core.config.build_context import BuildContext
    from rag_pipeline.core.config.keys import model_specs
    from rag_pipeline.core.config.parse import choose_profile, load_config, select_profile
    from rag_pipeline.core.embedding.models import ModelConfigError
    from rag_pipeline.core.ingest.sources import SourceError, check_corpus_uri, is_corpus_uri
    from rag_pipeline.core.storage.warehouse import Warehouse

    base = Path.cwd() if cwd is None else cwd

    def absolute(path: str | Path) -> Path:
        return base / Path(path) if not Path(path).is_absolute() else Path(path)

    def corpus_of(value: str | Path) -> Path | str:
        """A source URI as it is (``s3://...``, ``git+...``), a folder made absolute; a URI no
        source reads refused (``--corpus`` and ``[index] corpus`` are checked where they are
        read, so only ``RAG_PIPELINE_CORPUS`` can bring one here).

        Raises:
            ModelConfigError: ``RAG_PIPELINE_CORPUS`` names a URI no source reads.
        """
        if not (isinstance(value, str) and is_corpus_uri(value)):
            return absolute(value).absolute()
        try:
            return check_corpus_uri(value)
        except SourceError as exc:
            raise ModelConfigError(f"{ENV_CORPUS}: {exc}") from None

    if config_file is None and environ.get(ENV_CONFIG):
        config_file = absolute(environ[ENV_CONFIG])
    config = load_config(config_file if config_file is not None else config_path(environ))
    user_corpus = corpus or environ.get(ENV_CORPUS) or config.corpus
    data = data_dir or (environ.get(ENV_DATA_DIR) and absolute(environ[ENV_DATA_DIR])) \
        or config.data_dir or DEFAULT_DATA_DIR
    chosen = choose_profile(config, profile or environ.get(ENV_PROFILE) or None,
                            user_corpus is not None)
    if models is not None:
        models = tuple(models)
    elif specs is None:
        models = model_specs(select_profile(config, chosen))
    else:
        models = tuple(s for s in specs if s.name in chosen.models)
    eval_dir = absolute(environ[ENV_EVAL_DIR]) if environ.get(ENV_EVAL_DIR) else DEFAULT_EVAL_DIR
    data = absolute(data).absolute()
    return BuildContext(
        profile=chosen.name, chunkers=chosen.chunkers, models=models,
        warehouse=Warehouse(data, location or environ.get(ENV_WAREHOUSE) or None),
        corpus=corpus_of(user_corpus) if user_corpus else corpus_export_dir(data),
        python_reference=user_corpus is None, eval_dir=eval_dir, compute=config.compute,
        access=config.access, config_file=config.path,
        max_document_bytes=config.max_document_bytes,
        max_document_seconds=config.max_document_seconds)


def context_environment(context: BuildContext, config_file: Path | None) -> dict[str, str]:
    """The ``RAG_PIPELINE_*`` variables under which :func:`resolve_context` gives back
    ``context``'s folders and profile (``config_file``: the file it was resolved from, None
    for the project's own): what ``index`` hands the processes it starts."""
    from rag_pipeline.core.storage.location import warehouse_location

    env = {ENV_PROFILE: context.profile, ENV_DATA_DIR: str(context.data_dir.absolute()),
           ENV_EVAL_DIR: str(context.eval_dir.absolute())}
    if config_file is not None:
        env[ENV_CONFIG] = str(Path(config_file).absolute())
    if context.warehouse.location != warehouse_location(context.data_dir):
        env[ENV_WAREHOUSE] = context.warehouse.location
    if not context.python_reference:
        env[ENV_CORPUS] = str(context.corpus)
    return env
