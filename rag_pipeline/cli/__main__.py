"""``python -m rag_pipeline.cli``: the same as the ``rag-pipeline`` command."""

from rag_pipeline.cli import run

run(prog_name="rag-pipeline")
