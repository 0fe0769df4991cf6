"""What ``--corpus`` and ``init`` accept: a folder that exists, or a source URI that parses."""

from __future__ import annotations

from pathlib import Path

import click


class CorpusParam(click.ParamType):
    """A folder that exists, or a source URI that parses (``s3://``, ``git+...``)."""

    name = "FOLDER|URI"

    def convert(self, value, param, ctx):
        from rag_pipeline.core.ingest.sources import SourceError, check_corpus_uri, is_corpus_uri

        if isinstance(value, Path) or not is_corpus_uri(str(value)):
            folder = Path(value)
            if not folder.is_dir():
                self.fail(f"{value!r}: not a folder (nor s3://bucket/prefix, git+file:///repo, "
                          "git+https://...)", param, ctx)
            return folder
        try:
            return check_corpus_uri(value)
        except SourceError as exc:
            self.fail(str(exc), param, ctx)


def corpus_text(corpus: Path | str) -> str:
    """The corpus as the environment carries it: a URI as it is, a folder absolute."""
    return corpus if isinstance(corpus, str) else str(corpus.absolute())
