"""Shared fixtures: the real model, a second model with other weights, and a tiny corpus."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_pipeline.core.config.keys import declared_models  # noqa: E402
from rag_pipeline.core.embedding.models import ModelSpec, spec_for_folder  # noqa: E402

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
    (root / "broken.md").write_bytes(b"# Broken\n\n\xff\xfe not text\n")
    return root


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
