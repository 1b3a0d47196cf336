"""Result budgets: a tool result fits in `limit` characters, as text and as JSON.

Whatever a tool returns ends up in the agent's context, so a result over the limit is
shrunk by its tool's policy (never cut blindly), marked `truncated`, and its `note` says
what was left out and how to get the rest:

- read_page: the page in exact parts, its text first (see `parts`).
- search: the snippets of the last hits go first, then hits from the tail.
- list_pages: fewer rows, and `next_offset` pages on.
- get_graph: a neighbourhood keeps its nearest pages and the links among them; the
  vault's shape shortens its lists.
- get_backlinks, search_titles and the write results: long lines are shortened, then
  rows dropped from the tail.

Pure functions of the result models. The caller passes the function that renders a
model's text; both that text and the model's JSON must fit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from lore_mcp import parts
from lore_mcp.models import (
    Backlink,
    Backlinks,
    Budgeted,
    DeleteResult,
    GraphResult,
    Neighbourhood,
    PageList,
    PageView,
    RenameResult,
    SaveResult,
    SearchResults,
    TitleMatches,
    VaultShape,
)
from lore_mcp.parts import largest

log = logging.getLogger(__name__)

NOTE_ROOM = 400  # kept free for the note while a policy shrinks a result
CLIPPED_LINE_CHARS = 200

M = TypeVar("M", bound=BaseModel)
Fits = Callable[[Any], bool]


# -- the entry point ------------------------------------------------------------------


def fits(result: BaseModel, text: Callable[[Any], str], limit: int) -> bool:
    """Whether both the JSON and the text of `result` are within `limit` characters."""
    return _drawn_within(result, text, limit) is not None


def _drawn_within(result: BaseModel, text: Callable[[Any], str], limit: int) -> str | None:
    """The text of `result` if both it and the JSON are within `limit` characters."""
    if len(result.model_dump_json()) > limit:
        return None
    drawn = text(result)
    return drawn if len(drawn) <= limit else None


def fit(result: M, text: Callable[[M], str], limit: int) -> tuple[M, str]:
    """`result` itself when it fits in `limit` characters, else a copy shrunk by its
    tool's policy, with `truncated` set and a `note` on how to get the rest; and its
    text (drawn once, as most results fit)."""
    if isinstance(result, PageView):
        part = cast(M, parts.fit_page(result, text, limit))
        drawn = _drawn_within(part, text, limit)
        if drawn is None:
            log.warning("a part of %s is still over the %d-character limit", result.slug, limit)
        return part, text(part) if drawn is None else drawn
    drawn = _drawn_within(result, text, limit)
    if drawn is not None:
        return result, drawn
    if not isinstance(result, Budgeted):
        return result, text(result)
    room = NOTE_ROOM
    while True:
        shrunk = cast(M, _shrink(result, text, limit - room))
        drawn = _drawn_within(shrunk, text, limit)
        if drawn is not None:
            return shrunk, drawn
        if room >= limit // 2:
            break
        room *= 2
    log.warning("a %s is still over the %d-character limit", type(result).__name__, limit)
    return shrunk, text(shrunk)


def _shrink(result: Budgeted, text: Callable[[Any], str], limit: int) -> Budgeted:
    def ok(model: BaseModel) -> bool:
        return fits(model, text, limit)

    match result:
        case SearchResults():
            return _search(result, ok)
        case PageList():
            return _listing(result, ok)
        case GraphResult(neighbourhood=Neighbourhood() as hood):
            return _neighbourhood(result, hood, ok)
        case GraphResult(shape=VaultShape() as shape):
            return _shape(result, shape, ok)
        case Backlinks():
            return _backlinks(result, ok)
        case TitleMatches():
            return _trimmed(result, ok, [("matches", "matches")], "A longer query narrows them.")
        case SaveResult():
            fields = [("links", "links"), *_PLACEHOLDER_FIELDS]
            return _trimmed(result, ok, fields, "read_page lists the page's links.")
        case DeleteResult():
            return _trimmed(result, ok, _PLACEHOLDER_FIELDS, "get_graph lists placeholders.")
        case RenameResult():
            hint = "links_rewritten counts every link; get_backlinks shows where they are."
            return _trimmed(result, ok, [("rewritten", "rewritten pages")], hint)
    return result


_PLACEHOLDER_FIELDS = [
    ("placeholders_created", "new placeholders"),
    ("placeholders_removed", "removed placeholders"),
]


# -- helpers --------------------------------------------------------------------------


def _keep(model: M, field: str, ok: Fits) -> tuple[M, int]:
    """`model` with the list `field` cut from the tail until it fits; how many stay."""
    items = getattr(model, field)

    def build(k: int) -> M:
        return model.model_copy(update={field: items[:k]})

    kept = largest(len(items), lambda k: ok(build(k)))
    return build(kept), kept


def _trim_lists(model: M, fields: Sequence[tuple[str, str]], ok: Fits) -> tuple[M, list[str]]:
    """Empty the list fields from the tail, one after the other, until `model` fits;
    what was cut, as 'K of N label'."""
    cut: list[str] = []
    for field, label in fields:
        if ok(model):
            break
        total = len(getattr(model, field))
        model, kept = _keep(model, field, ok)
        if kept < total:
            cut.append(f"{kept} of {total} {label}")
    return model, cut


def _noted(model: M, note: str) -> M:
    return model.model_copy(update={"truncated": True, "note": note})


def _shown(cut: list[str]) -> str:
    return f"To fit the size limit, only {', '.join(cut)} are shown."


def _trimmed(model: M, ok: Fits, fields: Sequence[tuple[str, str]], hint: str) -> M:
    shrunk, cut = _trim_lists(model, fields, ok)
    return _noted(shrunk, f"{_shown(cut)} {hint}" if cut else hint)


def _clip(text: str, limit: int = CLIPPED_LINE_CHARS) -> str:
    """`text` shortened to about `limit` characters at a word break, marked with '…'."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


# -- search, listing, backlinks ---------------------------------------------------------


def _search(results: SearchResults, ok: Fits) -> SearchResults:
    """Snippets dropped from the last hit up; if that is not enough, hits from the tail."""
    hits = results.hits

    def with_snippets(k: int) -> SearchResults:
        bare = [hit.model_copy(update={"snippet": ""}) for hit in hits[k:]]
        return results.model_copy(update={"hits": hits[:k] + bare})

    kept = largest(len(hits), lambda k: ok(with_snippets(k)))
    shrunk = with_snippets(kept)
    cut = f"the snippets of the last {len(hits) - kept} hits were left out"
    if not ok(shrunk):
        shrunk, shown = _keep(shrunk, "hits", ok)
        cut = f"only the best {shown} of {len(hits)} hits are shown, without snippets"
    return _noted(
        shrunk,
        f"To fit the size limit, {cut}. read_page shows a hit in full; a narrower query "
        "or a smaller limit returns fewer hits.",
    )


def _listing(listing: PageList, ok: Fits) -> PageList:
    """Fewer rows (at least one), and the offset that pages on."""
    rows = listing.pages

    def build(k: int) -> PageList:
        next_offset = listing.offset + k if k < len(rows) else listing.next_offset
        return listing.model_copy(update={"pages": rows[:k], "next_offset": next_offset})

    kept = max(1, largest(len(rows), lambda k: ok(build(k))))
    shrunk = build(kept)
    return _noted(
        shrunk,
        f"Only {kept} of the {len(rows)} rows asked for fit the size limit. Call "
        f"list_pages again with offset={shrunk.next_offset} for the rest.",
    )


def _backlinks(result: Backlinks, ok: Fits) -> Backlinks:
    """Long lines shortened, then mentions and links dropped from the tail."""

    def clipped(rows: list[Backlink] | None) -> list[Backlink] | None:
        if rows is None:
            return None
        return [row.model_copy(update={"text": _clip(row.text)}) for row in rows]

    shrunk = result.model_copy(
        update={"linked": clipped(result.linked), "unlinked": clipped(result.unlinked)}
    )
    fields = [("linked", "links")]
    if shrunk.unlinked is not None:
        fields.insert(0, ("unlinked", "unlinked mentions"))
    shrunk, cut = _trim_lists(shrunk, fields, ok)
    note = f"To fit the size limit, lines over {CLIPPED_LINE_CHARS} characters were shortened"
    note += f" and only {', '.join(cut)} are shown." if cut else "."
    return _noted(shrunk, note + " read_page lists every linking page by slug.")


# -- get_graph --------------------------------------------------------------------------


def _neighbourhood(result: GraphResult, hood: Neighbourhood, ok: Fits) -> GraphResult:
    """The nearest pages (they come sorted by hops) and the links among them."""

    def build(k: int) -> GraphResult:
        nodes = hood.nodes[:k]
        kept = {node.slug for node in nodes}
        edges = [e for e in hood.edges if e.source in kept and e.target in kept]
        return result.model_copy(
            update={"neighbourhood": hood.model_copy(update={"nodes": nodes, "edges": edges})}
        )

    shrunk = build(max(1, largest(len(hood.nodes), lambda k: ok(build(k)))))
    assert shrunk.neighbourhood is not None
    nodes, edges = shrunk.neighbourhood.nodes, shrunk.neighbourhood.edges
    return _noted(
        shrunk,
        f"The neighbourhood has {len(hood.nodes)} pages and {len(hood.edges)} links; to fit "
        f"the size limit only the nearest {len(nodes)} pages and the {len(edges)} links "
        "among them are shown. Call get_graph on an outer page, or with a smaller depth.",
    )


def _shape(result: GraphResult, shape: VaultShape, ok: Fits) -> GraphResult:
    """The orphans, the unreferenced pages, the unresolved targets, then the most
    linked, cut from the tail."""

    def outer(inner: VaultShape) -> GraphResult:
        return result.model_copy(update={"shape": inner})

    fields = [
        ("orphans", "orphans"),
        ("unreferenced", "unreferenced pages"),
        ("unresolved", "unresolved targets"),
        ("most_linked", "most linked pages"),
    ]
    inner, cut = _trim_lists(shape, fields, lambda s: ok(outer(s)))
    return _noted(
        outer(inner),
        f"{_shown(cut)} list_pages lists every page and placeholder with its links in and out.",
    )
