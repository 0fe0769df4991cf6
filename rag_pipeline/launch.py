"""The ``rag-pipeline`` console script: :func:`rag_pipeline.cli.run`, and a Ctrl-C that lands
while the command's modules are still importing (a few hundred milliseconds: click, the
commands, their imports) ends the process quietly with 130, as one a moment later does, instead
of printing Python's traceback from deep inside an import.

A module outside :mod:`rag_pipeline.cli`, so the handler is in place before any of that
package is imported.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable


def run() -> None:
    """Loads the CLI with SIGINT ending the process at once (nothing has begun: nothing to
    clean up), then runs it with Python's own SIGINT handling back."""
    previous = signal.signal(signal.SIGINT, _stopped_while_loading)
    try:
        cli = _load()
    finally:
        signal.signal(signal.SIGINT, previous)
    cli(prog_name="rag-pipeline")


def _load() -> Callable[..., None]:
    from rag_pipeline.cli import run as cli

    return cli


def _stopped_while_loading(signum: int, frame: object) -> None:
    try:
        sys.stderr.write(f"\nstopped by {signal.Signals(signum).name} before the command began\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr (closed, or a broken pipe)
        pass
    os._exit(128 + signum)


if __name__ == "__main__":
    run()
