"""A model version adapted to the corpus: training pairs made from the corpus alone, their
digest, the key that names base + data + recipe, and a seeded fine-tune on CPU.

Pairs never come from gold questions. Two kinds are made from the chunks of one chunker:

* ``header``: a chunk's context header (``Document > Section``) and the chunk's content, so
  the model learns which passages a topic's vocabulary points to;
* ``neighbour``: a chunk's content and the next chunk's content in the same section, so
  passages that talk about the same thing in different words land close together.

Training uses sentence-transformers' ``MultipleNegativesRankingLoss`` (in-batch negatives,
Henderson et al. 2017, "Efficient Natural Language Response Suggestion for Smart Reply"),
AdamW at a constant learning rate, batches in a seeded order, one CPU thread: the same pairs
and recipe give the same weights, byte for byte (tested).

The key of an adapted model is ``<name>@<fingerprint>`` where the fingerprint is the first 8
hex digits of the sha256 of ``{base key, recipe, pairs digest, window}``, known before any
training, so the model's partitions are declared like any other. Making the pairs means
extracting and chunking the whole corpus, too slow for every configuration load (``ask``,
``models``, ``serve``, the code location): :func:`pairs_digest` records the digest in the model
cache under the sha256 of what the pairs are made from (the corpus files' bytes, the code and
libraries that read them, the recipe), so it is recomputed only when one of those changes.
The trained folder carries ``adaptation.json``: that key, the recipe, the pairs' digest and
count, the loss, and the sha256 of every file it holds; a folder whose files or key differ
refuses to load.

Torch and sentence-transformers are imported only by :func:`train_adapted`.

The package, in the order each part feeds the next: :mod:`.recipe` (``AdaptRecipe``,
``Adaptation``, ``adapted_fingerprint``, ``held_out_half``), :mod:`.pairs` (``make_pairs``,
``training_pairs``, ``pairs_sha256``, ``corpus_documents``), :mod:`.digest` (``pairs_digest``
and its record in the model cache), :mod:`.training` (``train_adapted``, ``adapt_model``, the
trained folder's ``verify_adapted`` and ``trained_result``). Everything is re-exported here.
"""

from rag_pipeline.core.embedding.adaptation.digest import (
    DIGESTS_FOLDER,
    PairsDigest,
    corpus_inputs_sha256,
    pairs_digest,
    reader_versions,
)
from rag_pipeline.core.embedding.adaptation.pairs import (
    PAIRS_VERSION,
    CorpusDocument,
    Pair,
    PairKind,
    corpus_chunks,
    corpus_documents,
    make_pairs,
    pairs_sha256,
    sample_pairs,
    training_pairs,
)
from rag_pipeline.core.embedding.adaptation.recipe import (
    Adaptation,
    AdaptRecipe,
    adapted_fingerprint,
    held_out_half,
)
from rag_pipeline.core.embedding.adaptation.training import (
    ADAPTATION_FILE,
    ModelNotTrainedError,
    TrainingResult,
    adapt_model,
    adapted_files,
    train_adapted,
    trained_result,
    verify_adapted,
)

__all__ = [
    "ADAPTATION_FILE",
    "DIGESTS_FOLDER",
    "PAIRS_VERSION",
    "AdaptRecipe",
    "Adaptation",
    "CorpusDocument",
    "ModelNotTrainedError",
    "Pair",
    "PairKind",
    "PairsDigest",
    "TrainingResult",
    "adapt_model",
    "adapted_files",
    "adapted_fingerprint",
    "corpus_chunks",
    "corpus_documents",
    "corpus_inputs_sha256",
    "held_out_half",
    "make_pairs",
    "pairs_digest",
    "pairs_sha256",
    "reader_versions",
    "sample_pairs",
    "train_adapted",
    "trained_result",
    "training_pairs",
    "verify_adapted",
]
