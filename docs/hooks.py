"""MkDocs hooks: the reference pages written from the code's own declarations.

A page that holds one of the markers below gets it replaced at build time:

- ``<!-- generated: configuration -->``: every key of ``rag_pipeline.toml``, from
  :data:`rag_pipeline.core.config.reference.SETTINGS`;
- ``<!-- generated: http-api -->``: every route of ``rag-pipeline serve``, from the service's
  OpenAPI schema (the same one it serves at ``/openapi.json``).

The command-line reference is drawn by the ``mkdocs-click`` extension from the click commands.
"""

from __future__ import annotations

from typing import Any

CONFIGURATION = "<!-- generated: configuration -->"
HTTP_API = "<!-- generated: http-api -->"


def _configuration() -> str:
    from rag_pipeline.core.config.reference import markdown_reference

    return markdown_reference()


def _schema_type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_schema_type(s) for s in schema["anyOf"])
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array" and "items" in schema:
        return f"list of {_schema_type(schema['items'])}"
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_schema_type(schema['additionalProperties'])}"
    if "properties" in schema and "title" in schema:  # a body declared in place (a model's)
        return schema["title"]
    return str(schema.get("type", "any"))


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _http_api() -> str:
    from types import SimpleNamespace

    from rag_pipeline.service.app import create_app
    from rag_pipeline.service.auth import AccessState

    # The routes only: no index is loaded, and no request is ever answered.
    service = SimpleNamespace(access=AccessState(None), on_answer=[],
                              follower=SimpleNamespace(warehouse=None))
    schema = create_app(service).openapi()  # type: ignore[arg-type]
    lines = ["| request | what it does | parameters | answers |", "|---|---|---|---|"]
    models = dict(schema.get("components", {}).get("schemas", {}))
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            params = [f"`{p['name']}` ({_schema_type(p.get('schema', {}))}"
                      + (", required" if p.get("required") else "") + ")"
                      for p in operation.get("parameters", [])]
            if "requestBody" in operation:
                body = operation["requestBody"]["content"].get("application/json", {})
                params.append(f"JSON body: `{_schema_type(body.get('schema', {}))}`")
                if "properties" in body.get("schema", {}) and "title" in body["schema"]:
                    models.setdefault(body["schema"]["title"], body["schema"])
            answered = operation.get("responses", {}).get("200", {}).get("content", {})
            returns = answered.get("application/json", {}).get("schema")
            shown = (f"`{_schema_type(returns)}`" if returns and "$ref" in returns
                     else "HTML" if "text/html" in answered else "JSON" if returns is not None
                     else "-")
            lines.append(f"| `{method.upper()} {path}` | {_cell(operation.get('summary', ''))} | "
                         f"{_cell(', '.join(params)) or '-'} | {shown} |")
    bodies = []
    for name, model in models.items():
        bodies += ["", f"### `{name}`", "", _cell(model.get("description", "")).strip(), ""]
        if "enum" in model:
            bodies.append("One of " + ", ".join(f"`{value}`" for value in model["enum"]) + ".")
            continue
        if name.endswith("Body"):  # what the service answers: every field is there
            bodies += ["| field | type | what it is |", "|---|---|---|"]
            for field, spec in model.get("properties", {}).items():
                bodies.append(f"| `{field}` | {_cell(_schema_type(spec))} | "
                              f"{_cell(spec.get('description', ''))} |")
            continue
        bodies += ["| field | type | default |", "|---|---|---|"]
        for field, spec in model.get("properties", {}).items():
            if field in model.get("required", []):
                default = "required"
            else:
                default = "the service's" if spec.get("default") is None else f"`{spec['default']}`"
            bodies.append(f"| `{field}` | {_cell(_schema_type(spec))} | {_cell(default)} |")
    return "\n".join(lines + bodies) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if CONFIGURATION in markdown:
        markdown = markdown.replace(CONFIGURATION, _configuration())
    if HTTP_API in markdown:
        markdown = markdown.replace(HTTP_API, _http_api())
    return markdown
