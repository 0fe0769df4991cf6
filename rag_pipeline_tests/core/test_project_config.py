"""rag_pipeline.toml: parsing, one-line errors, the lock, and the project's own file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.chunking import ChunkingStrategy
from rag_pipeline.core.models import Backend, ModelConfigError, ModelMismatchError, Precision
from rag_pipeline.core.project_config import (
    load_config,
    load_lock,
    model_specs,
    parse_config,
    write_lock,
)
from rag_pipeline.project_paths import PROJECT_ROOT

TWO_MODELS = """
[index]
chunkers = ["header"]

[[models]]
name = "fast"
path = "model"
backend = "openvino"
precision = "int8"
calibration = { chunker = "header", samples = 20 }

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


def test_parse_orders_the_default_first_and_reads_every_field(project: Path):
    config = load_config(project / "rag_pipeline.toml")
    assert [m.name for m in config.models] == ["ref", "fast"]
    assert config.chunkers == (ChunkingStrategy.HEADER,)
    assert config.model_cache == project / "data" / "models"
    ref, fast = config.models
    assert (ref.backend, ref.precision, ref.window, ref.batch_size, ref.cut) == (
        Backend.TORCH, Precision.FP32, 256, 16, 0.6)
    assert (fast.backend, fast.precision, fast.calibration.samples) == (
        Backend.OPENVINO, Precision.INT8, 20)


@pytest.mark.parametrize(("text", "message"), [
    ("[[models]]\nname = 'a'\n", "[[models]] #1 ('a'): give exactly one of `path`, `package` or "
                                 "`hub`, got none"),
    ("[[models]]\nname = 'a'\npath = 'm'\nbackend = 'tf'\n",
     "[[models]] #1 ('a'): `backend` must be one of ['torch', 'openvino'], got 'tf'"),
    ("[[models]]\nname = 'a'\npath = 'm'\nprecision = 'int8'\n",
     "[[models]] #1 ('a'): int8 is not supported with the torch backend (int8 needs backend = "
     "\"openvino\")"),
    ("[[models]]\nname = 'a@1'\npath = 'm'\n",
     "[[models]] #1 ('a@1'): `name` must be a non-empty string without '@' or '/'"),
    ("[[models]]\nname = 'a'\npath = 'm'\nwindow = 0\n",
     "[[models]] #1 ('a'): `window` must be an integer from 8 to 65536, got 0"),
    ("[[models]]\nname = 'a'\npath = 'm'\ncut = nan\n",
     "[[models]] #1 ('a'): `cut` must be a cosine distance in (0, 2], got nan"),
    ("[[models]]\nname = 'a'\nhub = 'org/m'\n",
     "[[models]] #1 ('a'): a hub model needs a pinned `revision` (a commit hash)"),
    ("[[models]]\nname = 'a'\npath = 'm'\nbatch = 3\n",
     "[[models]] #1 ('a'): unknown key(s) ['batch']"),
    ("[index]\nchunkers = ['header', 'nope']\n[[models]]\nname = 'a'\npath = 'm'\n",
     "rag_pipeline.toml: [index] chunkers must be a non-empty list of distinct names"),
    ("[[models]]\nname = 'a'\npath = 'm'\n[[models]]\nname = 'a'\npath = 'n'\n",
     "rag_pipeline.toml: two [[models]] share a name: ['a', 'a']"),
    ("[[models]]\nname = 'a'\npath = 'm'\ndefault = true\n[[models]]\nname = 'b'\npath = 'n'\n"
     "default = true\n", "rag_pipeline.toml: only one model can be the default, got ['a', 'b']"),
    ("[index]\nchunkers = ['blind']\n[[models]]\nname = 'a'\npath = 'm'\nbackend = 'openvino'\n"
     "precision = 'int8'\n", "rag_pipeline.toml: 'a' calibrates on the 'header' chunks, which "
                             "[index] chunkers does not build"),
    ("models = 3", "rag_pipeline.toml: declare at least one [[models]] table"),
    ("[[models]\n", "rag_pipeline.toml: not valid TOML: "),
])
def test_bad_files_fail_with_one_line(text: str, message: str, tmp_path: Path):
    with pytest.raises(ModelConfigError) as info:
        parse_config(text, tmp_path)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_lock_pins_keys_and_a_changed_file_is_refused_by_name(project: Path):
    from rag_pipeline.core.models import verify_model_files

    config = load_config(project / "rag_pipeline.toml")
    unlocked = model_specs(config)
    locked = write_lock(config)
    assert [s.key for s in locked] == [s.key for s in unlocked]
    assert set(load_lock(config.lock_path)) == {"ref", "fast"}
    ref, fast = locked
    assert ref.fingerprint != fast.fingerprint
    # Planted flaw: the pooling config changes after locking; the key stays, the load refuses.
    (project / "model" / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8}\n')
    assert model_specs(config)[0].key == ref.key
    with pytest.raises(ModelMismatchError, match=r"1_Pooling/config\.json changed"):
        verify_model_files(model_specs(config)[0])
    relocked = write_lock(config)
    assert relocked[0].key != ref.key
    verify_model_files(relocked[0])


def test_relocking_unchanged_files_keeps_a_minted_fingerprint(project: Path):
    config = load_config(project / "rag_pipeline.toml")
    write_lock(config)
    data = json.loads(config.lock_path.read_text())
    data["models"]["ref"]["fingerprint"] = "0badcafe"
    config.lock_path.write_text(json.dumps(data))
    assert model_specs(config)[0].key == "ref@0badcafe"
    assert write_lock(config)[0].key == "ref@0badcafe"


def test_a_changed_setting_gives_a_new_key_not_the_locked_one(project: Path):
    config = load_config(project / "rag_pipeline.toml")
    locked = write_lock(config)[0]
    text = TWO_MODELS.replace("cut = 0.6", "cut = 0.6\nwindow = 128")
    (project / "rag_pipeline.toml").write_text(text)
    changed = model_specs(load_config(project / "rag_pipeline.toml"))[0]
    assert changed.key != locked.key and changed.max_tokens == 128


def test_the_projects_own_file_declares_both_models_and_six_chunkers():
    config = load_config(PROJECT_ROOT / "rag_pipeline.toml")
    assert [s.key for s in model_specs(config)] == ["all-MiniLM-L6-v2@53aa5117",
                                                    "all-MiniLM-L6-v2-int8@56ea7bc8"]
    assert config.chunkers == tuple(ChunkingStrategy)
