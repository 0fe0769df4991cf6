"""``rag-pipeline ask`` and ``rag-pipeline serve``: one question from a terminal (through a
running ``serve`` when there is one), and the HTTP service; both share their question options."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rag_pipeline.cli.edge import (
    FiniteFloatRange,
    Invocation,
    config_source,
    declared_model,
    echo,
    fail,
    load_model,
    read_config,
)
from rag_pipeline.core.answer.gate import DEFAULT_CUT, MAX_SOURCES, gate_cut
from rag_pipeline.core.chunking.strategies import DEFAULT_STRATEGY, ChunkingStrategy
from rag_pipeline.core.retrieval.choices import DEFAULT_ANALYZER, Retriever
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline.core.text.arguments import listed

ENV_TOKEN = "RAG_PIPELINE_TOKEN"
"""The bearer token ``ask`` sends to a running ``serve`` (read here, at the edge, only)."""

GROUPS_OPTION = click.option(
    "--groups", default=None,
    help="Answer in this process as these groups would be answered (a,b): only what [access] "
         "lets them read. Without it, an in-process answer reads everything (whoever reads the "
         "data folder reads every document).")

if TYPE_CHECKING:
    from rag_pipeline.core.answer.answer import Answer
    from rag_pipeline.core.config.schema import ProjectConfig
    from rag_pipeline.core.retrieval.rerank import Reranker


def _ask_serve(invocation: Invocation, question: str, chunker: str, model_key: str,
               base_url: str | None, params: dict[str, str]) -> tuple[Answer | None, str]:
    """The answer of a `serve` running on this data folder over the same tables for this
    chunker, model and base URL, with where it runs; or None, with why none answered: then
    `ask` loads the index and the model itself."""
    from rag_pipeline.core.answer.answer_json import answer_from_json
    from rag_pipeline.core.runtime.serve_record import (
        ServeRefusedError,
        ServeSilentError,
        UnprovenServeError,
        ask_running,
        read_serve_record,
    )

    record = read_serve_record(invocation.data_dir)
    if record is None:
        return None, "a running `serve` on this data folder answers in milliseconds"
    url = record.url("/")
    served = {"chunker": record.chunker, "model": record.model_key,
              "base URL": record.base_url or "none", "tables": record.location}
    asked = {"chunker": chunker, "model": model_key, "base URL": base_url or "none",
             "tables": invocation.tables_at}
    differ = [f"{name} {served[name]}" for name in served if served[name] != asked[name]]
    if differ:
        return None, f"the running serve at {url} answers {', '.join(differ)}"
    token = os.environ.get(ENV_TOKEN) or None
    try:
        data = ask_running(record, {"q": question, **params}, token=token)
    except ServeRefusedError as exc:
        if token is None:
            return None, (f"the running serve at {url} answers only with a token (set "
                          f"${ENV_TOKEN}); answered here from the data folder, every document "
                          "readable")
        fail(f"the running serve at {url} refused ${ENV_TOKEN}: {exc}")
    except UnprovenServeError as exc:
        echo(f"note: the process at {url} (pid {record.pid}) that serve.json names "
             f"did not prove it is this data folder's serve ({exc}): its answer was not used; "
             "answering here", err=True)
        return None, f"the process at {url} did not prove it is this data folder's serve"
    except ServeSilentError as exc:
        echo(f"note: the serve at {url} (pid {record.pid}) that serve.json names took the "
             f"question but sent {exc}: answering here", err=True)
        return None, f"the serve that serve.json names at {url} sent {exc}"
    if data is None:
        return None, f"the serve that serve.json names at {url} did not answer"
    published = _published_id(invocation, chunker, model_key)
    if published is not None and data.get("generation") != published:
        echo(f"note: the serve at {url} (pid {record.pid}) answered from generation "
             f"{data.get('generation')}, not the one published now ({published}): answering "
             "here", err=True)
        return None, (f"the serve at {url} answers from generation {data.get('generation')}, "
                      f"not the one published now ({published})")
    return answer_from_json(data), f"{url} (pid {record.pid})"


def _published_id(invocation: Invocation, chunker: str, model_key: str) -> str | None:
    """The id of the generation published now for ``chunker`` x ``model_key``: read from a
    local folder without the table libraries (an answer a serve gave imports none), from an
    object store through the warehouse."""
    from rag_pipeline.core.storage.generation_pointer import local_published_id
    from rag_pipeline.core.storage.location import local_folder, object_store

    location = invocation.tables_at
    if object_store(location):
        from rag_pipeline.core.index.generations import current_generation

        generation = current_generation(invocation.warehouse, chunker, model_key)
        return generation.id if generation is not None else None
    return local_published_id(local_folder(location), chunker, model_key)


def principal_groups(groups: str | None, config: ProjectConfig) -> frozenset[str] | None:
    """``--groups a,b`` as the asker's groups (None: everything), or a one-line failure; a note
    when ``config`` declares no ``[access]`` (the option then changes nothing)."""
    if groups is None:
        return None
    from rag_pipeline.service.tokens import TokenError, check_groups

    try:
        wanted = frozenset(check_groups(groups))
    except TokenError as exc:
        fail(str(exc))
    policy = config.access
    if policy is None:
        echo(f"note: no [access] in {config_source(config)}: --groups changes nothing", err=True)
    elif policy.groups and not wanted <= set(policy.groups):
        fail(f"--groups: unknown group(s) {listed(sorted(wanted - set(policy.groups)))}; [access] "
             f"groups declares {listed(policy.groups)}")
    return wanted


def _print_answer(answer: Answer, show_prompt: bool, show_timings: bool, rerank_note: str,
                  answered_by: str = "") -> None:
    echo(f"partition: {answer.partition}   cut: {answer.cut}"
          + (f"   {rerank_note}" if rerank_note else ""))
    if not answer.answered:
        echo(answer.reason)
    else:
        echo(f"{'#':>2}  {'document':28s} {'section':34s} {'fragment':22s} distance")
        for c in answer.citations:
            echo(f"{c.index:>2}  {_tail(c.document_id, 28):28s} {c.section[:34]:34s} "
                 f"{c.fragment:22s} {c.cosine_distance:.3f}")
        echo("(ranked by the retriever, then the reranker when on; distance: the passage's "
             "cosine distance to the question)")
        if answer.unheld:
            named = ", ".join(repr(code) for code in answer.unheld)
            about = ("the answer is about the other records it names"
                     if any(c.identifier for c in answer.citations)
                     else "the sources hold others of its form, not it")
            echo(f"note: no passage found holds {named}, which the question names: {about}")
        for c in answer.citations:
            if c.identifier and c.cosine_distance >= answer.cut:
                echo(f"note: [{c.index}] holds {c.identifier!r} as the question names it: kept "
                     f"at distance {c.cosine_distance:.3f}, over the cut")
        caveats: dict[str, list[str]] = {}
        for c in answer.citations:  # a workbook's passages may carry different ones
            for phrase in c.left_out:
                if phrase not in caveats.setdefault(c.document_id, []):
                    caveats[c.document_id].append(phrase)
        for document_id, left in caveats.items():
            echo(f"note: {document_id}: {'; '.join(left)}: the answer cannot hold it")
        for c in answer.citations:
            more = f"  (also at {', '.join(c.locations[1:])})" if len(c.locations) > 1 else ""
            columns = f"(table columns: {c.table_header})\n" if c.table_header else ""
            echo(f"\n[{c.index}] {c.url}{more}\n{columns}{c.quote}")
        if answer.rendered_answer:
            echo("\n" + answer.rendered_answer)
        elif answer.quoted:
            echo("\nanswer, quoted from the sources:")
            for sentence in answer.quoted:
                where = _own_place(sentence.fragment,
                                   answer.citations[sentence.citation - 1].fragment)
                echo(f"  {' '.join(sentence.text.split())} [{sentence.citation}]{where}")
                if sentence.columns:
                    echo(f"    (table columns: {sentence.columns})")
        if show_prompt and answer.prompt:
            echo("\n--- prompt ---\n" + answer.prompt)
    if show_timings:
        echo("\ntimings (ms): " + ", ".join(f"{k} {v * 1000:.1f}"
                                                 for k, v in answer.timings.items()))
        if answered_by:
            echo(answered_by)


def _own_place(fragment: str, source: str) -> str:
    """`` #page=3`` after a quoted sentence when its place is not its source's (a later page,
    a row's cells, a table row); nothing for a bare character range (it says nothing the quote
    does not) or a place its source's fragment already names."""
    if not fragment or fragment == source or source.startswith(fragment + "&"):
        return ""
    if re.fullmatch(r"#char=\d+,\d+", fragment):
        return ""
    return f" {fragment}"


def _tail(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters from its start, ``...`` in front: the end of a
    path (a file's name, an archive member's) tells documents apart."""
    return text if len(text) <= width else "..." + text[len(text) - width + 3:]


def _load_reranker(folder: Path) -> Reranker:
    """The cross-encoder in ``folder``, or a one-line failure naming the folder and the cause."""
    from rag_pipeline.core.retrieval.rerank import Reranker, RerankSettings

    try:
        return Reranker(RerankSettings(folder))
    except (OSError, ValueError) as exc:
        fail(f"--rerank {str(folder)!r} could not be loaded: {type(exc).__name__}: {exc}")


QUESTION_OPTIONS = (
    click.option("--model", "model_key", default=None,
                 help="Model partition key (default: the default model of rag_pipeline.toml)."),
    click.option("--retriever", type=click.Choice([r.value for r in Retriever]),
                 default=Retriever.HYBRID.value, show_default=True),
    click.option("--analyzer", type=click.Choice([a.value for a in Analyzer]),
                 default=DEFAULT_ANALYZER.value, show_default=True, help="BM25 analyzer."),
    click.option("--k", "max_sources", type=click.IntRange(1, 20), default=MAX_SOURCES,
                 show_default=True, help="At most this many sources are kept."),
    click.option("--cut", "--threshold", "cut", type=float, default=None,
                 help="Cosine-distance cut in [0, 2]: only chunks under it are kept (--threshold "
                      "is the same; default: the model's `cut` in rag_pipeline.toml, else "
                      f"{DEFAULT_CUT})."),
    click.option("--base-url", default=None,
                 help="Cite URLs under this http(s) or file URL instead of file URIs."),
)
"""The options `ask` and `serve` share: same names, defaults and help."""


def question_options(command):
    """Adds :data:`QUESTION_OPTIONS` to a command, in that order."""
    for option in reversed(QUESTION_OPTIONS):
        command = option(command)
    return command


@click.command()
@click.argument("question")
@click.option("--chunker", default=DEFAULT_STRATEGY.value, show_default=True,
              help="Chunking partition: " + ", ".join(s.value for s in ChunkingStrategy) + ".")
@question_options
@click.option("--rerank", "rerank_model", default=None,
              help="Cross-encoder folder to rerank the hybrid top 25 (off by default).")
@click.option("--no-collapse", is_flag=True, help="Keep identical passages as separate hits.")
@click.option("--generate-url", default=None,
              help="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8080/v1); off by default.")
@click.option("--generate-model", default=None,
              help="The model name the --generate-url endpoint serves (required with it).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--prompt", "show_prompt", is_flag=True, help="Print the prompt too.")
@click.option("--timings", "show_timings", is_flag=True, help="Print the time per stage.")
@GROUPS_OPTION
@click.pass_obj
def ask(invocation: Invocation, question: str, chunker: str, model_key: str | None, retriever: str,
        analyzer: str, max_sources: int, cut: float, rerank_model: str | None,
        no_collapse: bool,
        base_url: str | None, generate_url: str | None, generate_model: str | None, as_json: bool,
        show_prompt: bool, show_timings: bool, groups: str | None) -> None:
    """Answer QUESTION from the index with citations, or refuse (through a running `serve`,
    which is sent $RAG_PIPELINE_TOKEN, unless --groups or an in-process option is given).

    Exit status: 0 answered, 1 refused (NO ANSWER), 2 an error."""
    import json

    from rag_pipeline.core.answer.answer_json import answer_json
    from rag_pipeline.core.answer.question import InvalidQuestionError, check_question
    from rag_pipeline.core.config.validation import (
        InvalidArgumentError,
        check_base_url,
        check_chunker,
        check_endpoint_url,
        check_model_folder,
        check_threshold,
    )
    from rag_pipeline.core.embedding.models import ModelMismatchError
    try:
        question = check_question(question)
    except InvalidQuestionError as exc:
        fail(str(exc))
    if (generate_url is None) != (generate_model is None):
        fail("--generate-url and --generate-model go together: give the endpoint and the model "
              "name it serves, or neither")
    try:
        check_chunker(chunker)
        if cut is not None:
            check_threshold(cut, "--cut/--threshold")
        if base_url is not None:
            check_base_url(base_url, "--base-url")
        if generate_url is not None:
            check_endpoint_url(generate_url, "--generate-url")
        if rerank_model is not None:
            check_model_folder(Path(rerank_model), "--rerank")
    except InvalidArgumentError as exc:
        fail(str(exc))
    config = read_config()
    spec = declared_model(model_key, config)
    the_cut = gate_cut(spec, cut)
    asker = principal_groups(groups, config)
    here_only = [name for name, given in (("--rerank", rerank_model), ("--generate-url", generate_url),
                                          ("--no-collapse", no_collapse),
                                          ("--groups", groups is not None)) if given]
    if here_only:
        why_here = f"{', '.join(here_only)}: answered here, never by a `serve`"
    else:
        served, said = _ask_serve(invocation, question, chunker, spec.key, base_url,
                                  {"retriever": retriever, "analyzer": analyzer,
                                   "k": str(max_sources), "cut": repr(the_cut)})
        if served is not None:
            if as_json:
                echo(json.dumps(answer_json(served), ensure_ascii=False, indent=2))
            else:
                _print_answer(served, show_prompt, show_timings, "",
                              f"answered by: the running serve at {said}")
            _exit_if_refused(served)
            return
        why_here = said
    # Only now the modules that load an index and a model (a served answer needs none of them).
    from rag_pipeline.core.answer.ask import AskSettings
    from rag_pipeline.core.answer.ask import ask as run_ask
    from rag_pipeline.core.answer.generation import GenerationError, GeneratorSettings
    from rag_pipeline.core.answer.question import EmptyQuestionError
    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.index.access import labelled
    from rag_pipeline.core.index.store import UnknownPartitionError, load_partition
    from rag_pipeline.core.retrieval.retriever import RetrievalSettings
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError

    access = config.access
    started = time.perf_counter()
    try:
        warehouse = invocation.warehouse
        index = labelled(load_partition(warehouse, chunker, spec.key), access)
        embedder = load_model(spec, invocation.data_dir)
        reranker = _load_reranker(Path(rerank_model)) if rerank_model else None
        settings = AskSettings(
            retrieval=RetrievalSettings(retriever=Retriever(retriever),
                                        analyzer=Analyzer(analyzer),
                                        collapse_duplicates=not no_collapse),
            cut=the_cut,
            max_sources=max_sources,
            base_url=base_url,
            generator=GeneratorSettings(base_url=generate_url, model=generate_model)
            if generate_url else None)
        loaded = time.perf_counter() - started
        answer = run_ask(question, index, embedder, settings, reranker, groups=asker)
    except (IndexNotBuiltError, UnknownPartitionError, ModelMismatchError, EmptyQuestionError,
            GenerationError, FileNotFoundError, ModelNotExportedError) as exc:
        fail(str(exc))
    if asker is None and access is not None:
        echo(f"note: answered in this process ({why_here}), which reads every document: "
             "[access] limits what `serve` answers a token, and --groups what this command "
             "answers", err=True)
    if as_json:
        echo(json.dumps(answer_json(answer), ensure_ascii=False, indent=2))
    else:
        _print_answer(answer, show_prompt, show_timings, "rerank: on" if reranker else "",
                      f"answered by: this process (index and model loaded in {loaded:.1f} s; "
                      f"{why_here})")
    _exit_if_refused(answer)


REFUSED_EXIT = 1
"""``ask``'s exit status for NO ANSWER (0: answered; 2: an error), so a script tells them apart."""


def _exit_if_refused(answer: Answer) -> None:
    if not answer.answered:
        sys.exit(REFUSED_EXIT)



@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--chunker", type=click.Choice([s.value for s in ChunkingStrategy]),
              default=DEFAULT_STRATEGY.value, show_default=True, help="Chunking partition.")
@question_options
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Questions answered at once (default: the number of CPUs).")
@click.option("--poll", "poll_seconds", type=FiniteFloatRange(0.05, 3600), default=1.0,
              show_default=True, help="Seconds between checks for a new index generation.")
@click.option("--access-log", is_flag=True, help="Log every request.")
@click.option("--open", "open_to_all", is_flag=True,
              help="Without [access], listen on a non-loopback --host anyway: everyone who can "
                   "reach the port reads every document.")
@click.option("--trusted-proxy", default=None,
              help="With [access]: the address of a single sign-on proxy whose groups header is "
                   "believed (from it only; ignored and logged from any other address).")
@click.option("--groups-header", default="X-Forwarded-Groups", show_default=True,
              help="The header the --trusted-proxy sends the user's groups in (a,b).")
@click.option("--user-header", default="X-Forwarded-User", show_default=True,
              help="The header the --trusted-proxy names the user in: each user then has a "
                   "feedback rate of their own (without it, all its users share one).")
@click.option("--behind-https", is_flag=True,
              help="With [access]: the service is reached over HTTPS only (through a TLS proxy): "
                   "every session cookie is __Host-rag_session and a plain rag_session cookie "
                   "is never accepted, so a neighbouring host cannot plant a session of its own.")
@click.option("--allowed-host", "allowed_host_names", multiple=True, metavar="NAME",
              help="A host name the service answers to besides its own (repeatable): the name a "
                   "proxy forwards. On a loopback --host only localhost, 127.0.0.1 and ::1 are "
                   "answered without it; elsewhere any name is, unless this names them.")
@click.option("--query-backend", type=click.Choice(["onnxruntime", "openvino", "model"]),
              default="onnxruntime", show_default=True,
              help="onnxruntime or openvino: questions run through the model's weights converted "
                   "to that runtime at fp32 (checked at start to give the model's own vectors); "
                   "model: the model's own backend.")
@click.option("--query-streams", type=click.IntRange(1, 64), default=1, show_default=True,
              help="OpenVINO question streams: 1 gives each question every core (lowest latency "
                   "for one client); more answer that many side by side (more throughput under "
                   "load).")
@click.option("--query-threads", type=click.IntRange(1, 64), default=None,
              help="ONNX Runtime: threads for a question embedded while no other is (default: "
                   "every core); questions side by side always get one each. 1 puts every "
                   "question on one core: slower for one client, as fast or a little faster "
                   "under load.")
@click.pass_obj
def serve(invocation: Invocation, host: str, port: int, chunker: str, model_key: str | None, retriever: str,
          analyzer: str, max_sources: int, cut: float | None, base_url: str | None,
          workers: int | None, poll_seconds: float, access_log: bool, open_to_all: bool,
          trusted_proxy: str | None, groups_header: str, user_header: str, behind_https: bool,
          allowed_host_names: tuple[str, ...], query_backend: str, query_streams: int,
          query_threads: int | None) -> None:
    """Answer questions over HTTP: POST /ask, GET /ask?q=, /health, /status, and a page at /."""
    from rag_pipeline.core.answer.ask import AskSettings
    from rag_pipeline.core.config.validation import InvalidArgumentError, check_base_url, check_threshold
    from rag_pipeline.core.embedding.models import ModelMismatchError
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.retrieval.retriever import RetrievalSettings
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError
    from rag_pipeline.service.hosts import allowed_hosts
    from rag_pipeline.service.query_service import ServeSettings
    from rag_pipeline.service.run import serve_forever

    try:
        if cut is not None:
            check_threshold(cut, "--cut/--threshold")
        if base_url is not None:
            check_base_url(base_url, "--base-url")
    except InvalidArgumentError as exc:
        fail(str(exc))
    config = read_config()
    spec = declared_model(model_key, config)
    access = serve_access(invocation, host, open_to_all, trusted_proxy, groups_header, poll_seconds,
                          user_header, behind_https)
    try:
        allowed = allowed_hosts(host, allowed_host_names)
    except ValueError as exc:
        fail(str(exc))
    try:
        settings = ServeSettings(
            chunker=chunker, model_key=spec.key,
            ask=AskSettings(retrieval=RetrievalSettings(retriever=Retriever(retriever),
                                                        analyzer=Analyzer(analyzer)),
                            cut=gate_cut(spec, cut), max_sources=max_sources, base_url=base_url),
            workers=workers or os.cpu_count() or 1, max_document_bytes=config.max_document_bytes)
        serve_forever(invocation.warehouse, spec, settings, host=host, port=port, poll_seconds=poll_seconds,
                      access_log=access_log, echo=echo,
                      query_runtime=None if query_backend == "model" else query_backend,
                      query_streams=query_streams, query_threads=query_threads, access=access,
                      allowed=allowed)
    except (IndexNotBuiltError, UnknownPartitionError, ModelMismatchError, FileNotFoundError,
            OSError) as exc:
        fail(str(exc))



def serve_access(invocation: Invocation, host: str, open_to_all: bool, trusted_proxy: str | None,
                 groups_header: str, poll_seconds: float, user_header: str = "X-Forwarded-User",
                 behind_https: bool = False):
    """The service's access from ``[access]`` and the options, or a one-line failure: without
    ``[access]`` a non-loopback ``--host`` needs ``--open``, and a proxy needs ``[access]``."""
    import ipaddress

    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.service.auth import AccessState
    from rag_pipeline.service.hosts import is_loopback
    from rag_pipeline.service.tokens import TokenError, TokenStore

    config = read_config()
    policy = config.access
    if policy is None:
        if behind_https:
            fail(f"--behind-https sets the session cookie of [access], and there is none in "
                 f"{config_source(config)}")
        if trusted_proxy is not None:
            fail(f"--trusted-proxy needs an [access] table and there is none in "
                 f"{config_source(config)}: without one every request reads everything and no "
                 "groups are asked")
        if not is_loopback(host) and not open_to_all:
            fail(f"--host {host} is reachable from other machines and there is no [access] in "
                 f"{config_source(config)}, so anyone who reaches the port would read every "
                 "document: declare [access] (docs/operations/security.md) or pass --open to "
                 "serve it anyway")
    elif trusted_proxy is not None:
        try:
            trusted_proxy = str(ipaddress.ip_address(trusted_proxy))
        except ValueError:
            fail(f"--trusted-proxy must be an IP address (the proxy's, as this service sees it), "
                 f"got {trusted_proxy!r}")
    for option, header in (("--groups-header", groups_header), ("--user-header", user_header)):
        if not header or any(c in header for c in " :\r\n"):
            fail(f"{option} must be a header name, got {header!r}")
    config_file = invocation.config_path
    try:
        access = AccessState(policy, TokenStore(invocation.data_dir),
                             reload_policy=lambda: load_config(config_file).access,
                             trusted_proxy=trusted_proxy, groups_header=groups_header,
                             user_header=user_header, poll_seconds=poll_seconds,
                             behind_https=behind_https)
    except (TokenError, OSError) as exc:  # with [access]: no token could be checked
        fail(str(exc))
    if access.unread_tokens is not None:
        echo(f"warning: {access.unread_tokens}", err=True)
    return access
