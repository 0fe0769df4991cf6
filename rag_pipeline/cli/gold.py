"""``rag-pipeline gold``: gold sets for a user's own corpus (``gold draft`` proposes the needles)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rag_pipeline.cli.edge import Invocation, echo, fail

if TYPE_CHECKING:
    from rag_pipeline.core.ingest.extracted import Section


@click.group()
def gold() -> None:
    """Gold sets for your own corpus: `gold draft` proposes the needles."""


@gold.command()
@click.option("--corpus", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Folder of documents (default: the indexed corpus, as the index's "
                                 "documents table holds it).")
@click.option("--n", "count", type=click.IntRange(1, 10_000), default=40, show_default=True,
              help="How many candidate needles.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the draft here (default: stdout).")
@click.option("--from-feedback", "from_feedback", is_flag=True,
              help="Propose one line per question the page's users judged not helpful (the "
                   "feedback table), its needle and ticket left for you to write.")
@click.pass_obj
def draft(invocation: Invocation, corpus: Path | None, count: int, output: Path | None,
          from_feedback: bool) -> None:
    """Propose candidate needles: sentences found exactly once in the corpus, outside headings,
    as a gold JSONL whose `question` and `ticket` you write (eval refuses it until you do).
    With --from-feedback: the questions whose answers were judged not helpful."""
    from rag_pipeline.core.evaluation.gold import draft_jsonl, draft_needles

    if from_feedback:
        _draft_from_feedback(invocation, output)
        return
    texts, sections, name = corpus_texts(invocation, corpus)
    needles = draft_needles(texts, count, sections=sections)
    if not needles:
        fail(f"no sentence of 8 to 40 words occurs exactly once in the {len(texts)} documents")
    text = draft_jsonl(name, needles)
    if output is None:
        click.echo(text, nl=False)
        return
    if output.exists():
        fail(f"{output} exists: a draft never overwrites a gold set; choose another --output")
    output.write_text(text, encoding="utf-8")
    echo(f"wrote {len(needles)} candidate needles from {len({n.document for n in needles})} of "
          f"{len(texts)} documents to {output}: write each line's question and ticket, delete "
          f"the lines you do not want, then `{invocation.command('eval', '--gold', str(output))}`",
          err=True)


def _draft_from_feedback(invocation: Invocation, output: Path | None) -> None:
    from rag_pipeline.core.evaluation.feedback import feedback_gold_lines, feedback_jsonl, read_feedback

    rows = read_feedback(invocation.warehouse)
    lines = feedback_gold_lines(rows)
    if not lines:
        fail(f"no answer was judged not helpful ({len(rows)} feedback rows): nothing to propose")
    if output is None:
        click.echo(feedback_jsonl(rows), nl=False)
        return
    if output.exists():
        fail(f"{output} exists: a draft never overwrites a gold set; choose another --output")
    output.write_text(feedback_jsonl(rows), encoding="utf-8")
    questions = "1 question" if len(lines) == 1 else f"{len(lines)} questions"
    echo(f"wrote {questions} judged not helpful to {output}: write each line's needle "
         f"(the sentence that answers it) and ticket, then "
         f"`{invocation.command('eval', '--gold', str(output))}`", err=True)


def corpus_texts(invocation: Invocation, corpus: Path | None,
                 ) -> tuple[dict[str, str], dict[str, list[Section]], str]:
    """The canonical text and sections of every ok document that is searched (of the folder,
    else of the built index; not an archive's member list, which no chunk holds), and the
    corpus's name."""
    from rag_pipeline.core.ingest.extracted import Section
    from rag_pipeline.core.ingest.formats import chunked_format

    if corpus is not None:
        from rag_pipeline.core.ingest import discover, extract_document

        records = [r for r in (extract_document(path, corpus) for path in discover(corpus))
                   if r.ok and chunked_format(r.format)]
        return ({r.document_id: r.canonical_text for r in records},
                {r.document_id: list(r.sections) for r in records}, corpus.resolve().name)
    from rag_pipeline.core.ingest import DocumentStatus
    from rag_pipeline.core.storage.table_names import DOCUMENTS
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError

    try:
        rows = invocation.warehouse.read(
            DOCUMENTS, columns=["document_id", "canonical_text", "status", "path", "format",
                                "sections"]).to_pylist()
    except IndexNotBuiltError as exc:
        fail(f"{exc} (or pass --corpus DIR)")
    ok = [r for r in rows if r["status"] == DocumentStatus.OK]
    name = Path(os.path.commonpath([str(Path(r["path"]).parent) for r in ok])).name if ok else ""
    searched = [r for r in ok if chunked_format(r["format"])]
    return ({r["document_id"]: r["canonical_text"] for r in searched},
            {r["document_id"]: [Section(**s) for s in r["sections"] or ()] for r in searched},
            name or "corpus")

