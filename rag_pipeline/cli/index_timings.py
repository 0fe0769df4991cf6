"""``index --timings``: where the wall time went, stage by stage, and the encoding rate against
this machine's fp32 floor (the time the encoder's matrix products alone need)."""

from __future__ import annotations

import json

from rag_pipeline.cli.edge import echo
from rag_pipeline.core.embedding.floor import encoder_flops, fp32_matmul_rate
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.storage.table_names import CHUNKS
from rag_pipeline.core.storage.warehouse import Warehouse


def floor_chunks_per_second(warehouse: Warehouse, spec: ModelSpec) -> float | None:
    """Chunks/s the fp32 floor allows for the distinct chunk texts of every chunks partition
    (word-pieces cut at the window), at a matrix-product rate measured now."""
    counts: dict[str, int] = {}
    for version in warehouse.versions(CHUNKS):
        table = warehouse.read_file(version.file, columns=["text_sha256", "wordpieces"])
        counts.update(zip(table.column("text_sha256").to_pylist(),
                          (min(int(n), spec.max_tokens) for n in
                           table.column("wordpieces").to_pylist()), strict=True))
    if not counts:
        return None
    config = json.loads((spec.path / "config.json").read_text(encoding="utf-8"))
    return len(counts) * fp32_matmul_rate() / encoder_flops(list(counts.values()), config)


def echo_timings(timings, warehouse: Warehouse, spec: ModelSpec) -> None:
    """Prints an :class:`~rag_pipeline.orchestration.index_timings.IndexTimings`."""
    echo(f"\ntimings ({timings.runs} runs, {timings.wall:.1f} s wall):")
    for stage, seconds in [*timings.stages.items(),
                           ("start-ups and waits (outside any step)", timings.outside_steps)]:
        share = seconds / timings.wall if timings.wall > 0 else 0.0
        echo(f"  {stage:48s} {seconds:8.1f} s  {share:6.1%}")
    for model, (chunks, encoding) in timings.encoded.items():
        if not chunks or encoding <= 0:
            continue
        rate = chunks / encoding
        # The floor is the default model's fp32 one: another model (int8) is shown alone.
        floor = floor_chunks_per_second(warehouse, spec) if model == spec.key else None
        against = f", {rate / floor:.0%} of the fp32 floor ({floor:.1f} chunks/s)" if floor else ""
        echo(f"  encoding {model}: {chunks} chunks at {rate:.1f} chunks/s{against}; "
             f"{encoding / timings.wall:.0%} of the wall time")
