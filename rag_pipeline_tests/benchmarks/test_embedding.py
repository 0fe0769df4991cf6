"""The embedding benchmark's floor arithmetic, and what it says when it cannot run."""

from __future__ import annotations

import dataclasses

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


def test_an_adapted_model_not_trained_yet_is_skipped_with_one_line(monkeypatch, capsys):
    from rag_pipeline.benchmarks import embedding
    from rag_pipeline.core.embedding.adaptation.training import ModelNotTrainedError
    from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec

    trained = hashed_spec()
    untrained = dataclasses.replace(trained, name="adapted")

    def load(spec):
        if spec is untrained:
            raise ModelNotTrainedError("adapted@0000feed is not trained yet: run `rag-pipeline adapt`")
        return HashedEmbedder(spec)

    monkeypatch.setattr(embedding, "load_embedder", load)
    loaded = embedding.loaded_models([trained, untrained])
    assert [e.spec for e in loaded] == [trained]
    assert capsys.readouterr().out == ("skipped adapted@0000feed: adapted@0000feed is not trained "
                                       "yet: run `rag-pipeline adapt`\n")


def test_a_data_folder_with_no_index_ends_the_benchmark_in_one_line(tmp_path):
    import pytest

    from rag_pipeline.benchmarks import embedding

    with pytest.raises(SystemExit) as ended:
        embedding.main(["--data-dir", str(tmp_path)])
    assert str(ended.value) == (
        f"embedding benchmark: no chunk texts to embed in {tmp_path}: table 'chunks' "
        "(chunker=header) has not been built yet: run `rag-pipeline index` first")
