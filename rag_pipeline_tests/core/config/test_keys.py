"""The lock and the keys: a locked key survives relocking, a changed file is refused by name, a
changed setting gives a new key, and a copied configuration keeps every key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.config.init_file import folder_config_text
from rag_pipeline.core.config.keys import model_specs, write_lock
from rag_pipeline.core.config.lock import load_lock
from rag_pipeline.core.config.parse import load_config
from rag_pipeline.core.embedding.models import ModelConfigError, ModelMismatchError
from rag_pipeline.project_paths import PROJECT_ROOT
from rag_pipeline_tests.core.config.conftest import TWO_MODELS


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


def test_going_back_to_the_projects_settings_after_locking_others_gives_its_key_back(tmp_path: Path):
    # Found by an operator: window = 128 locked beside the configuration, then 256 again, gave
    # a third key (the lock beside it named only 128), not @53aa5117: everything re-embedded.
    project = load_config(PROJECT_ROOT / "rag_pipeline.toml")
    key = next(s.key for s in model_specs(project) if s.name == "all-MiniLM-L6-v2")
    corpus = tmp_path / "docs"
    corpus.mkdir()
    written = tmp_path / "docs.rag_pipeline.toml"
    text = folder_config_text(corpus, tmp_path / "data", written, project)
    declared = 'precision = "fp32"\nwindow = 256\n'
    assert text.count(declared) == 1
    narrowed = text.replace(declared, 'precision = "fp32"\nwindow = 128\n')
    written.write_text(narrowed)
    narrow = next(s.key for s in write_lock(load_config(written)) if s.name == "all-MiniLM-L6-v2")
    written.write_text(text)
    back = next(s for s in model_specs(load_config(written)) if s.name == "all-MiniLM-L6-v2")
    assert (narrow != key, back.key, back.max_tokens) == (True, key, 256)
    # Locked again at 256, it keeps the project's key (and 128's stays its own).
    assert next(s.key for s in write_lock(load_config(written))
                if s.name == "all-MiniLM-L6-v2") == key == "all-MiniLM-L6-v2@53aa5117"
    written.write_text(narrowed)
    assert next(s.key for s in model_specs(load_config(written))
                if s.name == "all-MiniLM-L6-v2") == narrow


def test_a_package_that_is_no_model_package_is_named_with_file_and_field(tmp_path: Path):
    # Planted: `package = "os"`, a module without get_model_path(): an AttributeError named
    # neither the file nor the field.
    config = tmp_path / "rag_pipeline.toml"
    config.write_text('[[models]]\nname = "m"\npackage = "os"\n')
    with pytest.raises(ModelConfigError) as caught:
        model_specs(load_config(config))
    assert str(caught.value) == (f"{config}: [[models]] 'm' `package`: 'os' is not a model "
                                 "package: it has no get_model_path() (use `path` for a model "
                                 "folder)")
    # A package not installed is told when the file is read, before any model is wanted.
    config.write_text('[[models]]\nname = "m"\npackage = "no_such_model_package"\n')
    with pytest.raises(ModelConfigError) as caught:
        load_config(config)
    assert str(caught.value) == (f"{config}: [[models]] #1 ('m'): `package`: model package "
                                 "'no_such_model_package' is not installed (pip install "
                                 "no-such-model-package)")
