"""Shared fixtures: the real model, a second model with other weights, a tiny corpus, and a
project of its own (a fresh Dagster home) for a test that runs Dagster in real processes."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_pipeline.core.config.keys import declared_models  # noqa: E402
from rag_pipeline.core.embedding.models import ModelSpec  # noqa: E402
from rag_pipeline.core.runtime.processes import restore_default_interrupts  # noqa: E402
from rag_pipeline.project_paths import (  # noqa: E402
    DAGSTER_HOME,
    ENV_CONFIG,
    ENV_CORPUS,
    ENV_DATA_DIR,
    ENV_EVAL_DIR,
    PROJECT_ROOT,
)
from rag_pipeline_tests.model_specs import spec_for_folder  # noqa: E402

# CI may run the suite as a background job, which starts with SIGINT ignored; Dagster run in
# process would then map SIGTERM to it and every child the tests stop would ignore SIGTERM.
restore_default_interrupts()

TINY_DOCS = {
    "guide/install.md": (
        "---\ntitle: Install guide\n---\n# Installing Frobnicator\n\n"
        "Frobnicator needs a POSIX shell and about forty megabytes of disk space.\n\n"
        "## Upgrading\n\n"
        "Run the upgrade command twice when the lock file is older than a week. The second run "
        "clears stale caches left by the first one.\n"),
    "guide/config.md": (
        "# Configuring Frobnicator\n\n"
        "The configuration file lives in the home folder and is written in TOML.\n\n"
        "## Timeouts\n\n"
        "Every network call gives up after seventeen seconds unless the timeout key says "
        "otherwise.\n"),
    "notes.txt": "Release notes.\n\nVersion 2 removed the legacy XML exporter.\n",
}


@pytest.fixture(scope="session")
def minilm() -> ModelSpec:
    """The reference model: all-MiniLM-L6-v2, torch fp32, as declared in rag_pipeline.toml."""
    return next(s for s in declared_models() if s.name == "all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def other_minilm(minilm: ModelSpec, tmp_path_factory: pytest.TempPathFactory) -> ModelSpec:
    """all-MiniLM-L6-v2 with one weight nudged: same name, other weights, other fingerprint
    (the fingerprint of its manifest, as for any model that is not locked)."""
    import torch
    from safetensors.torch import load_file, save_file

    folder = tmp_path_factory.mktemp("other-minilm") / "model"
    shutil.copytree(minilm.path, folder)
    weights = load_file(str(folder / "model.safetensors"))
    name = sorted(weights)[0]
    weights[name] = weights[name] + torch.full_like(weights[name], 1e-3)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return spec_for_folder(minilm.name, folder, minilm.dimension, minilm.max_tokens)


def write_corpus(root: Path, docs: dict[str, str]) -> Path:
    for rel, text in docs.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    root = write_corpus(tmp_path / "corpus", TINY_DOCS)
    # Planted flaw: invalid UTF-8. Must end `failed` with its reason while the rest index.
    (root / "broken.md").write_bytes(b"# Broken\n\n\xff\x81 not text\n")  # nor windows-1252
    return root


GOLD_LINE = ('{"id": "t1", "needle": "Every network call gives up after seventeen seconds", '
             '"question": "How long does a network call wait before giving up?", '
             '"ticket": "my download just stops after a while, what is the limit"}\n')
"""One gold question whose needle is in :data:`TINY_DOCS` (guide/config.md)."""
OOD_LINE = '{"id": "o1", "query": "what is the capital of france", "kind": "off"}\n'


@dataclass(frozen=True)
class DagsterProject:
    """A project of its own: ``root`` holds ``dagster_home/`` (the project's ``dagster.yaml``),
    ``corpus/`` (:data:`TINY_DOCS`), ``eval/`` (:data:`GOLD_LINE`, :data:`OOD_LINE`),
    ``rag_pipeline.toml`` with the project's lock, and ``data/``; ``env`` points every command
    (``rag-pipeline``, ``dagster``, ``dagster-daemon``) at them and imports this tree."""

    root: Path
    home: Path
    corpus: Path
    env: dict[str, str]


def processes_on_home(home: Path) -> list[int]:
    """Every live process of this machine whose environment names ``home`` as its Dagster
    home (a daemon, its code servers and run workers, an index guard), this one excepted."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_text().split(") ")[-1][0]
        except OSError:
            continue
        if f"DAGSTER_HOME={home}\0".encode() in environ and state not in "ZX":
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def dagster_project(tmp_path_factory: pytest.TempPathFactory,
                    ) -> Iterator[Callable[[str, str], DagsterProject]]:
    """Makes a :class:`DagsterProject` from a name and a ``rag_pipeline.toml`` text; when the
    test module ends, SIGKILLs whatever still runs on any home it made."""
    made: list[DagsterProject] = []

    def make(name: str, config: str) -> DagsterProject:
        root = tmp_path_factory.mktemp(name)
        home = root / "dagster_home"
        home.mkdir()
        shutil.copy(DAGSTER_HOME / "dagster.yaml", home / "dagster.yaml")
        corpus = write_corpus(root / "corpus", TINY_DOCS)
        evals = root / "eval"
        evals.mkdir()
        (evals / "gold.jsonl").write_text(GOLD_LINE, encoding="utf-8")
        (evals / "ood.jsonl").write_text(OOD_LINE, encoding="utf-8")
        (root / "rag_pipeline.toml").write_text(config, encoding="utf-8")
        # The reference model's lock (its fingerprints), as the project pins it.
        shutil.copy(PROJECT_ROOT / "rag_pipeline.lock.json", root / "rag_pipeline.lock.json")
        env = {**os.environ, "DAGSTER_HOME": str(home), ENV_DATA_DIR: str(root / "data"),
               ENV_CONFIG: str(root / "rag_pipeline.toml"), ENV_CORPUS: str(corpus),
               ENV_EVAL_DIR: str(evals), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "PYTHONPATH": str(PROJECT_ROOT)}
        made.append(DagsterProject(root, home, corpus, env))
        return made[-1]

    yield make
    for project in made:
        for pid in processes_on_home(project.home):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="session")
def hashed_embedder():
    """The fast deterministic stand-in for the model (see ``fake_embedder``)."""
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    return HashedEmbedder()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Keeps the fast tier fast: a run of ``-m "not slow"`` that imported torch (the real model,
    or any model built with torch) fails, naming the cause, so such a test gets the slow marker
    or the hashed stand-in instead of quietly adding seconds to every fast run."""
    import sys

    if session.config.getoption("markexpr") == "not slow" and "torch" in sys.modules \
            and exitstatus == 0:
        session.exitstatus = 1
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line("FAILED fast tier: a test not marked slow imported torch; mark it "
                                "@pytest.mark.slow or use the hashed_embedder fixture", red=True)
