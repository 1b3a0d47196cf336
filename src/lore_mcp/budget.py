"""Result budgets: a tool result fits in `limit` characters, as text and as JSON.

Whatever a tool returns ends up in the agent's context, so a result over the limit is
shrunk by its tool's policy (never cut blindly), marked `truncated`, and its `note` says
what was left out and how to get the rest. A paged list (`models.Paged`) loses rows from
its tail and its `next_offset` points at the first row left out, so paging on reaches
every row once; its counts stay those of the whole list.

- read_page: the page in exact parts, its text first (see `parts`).
- search: the snippets of the last hits go first, then hits from the tail.
- list_pages, search_titles: fewer rows.
- get_backlinks: long lines are shortened, then rows go (the mentions, then the links).
- get_graph: a neighbourhood keeps its nearest pages and the links among them; the
  vault's shape keeps fewer rows of each of its lists.
- the write results: their lists are shortened from the tail.

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
    Paged,
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
P = TypeVar("P", bound=Paged)
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
            return _titles(result, ok)
        case SaveResult():
            fields = [("links", "links"), *_PLACEHOLDER_FIELDS]
            return _trimmed(result, ok, fields, "read_page lists the page's links.")
        case DeleteResult():
            return _trimmed(result, ok, _PLACEHOLDER_FIELDS, "get_graph lists placeholders.")
        case RenameResult():
            hint = f"get_backlinks of {result.slug} lists every page that links to it now."
            fields = [("retargeted", "retargeted links"), ("rewritten", "rewritten pages")]
            return _trimmed(result, ok, fields, hint)
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
    more = ""
    if not ok(shrunk):
        bare = shrunk.hits
        shrunk, shown = _paged(
            shrunk, len(bare), lambda k: shrunk.model_copy(update={"hits": bare[:k]}), ok
        )
        cut = f"only {shown} of these {len(hits)} hits are shown, without snippets"
        more = f" Call again with offset={shrunk.next_offset} (and the same limit) for the rest."
    return _noted(
        shrunk,
        f"To fit the size limit, {cut}.{more} read_page shows a hit in full; a narrower "
        "query or a smaller limit returns fewer hits.",
    )


def _paged(model: P, rows: int, build: Callable[[int], P], ok: Fits) -> tuple[P, int]:
    """`model` as `build` makes it with the first k of its `rows` rows, for the largest
    k that fits (at least one, so paging always moves on); its `next_offset` then points
    at the first row left out. The result and k."""

    def page(k: int) -> P:
        shown = build(k)
        if k < rows:
            return shown.model_copy(update={"next_offset": model.offset + k})
        return shown

    kept = max(1, largest(rows, lambda k: ok(page(k)))) if rows else 0
    return page(kept), kept


def _more(shown: int, rows: int, what: str, paged: Paged) -> str:
    return (
        f"To fit the size limit, only {shown} of the {rows} {what} from offset "
        f"{paged.offset} are shown. Call again with offset={paged.next_offset} for the rest."
    )


def _listing(listing: PageList, ok: Fits) -> PageList:
    """Fewer rows, and the offset that pages on."""
    rows = listing.pages
    shrunk, kept = _paged(
        listing, len(rows), lambda k: listing.model_copy(update={"pages": rows[:k]}), ok
    )
    return _noted(shrunk, _more(kept, len(rows), "rows asked for", shrunk))


def _titles(result: TitleMatches, ok: Fits) -> TitleMatches:
    """Fewer matches, and the offset that pages on."""
    rows = result.matches
    shrunk, kept = _paged(
        result, len(rows), lambda k: result.model_copy(update={"matches": rows[:k]}), ok
    )
    return _noted(shrunk, _more(kept, len(rows), "matches asked for", shrunk))


def _backlinks(result: Backlinks, ok: Fits) -> Backlinks:
    """Long lines shortened, then rows dropped from the tail (the mentions come after
    the links), and the offset that pages on."""

    def clipped(rows: list[Backlink]) -> list[Backlink]:
        return [row.model_copy(update={"text": _clip(row.text)}) for row in rows]

    linked, unlinked = clipped(result.linked), clipped(result.unlinked or [])
    rows = linked + unlinked

    def build(k: int) -> Backlinks:
        mentions = None if result.unlinked is None else rows[len(linked) : max(k, len(linked))]
        return result.model_copy(
            update={"linked": rows[: min(k, len(linked))], "unlinked": mentions}
        )

    shrunk, kept = _paged(result, len(rows), build, ok)
    note = f"To fit the size limit, lines over {CLIPPED_LINE_CHARS} characters were shortened."
    if kept < len(rows):
        note = f"{_more(kept, len(rows), 'rows', shrunk)} Lines over {CLIPPED_LINE_CHARS} "
        note += "characters were shortened."
    return _noted(shrunk, note)


# -- get_graph --------------------------------------------------------------------------


def _neighbourhood(result: GraphResult, hood: Neighbourhood, ok: Fits) -> GraphResult:
    """The nearest pages (they come sorted by hops) and the links that reach them from
    pages shown so far; the offset that pages on."""

    def build(k: int) -> GraphResult:
        left_out = {node.slug for node in hood.nodes[k:]}
        edges = [e for e in hood.edges if e.source not in left_out and e.target not in left_out]
        inner = hood.model_copy(update={"nodes": hood.nodes[:k], "edges": edges})
        return result.model_copy(update={"neighbourhood": inner})

    shrunk, kept = _paged(result, len(hood.nodes), build, ok)
    return _noted(shrunk, _more(kept, len(hood.nodes), "pages", shrunk))


def _shape(result: GraphResult, shape: VaultShape, ok: Fits) -> GraphResult:
    """Fewer rows of each list (the same number of each), and the offset that pages on."""
    fields = ("orphans", "unreferenced", "most_linked", "unresolved")
    rows = max(len(getattr(shape, field)) for field in fields)

    def build(k: int) -> GraphResult:
        inner = shape.model_copy(update={f: getattr(shape, f)[:k] for f in fields})
        return result.model_copy(update={"shape": inner})

    shrunk, kept = _paged(result, rows, build, ok)
    return _noted(shrunk, _more(kept, rows, "rows of each list", shrunk))
