"""rag_pipeline.toml parsed: every field read, one-line errors, the profiles, and the project's
own file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.keys import model_specs
from rag_pipeline.core.config.parse import (
    choose_profile,
    declared_chunkers,
    load_config,
    parse_config,
    select_profile,
)
from rag_pipeline.core.config.root import ENV_CONFIG, ConfigNotFoundError
from rag_pipeline.core.config.schema import Profile
from rag_pipeline.core.embedding.models import (
    CALIBRATION_TEXTS,
    Backend,
    ModelConfigError,
    Precision,
    calibration_set,
)
from rag_pipeline.project_paths import PROJECT_ROOT


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
    ("[[models]]\nname = 'a'\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): give exactly one of `path`, `package` or `hub`, "
     "got none"),
    ("[[models]]\nname = 'a'\npath = 'm'\nbackend = 'tf'\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): `backend` must be one of torch, openvino; got 'tf'"),
    ("[[models]]\nname = 'a'\npath = 'm'\nprecision = 'int8'\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): int8 is not supported with the torch backend "
     "(int8 needs backend = \"openvino\")"),
    ("[[models]]\nname = 'a@1'\npath = 'm'\n",
     "rag_pipeline.toml: [[models]] #1 ('a@1'): `name` must be a non-empty string without '@' or '/'"),
    ("[[models]]\nname = 'a'\npath = 'm'\nwindow = 0\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): `window` must be an integer from 8 to 65536, got 0"),
    ("[[models]]\nname = 'a'\npath = 'm'\ncut = nan\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): `cut` must be a cosine distance in (0, 2], got nan"),
    ("[[models]]\nname = 'a'\nhub = 'org/m'\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): a hub model needs a pinned `revision` (a commit hash)"),
    ("[[models]]\nname = 'a'\npath = 'm'\nbatch = 3\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): unknown key(s) batch; known: "),
    ("[index]\nchunkers = ['header', 'nope']\n[[models]]\nname = 'a'\npath = 'm'\n",
     "rag_pipeline.toml: [index] chunkers must be a non-empty list of distinct names"),
    ("[[models]]\nname = 'a'\npath = 'm'\n[[models]]\nname = 'a'\npath = 'n'\n",
     "rag_pipeline.toml: [[models]] names used more than once: a"),
    ("[[models]]\nname = 'a'\npath = 'm'\ndefault = true\n[[models]]\nname = 'b'\npath = 'n'\n"
     "default = true\n", "rag_pipeline.toml: only one model can be the default; got a, b"),
    ("[[models]]\nname = 'a'\npath = 'm'\nbackend = 'openvino'\nprecision = 'int8'\n"
     "calibration = { chunker = 'header' }\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): `calibration` takes only `texts`"),
    ("[[models]]\nname = 'a'\npath = 'm'\nbackend = 'openvino'\nprecision = 'int8'\n"
     "calibration = { texts = 'none.jsonl' }\n",
     "rag_pipeline.toml: [[models]] #1 ('a'): calibration texts not found: "),
    ("models = 3", "rag_pipeline.toml: declare at least one [[models]] table"),
    ("[[models]\n", "rag_pipeline.toml: not valid TOML: "),
    # Found by a helper: read as a folder, it failed at `index` only ("folder not found: ftp:/x/y").
    ("[index]\ncorpus = 'ftp://x/y'\n[[models]]\nname = 'a'\npath = 'm'\n",
     "rag_pipeline.toml: [index] corpus: ftp://x/y: not a corpus URI (s3://bucket/prefix, "
     "git+file:///repo, git+https://host/repo)"),
])
def test_bad_files_fail_with_one_line(text: str, message: str, tmp_path: Path):
    with pytest.raises(ModelConfigError) as info:
        parse_config(text, tmp_path)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_the_projects_own_file_declares_both_models_and_six_chunkers():
    config = load_config(PROJECT_ROOT / "rag_pipeline.toml")
    assert [s.key for s in model_specs(config)] == ["all-MiniLM-L6-v2@53aa5117",
                                                    "all-MiniLM-L6-v2-int8@b4e41131",
                                                    "all-MiniLM-L6-v2-adapted@5d7e0187"]
    assert config.chunkers == tuple(ChunkingStrategy)


def test_load_config_without_a_path_reads_the_file_rag_pipeline_config_names(
        project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ENV_CONFIG, str(project / "rag_pipeline.toml"))
    config = load_config()
    assert (config.path, [m.name for m in config.models]) == (project / "rag_pipeline.toml",
                                                              ["ref", "fast"])
    # What asks load_config() for the project's file sees the same one: one chunker, not six.
    assert declared_chunkers() == (ChunkingStrategy.HEADER,)
    monkeypatch.setenv(ENV_CONFIG, "")
    assert load_config().path == PROJECT_ROOT / "rag_pipeline.toml"
    assert declared_chunkers() == tuple(ChunkingStrategy)


def test_load_config_never_falls_back_to_the_projects_file_for_a_typo(
        project: Path, monkeypatch: pytest.MonkeyPatch):
    typo = project / "rag_pipline.toml"
    monkeypatch.setenv(ENV_CONFIG, str(typo))
    with pytest.raises(ConfigNotFoundError) as info:
        load_config()
    assert str(info.value) == (f"RAG_PIPELINE_CONFIG={str(typo)!r} does not exist: it must name a "
                               "rag_pipeline.toml file (unset it for the project's own)")


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
                                               r"evaluation, production$"):
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
                                        "non-empty list of distinct declared model names "
                                        "(a); got ['zz']"),
    ("[profiles.p]\nchunkers = []\n", "rag_pipeline.toml: [profiles.p] chunkers must be a "
                                      "non-empty list"),
    ("[profiles.p]\nsize = 1\n", "rag_pipeline.toml: [profiles.p]: unknown key(s) size; "
                                 "known: chunkers, models"),
    ("[index]\nprofile = 'nope'\n", "rag_pipeline.toml: [index] profile 'nope' is not one of "
                                    "production, evaluation"),
])
def test_bad_profiles_fail_with_one_line(text: str, message: str, tmp_path: Path):
    with pytest.raises(ModelConfigError) as info:
        parse_config(text + "[[models]]\nname = 'a'\npath = 'm'\n", tmp_path)
    assert str(info.value).startswith(message)


def test_compute_is_in_process_without_the_table_and_ray_with_it(tmp_path: Path):
    from rag_pipeline.core.embedding.compute import ComputeSettings, Engine

    model = "[[models]]\nname = 'a'\npath = 'm'\n"
    assert parse_config(model, tmp_path).compute == ComputeSettings(Engine.IN_PROCESS, None, 64)
    text = "[compute]\nengine = 'ray'\naddress = '10.0.0.5:6379'\nshard_texts = 128\n" + model
    assert parse_config(text, tmp_path).compute == ComputeSettings(Engine.RAY, "10.0.0.5:6379", 128)
    auto = "[compute]\nengine = 'ray'\naddress = 'auto'\n" + model
    assert parse_config(auto, tmp_path).compute == ComputeSettings(Engine.RAY, "auto", 64)
    client = "[compute]\nengine = 'ray'\naddress = 'ray://head-svc:10001'\n" + model
    assert parse_config(client, tmp_path).compute == ComputeSettings(Engine.RAY,
                                                                     "ray://head-svc:10001", 64)


@pytest.mark.parametrize(("table", "message"), [
    ("engine = 'spark'", "rag_pipeline.toml: [compute] engine must be one of in_process, "
                         "ray; got 'spark'"),
    ("engine = 'ray'", 'rag_pipeline.toml: [compute] engine = "ray" needs an address '
                       '("HOST:PORT" or "auto")'),
    ("engine = 'ray'\naddress = 'head'", 'rag_pipeline.toml: [compute] address must be '
                                         '"HOST:PORT" or "auto", got \'head\''),
    ("shard_texts = 0", "rag_pipeline.toml: [compute] shard_texts must be a whole number >= 1, "
                        "got 0"),
    ("workers = 2", "rag_pipeline.toml: [compute]: unknown key(s) workers; known: address, engine, "
                    "shard_texts"),
])
def test_a_bad_compute_table_fails_with_one_line(table: str, message: str, tmp_path: Path):
    with pytest.raises(ModelConfigError) as info:
        parse_config(f"[compute]\n{table}\n[[models]]\nname = 'a'\npath = 'm'\n", tmp_path)
    assert str(info.value) == message


@pytest.mark.parametrize(("key", "default", "accepted", "refused", "must_be"), [
    ("max_document_bytes", 20_971_520, {"50_000_000": 50_000_000},
     ("0", "'20MB'", "true", "2_000_000_000", "1.5"),
     "a whole number of bytes from 1 to 1_073_741_824 (default 20_971_520, 20 MiB)"),
    ("max_document_seconds", 600.0, {"30": 30.0, "0.5": 0.5}, ("0", "-1", "'10m'", "true", "100_000"),
     "a number of seconds over 0 and at most 86_400 (default 600)"),
])
def test_an_index_limit_on_each_document_is_read_and_checked(
        tmp_path: Path, key: str, default: float, accepted: dict[str, float], refused: tuple[str, ...],
        must_be: str):
    """max_document_bytes was found by an operator's trial: a file over the limit named it, and
    the configuration file refused it as an unknown key."""
    model = "[[models]]\nname = 'a'\npath = 'm'\n"
    assert getattr(parse_config(model, tmp_path), key) == default
    for value, read in accepted.items():
        assert getattr(parse_config(f"[index]\n{key} = {value}\n" + model, tmp_path), key) == read
    for value in refused:
        with pytest.raises(ModelConfigError) as info:
            parse_config(f"[index]\n{key} = {value}\n" + model, tmp_path)
        assert str(info.value).startswith(f"rag_pipeline.toml: [index] {key} must be {must_be}, got ")


def test_a_configuration_saved_as_utf16_fails_in_one_line_naming_it_and_a_bom_is_read(tmp_path):
    """Found by an attack: a UTF-16 file (Notepad's "Unicode") printed only the decoder's
    message, naming neither the file nor the fix."""
    from rag_pipeline.core.config.parse import DEFAULT_CONFIG, load_config

    path = tmp_path / "team.rag_pipeline.toml"
    path.write_bytes("[index]\n".encode("utf-16"))
    with pytest.raises(ModelConfigError) as raised:
        load_config(path)
    assert str(raised.value) == (f"{path}: not UTF-8 text (byte 0 cannot be read as UTF-8): TOML "
                                 "is UTF-8; save the file as UTF-8")
    path.write_bytes(b"\xef\xbb\xbf" + DEFAULT_CONFIG.encode())
    assert load_config(path).path == path
