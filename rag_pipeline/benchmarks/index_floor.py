"""A first ``index`` of a fresh folder against the encoder alone and the fp32 floor.

Side by side in one run: the three ratios the indexing target is stated in.

``.venv/bin/python -m rag_pipeline.benchmarks.index_floor --corpus DIR`` (default: the bundled
Python reference exported into a fresh folder; ``--rounds``). ``--beir-corpus FILE`` makes the
folder from a BEIR ``corpus.jsonl`` instead, one Markdown file per document (``# title``, then
its text): a corpus of thousands of documents with no gold set.

1. ``rag-pipeline index --corpus <copy> --profile production`` in a fresh data folder and a
   fresh Dagster home with the project's ``dagster_home/dagster.yaml`` (a user's instance, no
   daemon running: the command runs its runs itself, as a user's ``index`` does) in a
   subprocess; its runs are read back
   (:func:`rag_pipeline.orchestration.index_timings.index_timings`).
2. In this process, on the chunk texts that index wrote: the default model's encoder as the
   index runs it (``Embedder.embed``, median of ``--rounds``) and the fp32 floor (the FLOPs of
   the word-pieces processed at the matrix-product rate measured before and after).

Prints: encoder / floor, the embeddings run's rate / encoder, pure encoding time / index wall
time, and the load average with each. Then the CPU time: the ``index`` command's and its
processes' (user + system), the encoder's for the same texts, and what they bound: were every
core busy from the command's start to its end, the wall time would be the CPU time over the
cores, and the encoding share could not exceed the encoder's wall time over that.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rag_pipeline.benchmarks import go_offline
from rag_pipeline.project_paths import DAGSTER_HOME


def main(argv: Sequence[str] | None = None) -> None:
    go_offline()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--beir-corpus", type=Path, default=None,
                        help="A BEIR corpus.jsonl: the folder is one Markdown file per document.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="Keep the work folder.")
    args = parser.parse_args(argv)
    import dagster as dg

    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.embedding.embedder import load_embedder
    from rag_pipeline.core.embedding.floor import encoder_flops, fp32_matmul_rate
    from rag_pipeline.core.ingest.corpus_export import export_python_reference
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.orchestration.index_timings import index_timings

    work = Path(tempfile.mkdtemp(prefix="index-floor-"))
    corpus = work / "corpus"
    if args.beir_corpus is not None:
        write_beir_folder(args.beir_corpus, corpus)
    elif args.corpus is None:
        export_python_reference(corpus)
    else:
        shutil.copytree(args.corpus, corpus)
    home = work / "dagster_home"
    home.mkdir()
    shutil.copy(DAGSTER_HOME / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    used_before = _children_cpu()
    started = time.time()
    subprocess.run([sys.executable, "-m", "rag_pipeline.cli", "--data-dir", str(work / "data"),
                    "index", "--corpus", str(corpus), "--profile", "production"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.time() - started
    index_cpu = _children_cpu() - used_before
    load_index = os.getloadavg()[0]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run_ids = [r.dagster_run.run_id for r in instance.get_run_records()]
        timings = index_timings(instance, run_ids, wall)
    spec = declared_models()[0]
    chunks = Warehouse(work / "data").read("chunks", {"chunker": "header"},
                                           columns=["text", "text_sha256", "wordpieces"])
    distinct = dict(zip(chunks.column("text_sha256").to_pylist(),
                        zip(chunks.column("text").to_pylist(),
                            chunks.column("wordpieces").to_pylist(), strict=True), strict=True))
    texts = [t for t, _ in distinct.values()]
    counts = [min(int(n), spec.max_tokens) for _, n in distinct.values()]
    config = json.loads((spec.path / "config.json").read_text(encoding="utf-8"))
    rate_before = fp32_matmul_rate()
    embedder = load_embedder(spec)
    embedder.embed(texts[:32], wordpieces=counts[:32])
    seconds, cpu_seconds = [], []
    for _ in range(args.rounds):
        begun, cpu_begun = time.perf_counter(), time.process_time()
        embedder.embed(texts, wordpieces=counts)
        seconds.append(time.perf_counter() - begun)
        cpu_seconds.append(time.process_time() - cpu_begun)
    encode, encode_cpu = statistics.median(seconds), statistics.median(cpu_seconds)
    rate = max(rate_before, fp32_matmul_rate())
    floor = encoder_flops(counts, config) / rate
    load_encode = os.getloadavg()[0]
    embedded, encoding_seconds = timings.encoded.get(spec.key, (0, float("nan")))
    run_rate = embedded / encoding_seconds
    print(f"{len(texts)} distinct chunk texts, {sum(counts):,} word-pieces; index wall {wall:.1f} s "
          f"({timings.runs} runs; load {load_index:.1f}); encoder {encode:.1f} s median of "
          f"{args.rounds} on {embedder.bulk_path.backend} (load {load_encode:.1f}); floor "
          f"{floor:.1f} s at {rate / 1e9:.0f} GFLOP/s")
    for stage, spent in [*timings.stages.items(), ("outside any step", timings.outside_steps)]:
        print(f"  {stage:32s} {spent:7.1f} s {spent / wall:6.1%}")
    print(f"default model vs floor:        {floor / encode:.2f} (target >= 0.75)")
    print(f"embeddings run vs encoder:     {run_rate / (len(texts) / encode):.2f} (target >= 0.9)")
    print(f"pure encoding vs whole index:  {encode / wall:.2f} (target >= 0.8)")
    cores = len(os.sched_getaffinity(0))
    print(f"CPU time: index {index_cpu:.1f} s on {cores} cores ({index_cpu / wall:.2f} busy on "
          f"average), encoder {encode_cpu:.1f} s, the rest {index_cpu - encode_cpu:.1f} s; "
          f"with every core busy throughout, the share could reach "
          f"{encode / (index_cpu / cores):.2f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work folder kept: {work}")


def _children_cpu() -> float:
    """User and system CPU seconds of this process's ended children (and theirs)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def write_beir_folder(corpus_jsonl: Path, folder: Path) -> int:
    """One Markdown file per document of a BEIR ``corpus.jsonl`` (``<_id>.md``: ``# title``,
    a blank line, the text); returns how many were written."""
    folder.mkdir(parents=True)
    written = 0
    with corpus_jsonl.open(encoding="utf-8") as lines:
        for line in lines:
            document = json.loads(line)
            title = " ".join(document.get("title", "").split()) or document["_id"]
            (folder / f"{document['_id'].replace('/', '_')}.md").write_text(
                f"# {title}\n\n{document['text'].strip()}\n", encoding="utf-8")
            written += 1
    return written


if __name__ == "__main__":
    main()
