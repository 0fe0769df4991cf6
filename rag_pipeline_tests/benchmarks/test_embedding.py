"""The embedding benchmark's floor arithmetic, which paths it compares, and what it says when it
cannot run."""

from __future__ import annotations

from rag_pipeline.benchmarks.embedding import encoder_flops


def test_encoder_flops_count_every_matrix_product_of_each_layer():
    config = {"hidden_size": 2, "intermediate_size": 4, "num_hidden_layers": 3}
    # Per layer and text of n word-pieces: 2 n (4 d^2 + 2 d f) + 4 n^2 d.
    ten = 2 * 10 * (4 * 4 + 2 * 2 * 4) + 4 * 10 * 10 * 2
    one = 2 * 1 * (4 * 4 + 2 * 2 * 4) + 4 * 1 * 1 * 2
    assert (ten, one) == (1440, 72)
    assert encoder_flops([10, 1], config) == 3 * (1440 + 72)
    assert encoder_flops([], config) == 0.0


def test_all_minilm_reads_a_twenty_piece_question_in_0_428_gflop():
    config = {"hidden_size": 384, "intermediate_size": 1536, "num_hidden_layers": 6}
    assert round(encoder_flops([20], config) / 1e9, 3) == 0.428


def test_a_data_folder_with_no_index_ends_the_benchmark_in_one_line(tmp_path):
    import pytest

    from rag_pipeline.benchmarks import embedding

    with pytest.raises(SystemExit) as ended:
        embedding.main(["--data-dir", str(tmp_path)])
    assert str(ended.value) == (
        f"embedding benchmark: no chunk texts to embed in {tmp_path}: table 'chunks' "
        "(chunker=header) has not been built yet: run `rag-pipeline index` first")


def test_only_an_fp32_bulk_path_has_runtimes_to_compare():
    from types import SimpleNamespace

    from rag_pipeline.benchmarks.embedding import other_runtime_variant
    from rag_pipeline.core.embedding.bulk import BulkPath

    def on(backend: str) -> SimpleNamespace:
        return SimpleNamespace(bulk_path=BulkPath(backend, 2), spec=None)

    # The int8 model's own OpenVINO backend has no fp32 export to run elsewhere, nor has torch.
    assert other_runtime_variant(on("openvino")) is None
    assert other_runtime_variant(on("torch")) is None
