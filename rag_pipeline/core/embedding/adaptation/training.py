"""Training an adapted model and its folder: a seeded fine-tune on CPU, written with
``adaptation.json`` (the key, the recipe, the pairs' digest, the loss and the sha256 of every
file), and the check that refuses a folder whose key or files differ."""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.embedding.adaptation.pairs import (
    CorpusDocument,
    Pair,
    PairKind,
    pairs_sha256,
    training_pairs,
)
from rag_pipeline.core.embedding.models import (
    ModelMismatchError,
    ModelSpec,
    model_files,
    weights_sha256,
)

ADAPTATION_FILE = "adaptation.json"
"""Written into the trained folder; not itself among the files it lists."""


class ModelNotTrainedError(ModelMismatchError):
    """An adapted model is declared but its folder has not been trained yet."""


@dataclass(frozen=True)
class TrainingResult:
    """What :func:`train_adapted` did.

    Attributes:
        path: The trained folder.
        pairs: Pairs trained on.
        steps: Optimiser steps.
        epochs: Passes over the pairs.
        first_loss: Mean loss over the first epoch's first tenth of the steps (at least one).
        last_loss: Mean loss over the last tenth of the steps (at least one).
        seconds: Wall time of the training.
        weights_sha256: sha256 of the trained weights file.
    """

    path: Path
    pairs: int
    steps: int
    epochs: int
    first_loss: float
    last_loss: float
    seconds: float
    weights_sha256: str


def adapted_files(path: Path) -> dict[str, str]:
    """``relative path -> sha256`` of the trained folder, its own manifest left out."""
    return {name: sha for name, sha in model_files(path).items() if name != ADAPTATION_FILE}


def verify_adapted(spec: ModelSpec) -> None:
    """Refuses an adapted model whose folder is missing, was trained for another key, or whose
    files changed after training.

    Raises:
        ModelNotTrainedError: no trained folder yet.
        ModelMismatchError: another key, or a file changed.
    """
    manifest_path = spec.path / ADAPTATION_FILE
    if not manifest_path.is_file():
        raise ModelNotTrainedError(f"{spec.key} is not trained yet (no {manifest_path}): run "
                                   "`rag-pipeline adapt`")
    recorded = json.loads(manifest_path.read_text(encoding="utf-8"))
    if recorded.get("key") != spec.key:
        raise ModelMismatchError(f"{spec.path} was trained as {recorded.get('key')!r}, not "
                                 f"{spec.key}: run `rag-pipeline adapt`")
    actual = adapted_files(spec.path)
    changed = sorted(n for n in set(actual) | set(recorded["files"])
                     if actual.get(n) != recorded["files"].get(n))
    if changed:
        raise ModelMismatchError(f"{spec.key} refuses to load: in {spec.path}, "
                                 f"{', '.join(changed)} changed since training")


def train_adapted(spec: ModelSpec, pairs: Sequence[Pair],
                  log: Callable[[str], None] = lambda _: None) -> TrainingResult:
    """Fine-tunes ``spec.adaptation.base`` on ``pairs`` and writes the folder at ``spec.path``
    (a temporary sibling, then a rename: a crash never leaves half a model).

    Args:
        spec: The adapted model's spec (its ``adaptation`` names the base and the recipe).
        pairs: The pairs, as :func:`training_pairs` makes them; their digest must be the one
            the key was minted for.
        log: Called with a progress line about every tenth of the steps.

    Raises:
        ModelMismatchError: the pairs' digest is not the key's (the corpus changed since the
            key was computed); the model cache's record of the old digest is removed first.
        ValueError: fewer pairs than one batch.
    """
    adaptation = spec.adaptation
    if adaptation is None:
        raise ValueError(f"{spec.key} is not an adapted model")
    recipe = adaptation.recipe
    digest = pairs_sha256(pairs)
    if digest != adaptation.pairs_sha256:
        if adaptation.record is not None:
            adaptation.record.unlink(missing_ok=True)
        raise ModelMismatchError(f"the pairs have digest {digest[:12]}…, but {spec.key} was "
                                 f"minted for {adaptation.pairs_sha256[:12]}…: the corpus changed "
                                 "(the recorded digest is dropped); reload the definitions (or "
                                 "rerun the command)")
    if len(pairs) < recipe.batch_size:
        raise ValueError(f"{len(pairs)} pairs is fewer than one batch ({recipe.batch_size})")

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from rag_pipeline.core.embedding.torch_threads import apply_torch_threads

    apply_torch_threads()
    started = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        random.seed(recipe.seed)
        np.random.seed(recipe.seed)
        torch.manual_seed(recipe.seed)
        model = SentenceTransformer(str(adaptation.base.path), device="cpu")
        model.max_seq_length = recipe.max_seq_length
        loss_fn = MultipleNegativesRankingLoss(model)
        encode = getattr(model, "preprocess", None) or model.tokenize
        optimiser = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate)
        order = random.Random(recipe.seed)
        batches_per_epoch = len(pairs) // recipe.batch_size
        total = batches_per_epoch * recipe.epochs
        losses: list[float] = []
        model.train()
        for epoch in range(recipe.epochs):
            indices = list(range(len(pairs)))
            order.shuffle(indices)
            for b in range(batches_per_epoch):
                batch = [pairs[i] for i in indices[b * recipe.batch_size:(b + 1) * recipe.batch_size]]
                features = [encode([p.anchor for p in batch]), encode([p.positive for p in batch])]
                loss = loss_fn(features, None)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                losses.append(float(loss.detach()))
                step = len(losses)
                if step == 1 or step == total or step % max(1, total // 10) == 0:
                    log(f"epoch {epoch + 1}/{recipe.epochs} step {step}/{total} loss "
                        f"{losses[-1]:.4f} ({time.perf_counter() - started:.0f} s)")
        model.eval()
        tmp = spec.path.with_name(spec.path.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        model.save(str(tmp))
    finally:
        torch.set_num_threads(threads)
    tenth = max(1, len(losses) // 10)
    seconds = time.perf_counter() - started
    files = adapted_files(tmp)
    weights = weights_sha256(tmp)
    (tmp / ADAPTATION_FILE).write_text(json.dumps({
        "key": spec.key, "base": adaptation.base.key, "recipe": json.loads(recipe.text()),
        "pairs_sha256": digest, "pairs": len(pairs), "steps": len(losses),
        "first_loss": sum(losses[:tenth]) / tenth, "last_loss": sum(losses[-tenth:]) / tenth,
        "seconds": round(seconds, 1), "files": files}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8")
    if spec.path.exists():
        shutil.rmtree(spec.path)
    tmp.replace(spec.path)
    return TrainingResult(spec.path, len(pairs), len(losses), recipe.epochs,
                          sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth, seconds,
                          weights)


def adapt_model(spec: ModelSpec, documents: Sequence[CorpusDocument],
                log: Callable[[str], None] = lambda _: None) -> TrainingResult:
    """Makes the recipe's pairs from ``documents`` and trains ``spec`` on them.

    Raises:
        ModelMismatchError: the documents make other pairs than the key was minted for.
    """
    if spec.adaptation is None:
        raise ValueError(f"{spec.key} is not an adapted model")
    pairs, available = training_pairs(documents, spec.adaptation.recipe)
    kinds = {kind: sum(p.kind is kind for p in pairs) for kind in PairKind}
    log(f"{spec.key}: {len(pairs)} pairs ({', '.join(f'{n} {k.value}' for k, n in kinds.items())}"
        f"; {available} made, {len(spec.adaptation.recipe.held_out)} held-out documents "
        f"excluded) from {len({p.document_id for p in pairs})} documents")
    return train_adapted(spec, pairs, log)


def trained_result(spec: ModelSpec) -> TrainingResult:
    """The :class:`TrainingResult` recorded in a trained folder (verified first).

    Raises:
        ModelNotTrainedError: not trained yet.
        ModelMismatchError: trained for another key, or changed since.
    """
    verify_adapted(spec)
    recorded = json.loads((spec.path / ADAPTATION_FILE).read_text(encoding="utf-8"))
    return TrainingResult(spec.path, recorded["pairs"], recorded["steps"],
                          recorded["recipe"]["epochs"], recorded["first_loss"],
                          recorded["last_loss"], recorded["seconds"], weights_sha256(spec.path))
