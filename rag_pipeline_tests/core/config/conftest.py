"""A project folder with two declared models (a torch reference and an OpenVINO int8 one) over
one tiny model folder."""

from __future__ import annotations

from pathlib import Path

import pytest

TWO_MODELS = """
[index]
chunkers = ["header"]

[[models]]
name = "fast"
path = "model"
backend = "openvino"
precision = "int8"

[[models]]
name = "ref"
path = "model"
default = true
cut = 0.6
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8}')
    (tmp_path / "rag_pipeline.toml").write_text(TWO_MODELS)
    return tmp_path
