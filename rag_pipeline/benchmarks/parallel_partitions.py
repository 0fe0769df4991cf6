"""Two embedding partitions one after another vs side by side, on this machine.

Builds documents and the chunks of two chunkers once (a few topics of the bundled corpus), then
embeds both partitions from fresh copies of that data folder, each in its own process as a run
worker would: serially with every core per run, then both at once with the cores split, then
both at once each with every core (oversubscribed). Prints wall times and chunks per second.

    python -m rag_pipeline.benchmarks.parallel_partitions [--topics N] [--chunkers a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys, time
from pathlib import Path
import dagster as dg
from rag_pipeline.orchestration.automation import EMBEDDINGS_JOB
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.definitions import build_definitions
data, corpus, chunker, threads = sys.argv[1:]
defs = build_definitions(data_dir=Path(data), corpus_dir=Path(corpus), torch_threads=int(threads))
key = dg.MultiPartitionKey({"chunker": chunker, "model": declared_models()[0].key})
started = time.time()
result = defs.resolve_job_def(EMBEDDINGS_JOB).execute_in_process(
    instance=dg.DagsterInstance.ephemeral(), partition_key=key)
meta = {k.split(".")[-1]: getattr(v, "value", v) for e in result.get_asset_materialization_events()
        for k, v in e.event_specific_data.materialization.metadata.items()}
print(json.dumps({"chunker": chunker, "threads": int(threads), "ok": result.success,
                  "run_seconds": time.time() - started, "embedded": meta["embedded"],
                  "embed_seconds": meta["embed_seconds"],
                  "chunks_per_second": meta["chunks_per_second"]}))
"""


def _prepare(folder: Path, topics: int, chunkers: list[str]) -> tuple[Path, Path]:
    import dagster as dg

    from rag_pipeline.core.ingest.corpus_export import export_python_reference
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB

    every = folder / "reference"
    export_python_reference(every)
    corpus = folder / "corpus"
    corpus.mkdir()
    for path in sorted(every.iterdir(), key=lambda p: -p.stat().st_size)[:topics]:
        shutil.copy(path, corpus / path.name)
    data = folder / "built"
    defs = build_definitions(data_dir=data, corpus_dir=corpus)
    instance = dg.DagsterInstance.ephemeral()
    defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance)
    for chunker in chunkers:
        defs.resolve_job_def(CHUNKS_JOB).execute_in_process(instance=instance,
                                                            partition_key=chunker)
    return data, corpus


def _start(folder: Path, data: Path, corpus: Path, chunker: str, threads: int,
           label: str) -> subprocess.Popen:
    copy = folder / f"{label}-{chunker}"
    shutil.copytree(data, copy)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(copy), str(corpus), chunker,
                             str(threads)], env=env, stdout=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> dict:
    out, _ = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"embedding run failed with exit code {process.returncode}")
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=3, help="largest topics of the corpus")
    parser.add_argument("--chunkers", default="header,boundaries")
    args = parser.parse_args()
    chunkers = args.chunkers.split(",")
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, corpus = _prepare(folder, args.topics, chunkers)
        trials = {}
        started = time.time()
        trials["serial"] = [_finish(_start(folder, data, corpus, c, cores, "serial"))
                            for c in chunkers]
        trials["serial"].append(time.time() - started)
        for label, threads in (("parallel_split", max(1, cores // len(chunkers))),
                               ("parallel_all_cores", cores)):
            started = time.time()
            running = [_start(folder, data, corpus, c, threads, label) for c in chunkers]
            trials[label] = [_finish(p) for p in running]
            trials[label].append(time.time() - started)
    print(f"{cores} cores; {args.topics} topics; chunkers {chunkers}")
    for label, rows in trials.items():
        *runs, wall = rows
        print(f"{label:20s} wall {wall:6.1f} s   " + "   ".join(
            f"{r['chunker']}: {r['embedded']} texts, {r['threads']} thr, embed "
            f"{r['embed_seconds']:.1f} s ({r['chunks_per_second']} /s), run {r['run_seconds']:.1f} s"
            for r in runs))


if __name__ == "__main__":
    main()
