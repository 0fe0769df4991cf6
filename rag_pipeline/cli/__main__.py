"""``python -m rag_pipeline.cli``: the same as the ``rag-pipeline`` command."""

from rag_pipeline.cli import main

main(prog_name="rag-pipeline")
