"""Starting the service: threads pinned, model and partition loaded once, then uvicorn."""

from __future__ import annotations

import faulthandler
import gc
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from rag_pipeline.core.answer.ask import ask, stop_side_threads
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import ModelSpec, TextEmbedder
from rag_pipeline.core.embedding.question import QueryPathMismatchError
from rag_pipeline.core.index.follower import IndexFollower
from rag_pipeline.core.runtime.serve_record import (
    SERVE_RECORD,
    ServeRecord,
    new_secret,
    read_serve_record,
    remove_serve_record,
    write_serve_record,
)
from rag_pipeline.core.storage.warehouse import Warehouse, open_to_every_user
from rag_pipeline.service.auth import AccessState
from rag_pipeline.service.proof import ServeProof
from rag_pipeline.service.protocol import ClientLimits, guarded_protocol
from rag_pipeline.service.query_service import QueryService, ServeSettings

WARM_UP_QUESTION = "warm up"
KEEP_ALIVE_SECONDS = 5
SHUTDOWN_GRACE_SECONDS = 10
"""After SIGTERM or SIGINT, how long requests in flight may finish; then their connections are
closed (a client that stopped reading a download would otherwise keep the process alive)."""
LISTEN_BACKLOG = 2048
"""Connections the kernel holds before they are accepted (uvicorn's default)."""
MAX_CONNECTIONS = 1024
"""Open connections, at most (fewer if the process may open fewer than twice as many files)."""


def client_limits() -> ClientLimits:
    """A request head within 5 s and 16 KiB; at most 64 connections from one address, 1,024
    from all (or half the process's open-file limit, so accepting never fails for want of a
    file descriptor) and 256 requests at once."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = MAX_CONNECTIONS * 2 if soft == resource.RLIM_INFINITY else soft
    return ClientLimits(max_connections=max(1, min(MAX_CONNECTIONS, files // 2)))


def pin_threads() -> None:
    """One BLAS thread for the whole process and one torch thread per request: requests run
    side by side on the cores instead of each spreading over all of them and colliding."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(limits=1, user_api="blas")


def freeze_heap() -> None:
    """Collects, then moves every object alive now (the libraries, the model, the index: about
    480,000 objects) out of the cyclic garbage collector's reach (``gc.freeze``). A full
    collection walks all of them: it took 1.4 s at load average 29 and held the GIL, so every
    request waited for it. Frozen objects are still freed by reference counting (a generation
    swapped out goes); only a cycle among them would stay."""
    gc.collect()
    gc.freeze()


def start_service(warehouse: Warehouse, settings: ServeSettings, load_model: Callable[[], TextEmbedder],
                  poll_seconds: float = 1.0, access: AccessState | None = None) -> QueryService:
    """Loads the served generation (first: a missing index fails fast), then the model from
    ``load_model``, answers one question to warm up, and follows the partition (and, with
    ``access``, the tokens and rules)."""
    follower = IndexFollower(warehouse, settings.chunker, settings.model_key, poll_seconds)
    served = follower.start()
    try:
        embedder = load_model()
        ask(WARM_UP_QUESTION, served.index, embedder)
        service = QueryService(follower, embedder, settings, access)
        service.access.start()
        return service
    except BaseException:
        follower.stop()
        raise


@contextmanager
def running_service(warehouse: Warehouse, settings: ServeSettings,
                    load_model: Callable[[], TextEmbedder],
                    poll_seconds: float = 1.0,
                    access: AccessState | None = None) -> Iterator[QueryService]:
    """:func:`start_service`, with the index follower and the questions' side threads stopped
    on the way out."""
    service = start_service(warehouse, settings, load_model, poll_seconds, access)
    try:
        yield service
    finally:
        service.access.stop()
        service.follower.stop()
        stop_side_threads()


def load_service_model(spec: ModelSpec, workers: int, query_runtime: str | None,
                       echo: Callable[[str], None], query_streams: int = 1,
                       query_threads: int | None = None) -> TextEmbedder:
    """The model, with questions on ``query_runtime``'s fp32 path when it is given, the model
    is not already on OpenVINO and the path reproduces the model's vectors (onnxruntime:
    ``query_threads`` for a question alone; openvino: ``query_streams`` streams asked, at most
    ``workers`` questions at once); otherwise on the model's own backend. The echo says which,
    and when an option has no effect."""
    embedder = load_embedder(spec)
    path = embedder.query_path
    if query_runtime is not None:
        try:
            path = embedder.fast_queries(query_runtime, streams=query_streams, requests=workers,
                                         alone_threads=query_threads)
        except QueryPathMismatchError as exc:
            echo(f"warning: {exc}")
    if query_streams != 1 and not path.backend.startswith("openvino-"):
        echo("note: --query-streams applies only to the OpenVINO question path of a model "
             "on another backend; ignored")
    if query_threads is not None and not path.backend.startswith("onnxruntime-"):
        echo("note: --query-threads applies only to the ONNX Runtime question path; ignored")
    if path.is_models_own:
        echo(f"questions embedded by the model's own backend ({path.backend})")
        return embedder
    how = (f"{path.alone_threads} thread(s) for a question alone, one each side by side"
           if path.backend.startswith("onnxruntime-") else f"{path.streams} stream(s)")
    echo(f"questions embedded by {path.backend}, {how}; min cosine to "
         f"{spec.backend.value} over the probe questions {path.min_cosine:.7f}")
    if path.backend.startswith("openvino-"):
        if path.streams < query_streams:
            echo(f"note: OpenVINO gave {path.streams} of the {query_streams} streams asked (at "
                 "most one per core)")
        if path.streams > workers:
            echo(f"note: --workers {workers} lets only {workers} question(s) run at once; "
                 f"{path.streams - workers} stream(s) stay idle")
    return embedder


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: a free one), taken before the model loads so
    a busy port fails at once instead of after a ready message. It listens from here, so the
    serve record written before uvicorn starts names a port that takes connections (they wait
    in the backlog until uvicorn accepts them).

    Raises:
        OSError: The address cannot be bound; the message names it.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.set_inheritable(True)
    return sock


def access_line(service: QueryService) -> str:
    """What ``serve`` says of its access at start: the rules, the tokens, the proxy, and how
    many documents no rule lets anyone read (counted as ``status`` counts them: the documents
    read, not those that failed)."""
    from rag_pipeline.core.config.access import access_report

    access = service.access
    index = service.follower.current.index
    report = access_report(access.policy, index.documents, index.corpus_ids)
    proxy = (f"; groups from {access.groups_header_name} of {access.trusted_proxy} only"
             if access.trusted_proxy else "")
    proxy += "; sessions over HTTPS only (__Host-rag_session)" if access.behind_https else ""
    return (f"access: {len(access.policy.rules)} rule(s) ({access.policy.digest}), "
            f"{_tokens_in_force(access.store.records())}{proxy}; every path but /health and the "
            f"page's shell (GET /) needs a principal; {len(report.unreadable)} "
            "document(s) readable by nobody")


def report_fatal_signals() -> None:
    """A fatal signal (SIGBUS from a mapped page of a file cut short under the process, SIGSEGV,
    SIGFPE, SIGABRT, SIGILL) writes ``Fatal Python error`` and every thread's Python traceback to
    stderr, the service's log, before the process dies (:mod:`faulthandler`): without it the
    process vanished with no line at all. A stderr with no file descriptor (a test's captured
    stream) gets no handler: there is no log to write to."""
    try:
        faulthandler.enable(file=sys.stderr, all_threads=True)
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is an OSError
        pass


def record_service(data_dir: Path, record: ServeRecord, echo: Callable[[str], None],
                   earlier: ServeRecord | None = None) -> bool:
    """Writes the record ``ask`` finds this service by, saying so when it replaces the record
    of another running serve (``earlier``); on a data folder it cannot write (a read-only
    mount) says so and serves all the same. Whether it was written."""
    try:
        write_serve_record(data_dir, record)
    except OSError as exc:
        echo(f"warning: cannot write {SERVE_RECORD} in {data_dir} ({exc.strerror or exc}): "
             "`ask` on this data folder answers in its own process, not through this service")
        return False
    if earlier is not None and earlier.pid != record.pid:
        echo(f"note: another serve runs on this data folder (pid {earlier.pid}, "
             f"{earlier.url('/')}): `ask` sends its questions to this one until it stops, then "
             "to that one again")
    return True


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def serve_forever(warehouse: Warehouse, spec: ModelSpec, settings: ServeSettings, *, host: str, port: int,
                  poll_seconds: float, access_log: bool, echo: Callable[[str], None],
                  query_runtime: str | None = "onnxruntime", query_streams: int = 1,
                  query_threads: int | None = None, access: AccessState | None = None,
                  allowed: frozenset[str] | None = None) -> None:
    """Serves until stopped; ``allowed``: the host names answered (:mod:`.hosts`; None: any)."""
    import uvicorn

    from rag_pipeline.service.app import PrivateResponses, create_app
    from rag_pipeline.service.hosts import HostCheck, hosts_line

    started = time.perf_counter()
    report_fatal_signals()
    # Outermost, so that it acts once the service's own threads are joined and the socket closed.
    with _requests_past_their_grace_cut_off(echo), closing(listening_socket(host, port)) as sock:
        pin_threads()
        with running_service(
                warehouse, settings,
                lambda: load_service_model(spec, settings.workers, query_runtime, echo,
                                           query_streams, query_threads),
                poll_seconds, access) as service:
            served = service.follower.current
            port = sock.getsockname()[1]
            where = f"[{host}]" if ":" in host else host
            echo(f"serving {settings.chunker}|{settings.model_key} generation {served.generation}: "
                 f"{len(served.index)} chunks, {len(served.index.documents)} documents; ready in "
                 f"{time.perf_counter() - started:.1f} s (index load {served.load_seconds:.2f} s)")
            echo(f"page http://{where}:{port}/   API http://{where}:{port}/docs   (Ctrl-C stops)")
            if service.access.enabled:
                echo(access_line(service))
                if (opened := open_to_every_user(warehouse.data_dir)) is not None:
                    echo(f"warning: {opened}")
            else:
                echo("access: none declared, every request reads every document (declaring "
                     "[access] in the configuration turns it on while serving)")
            echo(hosts_line(allowed))
            secret = new_secret()
            # PrivateResponses again outside the app: Starlette answers a crash's 500 from
            # outside every middleware of the app.
            config = uvicorn.Config(HostCheck(PrivateResponses(ServeProof(create_app(service),
                                                                          secret)), allowed),
                                    host=host, port=port, backlog=LISTEN_BACKLOG,
                                    access_log=access_log,
                                    # The client's address is the connection's, never an
                                    # X-Forwarded-For any caller may write (and so name
                                    # itself the trusted proxy, choosing its groups).
                                    proxy_headers=False,
                                    log_level="info" if access_log else "warning",
                                    # guarded_protocol's limits replace it: it counted
                                    # connections still sending their head as requests.
                                    limit_concurrency=None,
                                    timeout_keep_alive=KEEP_ALIVE_SECONDS,
                                    timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
                                    http=guarded_protocol(client_limits()))
            logging.getLogger("uvicorn.error").addFilter(_ShutdownCancellations())
            freeze_heap()
            # `ask` finds this service through the data folder while it runs (another serve
            # of the folder is found again once this one stops).
            earlier = read_serve_record(warehouse.data_dir)
            record_service(warehouse.data_dir, ServeRecord(
                host, port, os.getpid(), settings.chunker, settings.model_key,
                service.settings.ask.base_url, warehouse.location, secret), echo, earlier)
            # uvicorn re-raises SIGTERM after its graceful shutdown; as SystemExit (not the
            # default handler's silent kill) it lets the record be removed.
            previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
            server = uvicorn.Server(config)
            hung_up: list[int] = []

            def hang_up(signum: int, frame: object) -> None:
                """A closed terminal (SIGHUP, which uvicorn leaves alone) stops the service as
                SIGTERM does: in-flight requests finish, the record is removed."""
                hung_up.append(signum)
                server.should_exit = True

            previous_hang_up = signal.signal(signal.SIGHUP, hang_up)
            try:
                server.run(sockets=[sock])
            finally:
                remove_serve_record(warehouse.data_dir, os.getpid(), earlier)
                signal.signal(signal.SIGTERM, previous)
                signal.signal(signal.SIGHUP, previous_hang_up)
            if hung_up:
                sys.exit(128 + signal.SIGHUP)


@contextmanager
def _requests_past_their_grace_cut_off(echo: Callable[[str], None]) -> Iterator[None]:
    """Ends the process at once when the service stopped (SIGTERM, Ctrl-C) while a request
    still computes in a worker thread (its connection was closed when
    :data:`SHUTDOWN_GRACE_SECONDS` ran out, but a thread cannot be stopped, and the interpreter
    waits for it: a view parsing a large mail kept serve alive 40 s after SIGTERM). A thread
    that ends within a second is waited for."""
    import threading

    try:
        yield
    except (SystemExit, KeyboardInterrupt) as stop:
        deadline = time.monotonic() + 1.0
        running = [thread for thread in threading.enumerate()
                   if thread is not threading.main_thread() and not thread.daemon]
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))
        still = [thread for thread in running if thread.is_alive()]
        if still:
            echo(f"stopped: work still running in {len(still)} thread(s) past the "
                 f"{SHUTDOWN_GRACE_SECONDS} s grace was cut off")
            sys.stdout.flush()
            sys.stderr.flush()
            code = stop.code if isinstance(stop, SystemExit) else 128 + signal.SIGINT
            os._exit(code if isinstance(code, int) else 1)
        raise


class _ShutdownCancellations(logging.Filter):
    """Leaves out uvicorn's traceback of a request it cancelled because the shutdown's grace ran
    out (``CancelledError``: some 70 lines of frames per request); its own line saying how many
    it cancelled stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        import asyncio

        return not (record.exc_info and record.exc_info[0] is asyncio.CancelledError)


def _tokens_in_force(records) -> str:
    """``3 token(s)``, or ``2 token(s) (1 more expired)``: an expired token is refused."""
    expired = sum(record.expired() for record in records)
    return f"{len(records) - expired} token(s)" + (f" ({expired} more expired)" if expired else "")
