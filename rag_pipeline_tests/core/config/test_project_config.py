"""rag_pipeline.toml: parsing, one-line errors, the lock, and the project's own file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.project_config import (
    Profile,
    choose_profile,
    folder_config_text,
    load_config,
    load_lock,
    model_specs,
    parse_config,
    select_profile,
    write_lock,
)
from rag_pipeline.core.embedding.models import (
    CALIBRATION_TEXTS,
    Backend,
    ModelConfigError,
    ModelMismatchError,
    Precision,
    calibration_set,
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
    assert (fast.backend, fast.precision, fast.calibration) == (
        Backend.OPENVINO, Precision.INT8, calibration_set(CALIBRATION_TEXTS))
    assert fast.calibration.count == 300


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
    ("[[models]]\nname = 'a'\npath = 'm'\nbackend = 'openvino'\nprecision = 'int8'\n"
     "calibration = { chunker = 'header' }\n", "[[models]] #1 ('a'): `calibration` takes only "
                                             "`texts`"),
    ("[[models]]\nname = 'a'\npath = 'm'\nbackend = 'openvino'\nprecision = 'int8'\n"
     "calibration = { texts = 'none.jsonl' }\n", "[[models]] #1 ('a'): calibration texts not "
                                                "found: "),
    ("models = 3", "rag_pipeline.toml: declare at least one [[models]] table"),
    ("[[models]\n", "rag_pipeline.toml: not valid TOML: "),
])
def test_bad_files_fail_with_one_line(text: str, message: str, tmp_path: Path):
    with pytest.raises(ModelConfigError) as info:
        parse_config(text, tmp_path)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_lock_pins_keys_and_a_changed_file_is_refused_by_name(project: Path):
    from rag_pipeline.core.embedding.models import verify_model_files

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
                                                    "all-MiniLM-L6-v2-int8@b4e41131",
                                                    "all-MiniLM-L6-v2-adapted@fc948889"]
    assert config.chunkers == tuple(ChunkingStrategy)


def test_builtin_profiles_are_header_x_default_and_every_chunker_x_every_model(project: Path):
    config = load_config(project / "rag_pipeline.toml")
    assert config.profiles == (Profile("production", (ChunkingStrategy.HEADER,), ("ref",)),
                               Profile("evaluation", (ChunkingStrategy.HEADER,), ("ref", "fast")))
    assert choose_profile(config, None, user_corpus=True).name == "production"
    assert choose_profile(config, None, user_corpus=False).name == "evaluation"
    assert choose_profile(config, "evaluation", user_corpus=True).name == "evaluation"
    production = select_profile(config, choose_profile(config, None, True))
    assert ([m.name for m in production.models], production.chunkers, production.selected) == (
        ["ref"], (ChunkingStrategy.HEADER,), "production")
    with pytest.raises(ModelConfigError, match=r"profile 'fast' is not declared; declared: "
                                               r"\['evaluation', 'production'\]"):
        choose_profile(config, "fast", True)


def test_declared_profiles_and_index_profile_choose_what_index_builds(tmp_path: Path):
    text = ("[index]\nchunkers = ['blind', 'header']\nprofile = 'evaluation'\n"
            "[profiles.production]\nchunkers = ['blind']\n"
            "[profiles.small]\nmodels = ['b', 'a']\n"
            "[[models]]\nname = 'a'\npath = 'm'\ndefault = true\n[[models]]\nname = 'b'\npath = 'm'\n")
    config = parse_config(text, tmp_path)
    by_name = {p.name: p for p in config.profiles}
    assert by_name["production"] == Profile("production", (ChunkingStrategy.BLIND,), ("a",))
    assert by_name["evaluation"].chunkers == (ChunkingStrategy.BLIND, ChunkingStrategy.HEADER)
    # A table without chunkers takes production's built-in `header`; models in declared order.
    assert by_name["small"] == Profile("small", (ChunkingStrategy.HEADER,), ("a", "b"))
    # `[index] profile` beats the corpus rule; the command line beats `[index] profile`.
    assert choose_profile(config, None, user_corpus=True).name == "evaluation"
    assert choose_profile(config, "small", user_corpus=True).name == "small"


@pytest.mark.parametrize(("text", "message"), [
    ("[profiles.p]\nmodels = ['zz']\n", "rag_pipeline.toml: [profiles.p] models must be a "
                                        "non-empty list of distinct declared model names from "
                                        "['a'], got ['zz']"),
    ("[profiles.p]\nchunkers = []\n", "rag_pipeline.toml: [profiles.p] chunkers must be a "
                                      "non-empty list"),
    ("[profiles.p]\nsize = 1\n", "rag_pipeline.toml: [profiles.p] takes only ['chunkers', "
                                 "'models']"),
    ("[index]\nprofile = 'nope'\n", "rag_pipeline.toml: [index] profile 'nope' is not one of "
                                    "['production', 'evaluation']"),
])
def test_bad_profiles_fail_with_one_line(text: str, message: str, tmp_path: Path):
    with pytest.raises(ModelConfigError) as info:
        parse_config(text + "[[models]]\nname = 'a'\npath = 'm'\n", tmp_path)
    assert str(info.value).startswith(message)


def test_the_folder_config_parses_to_its_corpus_data_folder_and_the_production_profile(
        project: Path, tmp_path: Path):
    corpus = tmp_path / "team" / "docs"
    corpus.mkdir(parents=True)
    at = tmp_path / "team" / "docs.rag_pipeline.toml"
    base = load_config(project / "rag_pipeline.toml")
    text = folder_config_text(corpus, tmp_path / "team" / "docs.rag-data", at, base)
    config = parse_config(text, at.parent, at)
    assert (config.corpus, config.data_dir, config.model_cache, config.profile) == (
        corpus, tmp_path / "team" / "docs.rag-data", tmp_path / "team" / "docs.rag-data" / "models",
        "production")
    # The declarations are the project's (a `path` model resolved so the copy finds it).
    assert [replace(m, source=base.models[0].source) for m in config.models] == [
        replace(m, source=base.models[0].source) for m in base.models]
    assert config.models[0].source.resolve(config.root) == project / "model"
    assert '\ncorpus = "docs"\n' in text and '\ndata_dir = "docs.rag-data"\n' in text


def test_a_copied_or_init_written_configuration_keeps_every_key(tmp_path: Path):
    project = load_config(PROJECT_ROOT / "rag_pipeline.toml")
    keys = [s.key for s in model_specs(project)]
    copy = tmp_path / "elsewhere" / "rag_pipeline.toml"
    copy.parent.mkdir()
    copy.write_text((PROJECT_ROOT / "rag_pipeline.toml").read_text())
    # The adapted model's held-out gold set is a path relative to the file: copied with it, the
    # same corpus and the same held-out documents give the same adapted key.
    gold = copy.parent / "data" / "eval" / "python-reference" / "gold.jsonl"
    gold.parent.mkdir(parents=True)
    gold.write_text((PROJECT_ROOT / "data/eval/python-reference/gold.jsonl").read_text())
    # No lock beside the copy: the project's lock travels with the unchanged declarations.
    assert not (copy.parent / "rag_pipeline.lock.json").exists()
    assert [s.key for s in model_specs(load_config(copy))] == keys
    corpus = tmp_path / "docs"
    corpus.mkdir()
    written = tmp_path / "docs.rag_pipeline.toml"
    written.write_text(folder_config_text(corpus, tmp_path / "data", written, project))
    # `init` copies the declarations but not the adapted model (it is trained per corpus).
    assert [s.key for s in model_specs(load_config(written))] == [
        s.key for s in model_specs(project) if s.adaptation is None]
    # Locking the copy writes the same keys beside it (a minted key never moves).
    assert [s.key for s in write_lock(load_config(copy))] == keys
    assert json.loads((copy.parent / "rag_pipeline.lock.json").read_text())["models"][
        "all-MiniLM-L6-v2"]["fingerprint"] == "53aa5117"
