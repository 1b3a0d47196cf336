"""The UI's pages and its few JSON answers: each reads through the engine (or, for a
restore, makes one engine write) and fills a template. Endpoints are plain functions,
which Starlette runs in its thread pool, since engine calls wait on the vault's lock."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, quote

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from lore_mcp import __version__, audit
from lore_mcp import vault_ops as engine
from lore_mcp.errors import LoreError, PageNotFoundError
from lore_mcp.ui import activity, markup, views

UI_DOOR = audit.Door("ui", client_name="lore ui", client_version=__version__)


@dataclass
class Ui:
    """What every endpoint needs: the open vault and how to draw pages."""

    vault: engine.AppState
    templates: Jinja2Templates
    files: views.Attachments
    read_only: bool


def _ui(request: Request) -> Ui:
    ui = request.app.state.ui
    assert isinstance(ui, Ui)
    return ui


def _show(request: Request, template: str, status: int = 200, **values: Any) -> Response:
    ui = _ui(request)
    values |= {"read_only": ui.read_only, "vault_name": ui.vault.root.name}
    return ui.templates.TemplateResponse(request, template, values, status_code=status)


def _failed(request: Request, exc: LoreError) -> Response:
    status = 404 if isinstance(exc, PageNotFoundError) else 400
    return _show(request, "error.html", status, message=str(exc))


def home(request: Request) -> Response:
    vault = _ui(request).vault
    recent = engine.list_pages(vault, "", False, 0, 30, sort="modified")
    shape = engine.get_graph(vault).shape
    return _show(request, "home.html", recent=recent.pages, total=recent.total, shape=shape)


def all_pages(request: Request) -> Response:
    vault = _ui(request).vault
    offset = _int(request.query_params.get("offset"), 0)
    listed = engine.list_pages(vault, request.query_params.get("folder", ""), True, offset, 200)
    return _show(request, "pages.html", listed=listed)


def page(request: Request) -> Response:
    ui = _ui(request)
    try:
        shown = views.page(ui.vault, request.path_params["name"], ui.files)
    except LoreError as exc:
        return _failed(request, exc)
    restored = request.query_params.get("restored")
    return _show(request, "page.html", page=shown, view=shown.view, restored=restored)


def attachment(request: Request) -> Response:
    ui = _ui(request)
    rel = request.path_params["path"]
    if not ui.files.allowed(rel):
        return Response("No such attachment in this vault.", 404)
    return FileResponse(ui.vault.root / rel)


def search(request: Request) -> Response:
    vault = _ui(request).vault
    query = request.query_params.get("q", "").strip()
    if not query:
        return _show(request, "search.html", query="", hits=None, titles=None)
    try:
        hits = engine.search(vault, query, 30).hits
        titles = engine.search_titles(vault, query, 10).matches
    except LoreError as exc:
        return _failed(request, exc)
    return _show(request, "search.html", query=query, hits=hits, titles=titles)


def titles(request: Request) -> Response:
    """The quick switcher's matches, by title, alias and slug."""
    query = request.query_params.get("q", "").strip()
    if not query:
        return JSONResponse([])
    try:
        found = engine.search_titles(_ui(request).vault, query, 12).matches
    except LoreError:
        return JSONResponse([])
    return JSONResponse(
        [
            {"slug": m.slug, "title": m.title, "placeholder": m.is_placeholder, "match": m.match}
            for m in found
        ]
    )


def graph(request: Request) -> Response:
    name = request.query_params.get("page", "")
    depth = min(max(_int(request.query_params.get("depth"), 1), 1), 3)
    return _show(request, "graph.html", center=name, depth=depth)


def graph_json(request: Request) -> Response:
    name = request.query_params.get("page") or None
    depth = min(max(_int(request.query_params.get("depth"), 1), 1), 3)
    try:
        return JSONResponse(views.graph_data(_ui(request).vault, name, depth))
    except LoreError as exc:
        return JSONResponse({"error": str(exc)}, 404)


def timeline(request: Request) -> Response:
    params = request.query_params
    filters = activity.Filters(
        day=activity.parse_day(params.get("day", "")),
        client=params.get("client", ""),
        page=params.get("page", ""),
    )
    shown = activity.timeline(_ui(request).vault.root, filters)
    return _show(request, "activity.html", timeline=shown, filters=filters, when=activity.when)


def change(request: Request) -> Response:
    ui = _ui(request)
    found = activity.entry(ui.vault.root, request.path_params["number"])
    if found is None:
        return _show(request, "error.html", 404, message="There is no such change in the log.")
    shown = activity.change(ui.vault, found)
    return _show(request, "change.html", change=shown, when=activity.when)


async def restore(request: Request) -> Response:
    """Put a kept version back: the engine operation `save_page(mode="restore")` runs."""
    ui = _ui(request)
    if ui.read_only:
        return Response("403 Forbidden: this UI was started with --read-only.\n", 403)
    form = dict(parse_qsl((await request.body()).decode("utf-8", "replace")))
    name, version = form.get("name", ""), _int(form.get("version"), 0)
    run = partial(
        engine.save_or_restore, ui.vault, name, None, mode="restore", version=version, door=UI_DOOR
    )
    try:
        result = await anyio.to_thread.run_sync(run)
    except LoreError as exc:
        return _failed(request, exc)
    target = markup.page_url(result.slug) + f"?restored={quote(str(version))}"
    return RedirectResponse(target, 303)


def _int(text: str | None, default: int) -> int:
    try:
        return int(text or "")
    except ValueError:
        return default


ROUTES = [
    Route("/", home),
    Route("/pages", all_pages),
    Route("/page/{name:path}", page),
    Route("/file/{path:path}", attachment),
    Route("/search", search),
    Route("/api/titles", titles),
    Route("/graph", graph),
    Route("/api/graph", graph_json),
    Route("/activity", timeline),
    Route("/activity/{number:int}", change),
    Route("/restore", restore, methods=["POST"]),
]
