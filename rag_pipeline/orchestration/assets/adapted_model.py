"""``adapted_model``: the declared adapted model(s) trained on pairs made from the corpus, one
partition per adapted model key (see :mod:`rag_pipeline.core.embedding.adaptation`). The output is the
model folder in the model cache; its embeddings partitions are built beside the base model's
once it is trained."""

from collections.abc import Sequence
from pathlib import Path

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.embedding.adaptation import (
    ModelNotTrainedError,
    adapt_model,
    corpus_documents,
    trained_result,
)
from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec, find_model
from rag_pipeline.orchestration.pools import MODEL_POOL
from rag_pipeline.orchestration.resources import CorpusSource


def build_adapted_model_asset(models: Sequence[ModelSpec]) -> dg.AssetsDefinition | None:
    """The training asset over the adapted models among ``models`` (None when there are none)."""
    adapted = [m for m in models if m.adaptation is not None]
    if not adapted:
        return None

    @dg.asset(name="adapted_model", partitions_def=dg.StaticPartitionsDefinition(
                  [m.key for m in adapted]),
              kinds={"pytorch"},
              pool=MODEL_POOL,
              description="A model fine-tuned on pairs made from the corpus alone "
                          "(MultipleNegativesRankingLoss, seeded); a folder in the model cache.")
    def adapted_model(context: AssetExecutionContext, corpus: CorpusSource) -> dg.MaterializeResult:
        spec = find_model(context.partition_key, adapted)
        try:
            result = trained_result(spec)
            context.log.info(f"{spec.key} is trained and its files match: kept")
        except ModelNotTrainedError:
            result = None
        except ModelMismatchError as exc:
            context.log.warning(f"{exc}: training again")
            result = None
        if result is None:
            # The key was minted from the configuration's corpus: the bundled reference as
            # CPython ships it, or the user's folder.
            documents = corpus_documents(None if corpus.python_reference else Path(corpus.path))
            result = adapt_model(spec, documents, context.log.info)
        return dg.MaterializeResult(metadata={
            "pairs": result.pairs, "epochs": result.epochs, "steps": result.steps,
            "first_loss": result.first_loss, "last_loss": result.last_loss,
            "minutes": round(result.seconds / 60, 2), "base": spec.adaptation.base.key,
            "pairs_sha256": spec.adaptation.pairs_sha256,
            "weights_sha256": result.weights_sha256,
            "path": dg.MetadataValue.path(str(result.path))})

    return adapted_model
