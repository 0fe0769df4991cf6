"""``rag-pipeline``: index, status, ask and eval from a terminal.

One module per command group, each registered on the group of :mod:`rag_pipeline.cli.edge`
(the process edge and its error policy):

- :mod:`~rag_pipeline.cli.index`: ``index``
- :mod:`~rag_pipeline.cli.init`: ``init``
- :mod:`~rag_pipeline.cli.status`: ``status``, ``models``
- :mod:`~rag_pipeline.cli.ask`: ``ask``, ``serve``
- :mod:`~rag_pipeline.cli.evaluation`: ``eval``, ``adapt``
- :mod:`~rag_pipeline.cli.gold`: ``gold draft``
- :mod:`~rag_pipeline.cli.tokens`: ``tokens add|list|revoke``
"""

from __future__ import annotations

from rag_pipeline.cli import ask, evaluation, gold, index, init, status, tokens
from rag_pipeline.cli.edge import main, run

for command in (index.index, init.init, status.models, status.status, ask.ask, ask.serve,
                evaluation.evaluate_command, evaluation.adapt, gold.gold, tokens.tokens):
    main.add_command(command)

__all__ = ["main", "run"]
