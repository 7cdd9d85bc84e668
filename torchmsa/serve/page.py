"""The service's pages: the web page at ``/`` and the API reference at ``/docs``.

Both are single self-contained documents (style and script inlined from ``assets/``) that load
nothing from elsewhere, so they work on a machine without network access. The web page pastes
or uploads sequences, submits them, polls the caller's queue, shows a finished job through
:mod:`torchmsa.view`'s page (``GET /jobs/{id}/view``) and downloads every result format.
"""

from __future__ import annotations

import functools
import html
import json
import re
from importlib import resources

__all__ = ["main_page", "docs_page"]

_PLACEHOLDER = re.compile(r"\{\{(STYLE|SCRIPT)\}\}")
_METHODS = ("get", "post", "put", "delete", "patch")


def _asset(name: str) -> str:
    return resources.files("torchmsa.serve").joinpath("assets").joinpath(name).read_text("utf-8")


@functools.lru_cache(maxsize=1)
def main_page() -> str:
    """The web page's HTML."""
    parts = {"STYLE": _asset("serve.css"), "SCRIPT": _asset("serve.js")}
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _asset("serve.html"))


def _schema_text(schema: dict) -> str:
    if not schema:
        return ""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_schema_text(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_schema_text(schema.get('items', {}))}"
    text = schema.get("type", "")
    if "default" in schema:
        text += f" (default {json.dumps(schema['default'])})"
    return text


def _operation(path: str, method: str, op: dict) -> str:
    esc = html.escape
    rows = []
    for p in op.get("parameters", []):
        rows.append(
            f"<tr><td><code>{esc(p['name'])}</code></td><td>{esc(p.get('in', ''))}</td>"
            f"<td>{esc(_schema_text(p.get('schema', {})))}</td>"
            f"<td>{esc(p.get('description', '') or p.get('schema', {}).get('description', ''))}"
            f"</td></tr>"
        )
    body = op.get("requestBody", {}).get("content", {})
    if body:
        rows.append(f"<tr><td>body</td><td></td><td>{esc(', '.join(body))}</td><td></td></tr>")
    table = (
        "<table><tr><th>name</th><th>in</th><th>type</th><th>about</th></tr>"
        + "".join(rows)
        + "</table>"
        if rows
        else ""
    )
    codes = ", ".join(
        f"{esc(code)} {esc(r.get('description', ''))}"
        for code, r in op.get("responses", {}).items()
    )
    return (
        f'<section><h3><span class="m">{method.upper()}</span> <code>{esc(path)}</code> '
        f"&mdash; {esc(op.get('summary', ''))}</h3>"
        f'<p>{esc(op.get("description", ""))}</p>{table}<p class="dim">responses: {codes}</p>'
        f"</section>"
    )


def docs_page(openapi: dict) -> str:
    """An API reference drawn from the OpenAPI document (no Swagger UI, hence no CDN)."""
    info = openapi.get("info", {})
    ops = [
        _operation(path, method, item[method])
        for path, item in openapi.get("paths", {}).items()
        for method in _METHODS
        if method in item
    ]
    title = html.escape(f"{info.get('title', 'API')} {info.get('version', '')}")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" '
        f'href="data:,"><title>{title}</title><style>'
        "body{font:14px system-ui,sans-serif;margin:16px 24px;color:#222}"
        "section{border-top:1px solid #ddd;padding:4px 0}h3{font-size:15px}"
        ".m{display:inline-block;min-width:4.5em;color:#fff;background:#345;padding:1px 6px;"
        "border-radius:3px;font-size:12px}table{border-collapse:collapse}"
        "td,th{border-bottom:1px solid #eee;padding:2px 10px;text-align:left}.dim{color:#666}"
        f"</style></head><body><h1>{title}</h1><p>{html.escape(info.get('description', ''))}"
        ' The machine-readable document: <a href="/openapi.json">/openapi.json</a>; errors '
        'are <code>{"error": "..."}</code>.</p>' + "".join(ops) + "</body></html>"
    )
