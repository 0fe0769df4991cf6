"""The HTTP face of the query service (FastAPI on uvicorn).

``POST /ask`` and ``GET /ask?q=`` answer with the JSON of ``rag-pipeline ask --json`` plus the
generation that answered; ``GET /health``, ``GET /status``, ``GET /openapi.json``; ``GET /``
serves the page for people, ``GET /docs`` a plain page of the API drawn from the OpenAPI schema
(no script, nothing loaded from elsewhere: it works offline and no third party sees the user),
and ``GET /documents/{id}`` shows a cited document as its format reads, the quoted place marked
(any document id, a newline in it included; :mod:`rag_pipeline.service.page_routes` holds it,
the page images, the originals, ``/status/documents`` and ``POST /feedback``). Every error is a
4xx (or, for a bug, a 500) with a one-line JSON body ``{"error": "..."}``.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from importlib.resources import files
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_pipeline.core.answer.question import MAX_QUESTION_CHARS
from rag_pipeline.core.evaluation.report import report_path
from rag_pipeline.core.retrieval.retriever import Retriever
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline.service.auth import Principal, install_access, message_page, navigated, principal
from rag_pipeline.service.page_routes import page_router, repeated_query_parameter
from rag_pipeline.service.private_headers import PRIVATE_HEADERS
from rag_pipeline.service.query_service import (
    MAX_K,
    AskRequest,
    ClientGoneError,
    QueryService,
    RequestError,
)
from rag_pipeline.service.schemas import AnswerBody, ErrorBody

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
"""A question is at most 2,000 characters: a larger body is refused before it is read whole."""


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status)


CLIENT_CLOSED_REQUEST = 499
"""The status logged for a question whose client went away before its turn (nginx's code: no
client reads it)."""


def _client_gone(request: Request) -> Callable[[], bool]:
    """Whether ``request``'s client has gone away, asked from the worker thread answering it (the
    event loop reads the connection)."""
    import anyio.from_thread

    def gone() -> bool:
        try:
            return anyio.from_thread.run(request.is_disconnected)
        except RuntimeError:  # no event loop to ask (called outside a request's worker)
            return False

    return gone


BODY_EXAMPLES = {"/session": '{"token": "..."}'}
"""The JSON body a path takes, named when a request's body is no JSON object (else ``/ask``'s)."""


ANSWERED = {200: {"model": AnswerBody, "description": "The answer, or a refusal (`answered` "
                                                     "false): the object `ask --json` prints."}}


def with_error_bodies(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each route's errors as the service sends them, ``ErrorBody`` under
    ``4XX`` and ``5XX``, in place of the validation error body FastAPI declares and never sent
    here."""
    error_body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            responses["4XX"] = {"description": "An error, on one line (401: no valid token; 404: "
                                               "nothing there, or nothing this asker may read; "
                                               "413, 415, 422: the request; 429: too many)",
                                "content": error_body}
            responses["5XX"] = {"description": "An error, on one line (500: a fault of the service, "
                                               "which logs it; 503: too many connections or "
                                               "requests at once, or an original that cannot be "
                                               "read now: try again)",
                                "content": error_body}
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for fastapi_own in ("HTTPValidationError", "ValidationError"):
        components.pop(fastapi_own, None)
    components["ErrorBody"] = ErrorBody.model_json_schema()
    return schema


def _validation_message(errors: list[dict[str, Any]], path: str = "/ask") -> str:
    """The first problem as ``field: message`` (pydantic's "Value error, " prefix dropped), a
    body that is no JSON object told the one ``path`` takes."""
    first = errors[0]
    if first.get("type") == "json_invalid":
        return f"the body is not JSON: {first.get('ctx', {}).get('error', 'decode error')}"
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query"))
    if first.get("type") == "int_parsing":
        return f"{where}: must be a whole number, not {str(first.get('input'))[:40]!r}"
    if first.get("type") in ("model_attributes_type", "dict_type") and not where:
        return ("the body must be a JSON object, sent as Content-Type: application/json "
                f'({BODY_EXAMPLES.get(path, """{"question": "..."}""")})')
    message = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
    return f"{where}: {message}" if where and not message.startswith(f"{where} ") else message


class BodyTooLarge(BaseException):  # noqa: N818
    """Raised while a streamed body is read past the limit. A BaseException on purpose: FastAPI
    turns any Exception raised while it parses a body into a 400, and this must reach
    :class:`BodyLimit` to become the 413."""


class BodyLimit:
    """Refuses request bodies over ``limit`` bytes with a 413, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _error(413, f"request body over {self.limit} bytes")(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await _error(413, f"request body over {self.limit} bytes")(scope, receive, send)


class AnyPathConvertor(Convertor[str]):
    """Starlette's ``path`` convertor matches ``.*``, which stops at a newline: a document whose
    name holds one was cited but its page was a 404. This one matches every character."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anypath", AnyPathConvertor())


def api_docs_page(schema: dict[str, Any]) -> str:
    """The API as one self-contained HTML page: every route with its methods, summary and
    parameters, and a link to the schema itself. Every text is escaped."""
    rows = []
    for path, methods in schema.get("paths", {}).items():
        for method, operation in methods.items():
            parameters = ", ".join(
                f"{p['name']} ({p.get('in', '')}{', required' if p.get('required') else ''})"
                for p in operation.get("parameters", []))
            body = "JSON body" if "requestBody" in operation else ""
            rows.append(f"<tr><td><code>{html.escape(method.upper())}</code></td>"
                        f"<td><code>{html.escape(path)}</code></td>"
                        f"<td>{html.escape(operation.get('summary', ''))}</td>"
                        f"<td>{html.escape(', '.join(x for x in (parameters, body) if x))}</td></tr>")
    info = schema.get("info", {})
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(info.get('title', 'API'))}</title></head><body>"
            f"<h1>{html.escape(info.get('title', 'API'))}</h1>"
            f"<p>{html.escape(info.get('summary', ''))}</p>"
            "<p>Machine-readable: <a href=\"/openapi.json\">/openapi.json</a></p>"
            "<table><thead><tr><th>method</th><th>path</th><th>what</th><th>parameters</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>")


def _page(name: str) -> str:
    return files("rag_pipeline.service").joinpath(name).read_text(encoding="utf-8")


def document_view(title: str, document_id: str, text: str, start: int, end: int) -> str:
    """The document's canonical text, escaped, with ``text[start:end]`` marked as ``#quote``
    (the view of a format without a view of its own)."""
    from rag_pipeline.core.index.store import DocumentInfo
    from rag_pipeline.service.views import ViewRequest, render_document

    return render_document(ViewRequest(DocumentInfo(document_id, title, "", "text", ()), text, start, end),
                           None)


Asker = Annotated[Principal, Depends(principal)]
"""Who asks: every data route takes it (:mod:`rag_pipeline.service.auth`)."""
VIEW_PATHS = ("/documents/", "/page-images/", "/originals/")
"""The routes a browser opens itself from a citation's link."""


class PrivateResponses:
    """ASGI middleware: every response carries :data:`~rag_pipeline.service.private_headers.PRIVATE_HEADERS`
    (unless it says otherwise); added last, so outermost, around the 401 of the access check
    and the 413 of the body limit too."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_private(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {key.lower() for key, _ in headers}
                headers += [(key, value) for key, value in PRIVATE_HEADERS if key not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_private)


def create_app(service: QueryService) -> FastAPI:
    """The ASGI application over a started :class:`QueryService`."""
    app = FastAPI(
        title="rag-pipeline query service",
        summary="Cited answers from a versioned hybrid index, or an honest refusal.",
        version="1",
        # FastAPI's /docs and /redoc load their scripts from a public CDN: blank offline, and a
        # third party sees every user. /docs is served from here instead.
        docs_url=None, redoc_url=None,
    )
    page = _page("page.html")
    fastapi_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = with_error_bodies(fastapi_openapi())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        service.count_error()
        message = _validation_message(list(exc.errors()), request.url.path)
        if request.url.path.startswith(VIEW_PATHS) and navigated(request.scope, request.method):
            # A document link a browser opened itself ("?page=" cut short): the page of
            # every other view error, with the way back, never a line of JSON.
            return message_page(422, "This view cannot be shown", message,
                                '<a href="/">Ask another question</a>')
        return _error(422, message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail).lower())

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error answering %s %s", request.method, request.url.path)
        return _error(500, f"internal error: {type(exc).__name__}")

    def _answer(payload: dict[str, Any], who: Principal, http_request: Request) -> Response:
        try:
            request = AskRequest.model_validate(payload)
        except ValidationError as exc:
            service.count_error()
            return _error(422, _validation_message(list(exc.errors())))
        return _answered(request, who, http_request)

    def _answered(request: AskRequest, who: Principal, http_request: Request) -> Response:
        try:
            return JSONResponse(service.answer(request, who.groups, who.name,
                                               gone=_client_gone(http_request)))
        except RequestError as exc:
            service.count_error()
            return _error(422, str(exc))
        except ClientGoneError:
            return Response(status_code=CLIENT_CLOSED_REQUEST)

    @app.post("/ask", summary="Answer a question with citations, or refuse", responses=ANSWERED)
    def ask_post(request: AskRequest, who: Asker, http_request: Request) -> Response:
        return _answered(request, who, http_request)

    @app.get("/ask", summary="Answer a question given in the query string", responses=ANSWERED)
    def ask_get(
        http_request: Request, who: Asker,
        q: Annotated[str, Query(description=f"The question (1 to {MAX_QUESTION_CHARS} characters).")],
        chunker: str | None = None, model: str | None = None, retriever: Retriever | None = None,
        analyzer: Analyzer | None = None, k: Annotated[int | None, Query(ge=1, le=MAX_K)] = None,
        cut: float | None = None,
    ) -> Response:
        payload = {"question": q, "chunker": chunker, "model": model, "retriever": retriever,
                   "analyzer": analyzer, "k": k, "cut": cut}
        unknown = sorted(set(http_request.query_params) - {"q", *payload})
        if unknown:  # as POST refuses unknown fields
            service.count_error()
            return _error(422, f"{unknown[0]}: unknown query parameter (known: q, "
                               "chunker, model, retriever, analyzer, k, cut)")
        if (repeated := repeated_query_parameter(http_request)) is not None:
            service.count_error()
            return _error(422, repeated)
        return _answer({key: value for key, value in payload.items() if value is not None}, who,
                       http_request)

    @app.get("/health", summary="Liveness: the model and one generation are loaded")
    async def health() -> dict[str, Any]:  # on the event loop: no thread to wait for
        return service.health()

    # HEAD where a monitor or a proxy's health check asks (FastAPI answers a GET route's HEAD
    # 405); left out of the API's listing, which names each path once.
    app.add_api_route("/health", health, methods=["HEAD"], include_in_schema=False)

    @app.get("/status", summary="The served generation, model, counts and age")
    def status(who: Asker) -> dict[str, Any]:
        return service.status(who.groups, who.via, who.name)

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def api_docs() -> HTMLResponse:
        return HTMLResponse(api_docs_page(app.openapi()))

    @app.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse,
                   include_in_schema=False)
    def index_page() -> HTMLResponse:
        return HTMLResponse(page)

    app.include_router(page_router(service))

    @app.get("/reports/{model_key}", response_class=HTMLResponse,
             summary="The evaluation report of a model (the Dagster UI links here)")
    def report(model_key: str, who: Asker) -> HTMLResponse:
        try:
            path = report_path(service.follower.data_dir, model_key)
        except ValueError as exc:
            return _error(404, str(exc))
        index = service.served_index()
        # A report quotes gold questions and documents of the whole corpus: only a principal who
        # reads every document sees it; anyone else gets the answer a missing report gets.
        if not path.is_file() or (index.access is not None and who.groups is not None and not all(
                index.access.may_read(d, who.groups) for d in index.access.documents)):
            return _error(404, f"no evaluation report for {model_key}: `rag-pipeline index` "
                               "writes one when the corpus has a gold set (RAG_PIPELINE_EVAL_DIR)")
        return HTMLResponse(path.read_text(encoding="utf-8"))

    install_access(app, service.access)
    app.add_middleware(BodyLimit)
    app.add_middleware(PrivateResponses)
    return app
