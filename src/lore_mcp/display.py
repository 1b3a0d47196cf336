"""How the `lore` command line shows results to people (the MCP tools' text is `render`).

On a terminal: rich tables with colour. Piped: the same tables as plain text, no colour
and no escape codes, one row per line. Page text is never read as rich markup.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import singledispatch
from typing import IO

from pydantic import BaseModel
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lore_mcp.audit import AuditLog, AuditRecord
from lore_mcp.models import (
    Backlink,
    Backlinks,
    DeleteResult,
    GraphResult,
    LinkedCount,
    Neighbourhood,
    PageHistory,
    PageList,
    RenameResult,
    SaveResult,
    SearchResults,
    SyncReport,
    TitleMatches,
    VaultShape,
)

PLAIN_WIDTH = 4096
SLUG = "cyan"
MUTED = "dim"
NUMERIC = frozenset({"line", "links", "in", "out", "hops"})

Draw = Callable[[Console], None]


def _console(stream: IO[str], terminal: bool) -> Console:
    return Console(
        file=stream,
        force_terminal=terminal,
        width=None if terminal else PLAIN_WIDTH,
        markup=False,
        emoji=False,
        highlight=False,
    )


def on_terminal(draw: Draw, stream: IO[str]) -> None:
    """Draw with colour on a terminal."""
    draw(_console(stream, terminal=True))


def plain_text(draw: Draw) -> str:
    """What `draw` prints, as plain text: no colour or escape codes (whatever
    FORCE_COLOR says), rows never wrapped, no trailing blanks."""
    buffer = io.StringIO()
    draw(_console(buffer, terminal=False))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


# -- pieces -------------------------------------------------------------------------------


def new_table(*headers: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for header in headers:
        table.add_column(header, justify="right" if header in NUMERIC else "left")
    return table


def slug_text(slug: str) -> Text:
    return Text(slug, style=SLUG)


def _title(title: str, is_placeholder: bool = False) -> Text:
    text = Text(title)
    if is_placeholder:
        text.append(" (placeholder)", style=f"{MUTED} italic")
    return text


def _marked(snippet: str, styled: bool) -> Text:
    """A search snippet: on a terminal the `**matches**` are bold; piped, the markers stay."""
    if not styled:
        return Text(snippet)
    text = Text()
    for i, part in enumerate(snippet.split("**")):
        text.append(part, style="bold yellow" if i % 2 else "")
    return text


def print_heading(console: Console, text: str) -> None:
    console.print(Text(text, style="bold"))


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# -- results ------------------------------------------------------------------------------


@singledispatch
def show(result: BaseModel, console: Console) -> None:
    """Print any operation's result for people."""
    console.print(Text(result.model_dump_json(indent=2)))


@show.register
def _index(result: SyncReport, console: Console) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(justify="right")
    grid.add_column()
    grid.add_row("pages", str(result.pages))
    grid.add_row("links", str(result.links))
    grid.add_row("placeholders", str(result.placeholders))
    grid.add_row(
        "files",
        f"{result.added} new, {result.updated} changed, {result.removed} removed, "
        f"{result.unchanged} unchanged",
    )
    grid.add_row("time", f"{result.seconds:.2f} s")
    console.print(grid)
    for reason in result.skipped:
        console.print(Text(f"not indexed: {reason}", style="yellow"))


@show.register
def _search(result: SearchResults, console: Console) -> None:
    if not result.hits:
        console.print(Text(f"No pages match {result.query!r}."))
        return
    table = new_table("slug", "title", "match")
    for hit in result.hits:
        table.add_row(
            slug_text(hit.slug), _title(hit.title), _marked(hit.snippet, console.is_terminal)
        )
    console.print(table)


@show.register
def _titles(result: TitleMatches, console: Console) -> None:
    if not result.matches:
        console.print(Text(f"No titles match {result.query!r}."))
        return
    table = new_table("slug", "title", "match")
    for m in result.matches:
        table.add_row(
            slug_text(m.slug), _title(m.title, m.is_placeholder), Text(m.match, style=MUTED)
        )
    console.print(table)


def _lines(console: Console, heading: str, rows: list[Backlink], linked: bool = True) -> None:
    print_heading(console, f"{heading} ({plural(len(rows), 'line')})")
    if rows:
        table = new_table("page", "line", *(["links"] if linked else []), "text")
        for row in rows:
            count = [str(row.links)] if linked else []
            table.add_row(slug_text(row.slug), str(row.line), *count, Text(row.text))
        console.print(table)


@show.register
def _backlinks(result: Backlinks, console: Console) -> None:
    _lines(console, f"Links to {result.slug}", result.linked)
    if result.unlinked is not None:
        _lines(console, f"Mentions of {result.title!r} without a link", result.unlinked, False)


@show.register
def _list(result: PageList, console: Console) -> None:
    if not result.pages:
        console.print(Text(f"No pages here ({result.total} in all)."))
        return
    table = new_table("slug", "title", "in", "out", "modified (UTC)")
    for p in result.pages:
        when = (p.modified or "").replace("T", " ").removesuffix("Z")
        table.add_row(
            slug_text(p.slug),
            _title(p.title, p.is_placeholder),
            str(p.links_in),
            str(p.links_out),
            Text(when, style=MUTED),
        )
    console.print(table)
    last = result.offset + len(result.pages)
    more = f"; next: --offset {result.next_offset}" if result.next_offset is not None else ""
    console.print(Text(f"{result.offset + 1}-{last} of {result.total}{more}", style=MUTED))


@show.register
def _graph(result: GraphResult, console: Console) -> None:
    if result.neighbourhood is not None:
        _neighbourhood(result.neighbourhood, console)
    if result.shape is not None:
        _shape(result.shape, console)
    if result.next_offset is not None:
        console.print(Text(f"more: --offset {result.next_offset}", style=MUTED))


def _neighbourhood(hood: Neighbourhood, console: Console) -> None:
    print_heading(
        console, f"{hood.center}, {hood.depth} hop(s) out: {plural(len(hood.nodes), 'page')}"
    )
    table = new_table("hops", "slug", "title")
    for node in hood.nodes:
        table.add_row(
            str(node.depth), slug_text(node.slug), _title(node.title, node.is_placeholder)
        )
    console.print(table)
    print_heading(console, f"Links ({len(hood.edges)})")
    for edge in hood.edges:
        console.print(Text.assemble(slug_text(edge.source), " -> ", slug_text(edge.target)))


def _counts(console: Console, heading: str, rows: list[LinkedCount]) -> None:
    if rows:
        print_heading(console, heading)
        table = new_table("slug", "title", "in")
        for row in rows:
            table.add_row(slug_text(row.slug), _title(row.title), str(row.count))
        console.print(table)


def _shape(shape: VaultShape, console: Console) -> None:
    console.print(
        Text(
            f"{plural(shape.pages, 'page')}, {plural(shape.placeholders, 'placeholder')}, "
            f"{plural(shape.links, 'link')} between pages, "
            f"{plural(shape.orphan_count, 'orphan')}, {shape.unreferenced_count} unreferenced"
        )
    )
    _counts(console, "Most linked", shape.most_linked)
    _counts(console, "Unresolved (placeholders)", shape.unresolved)
    for heading, slugs, total in (
        ("Orphans (no links in or out)", shape.orphans, shape.orphan_count),
        (
            "Unreferenced (no other page links to them)",
            shape.unreferenced,
            shape.unreferenced_count,
        ),
    ):
        if slugs:
            print_heading(console, heading)
            for slug in slugs:
                console.print(slug_text(slug))
            if total > len(slugs):
                console.print(Text(f"... and {total - len(slugs)} more", style=MUTED))


_SAVED = {
    "append": "Appended to",
    "prepend": "Prepended to",
    "edit": "Edited",
    "section": "Replaced a section of",
    "restore": "Restored a kept version of",
}


@show.register
def _saved(result: SaveResult, console: Console) -> None:
    if result.unchanged:
        verb = "Unchanged"
    elif result.promoted:
        verb = "Promoted placeholder"
    else:
        verb = "Created" if result.created else _SAVED.get(result.mode, "Saved")
    console.print(Text.assemble(f"{verb} ", slug_text(result.slug), f" ({result.path})"))
    missing = sum(1 for link in result.links if not link.exists)
    console.print(Text(f"{plural(len(result.links), 'link')}, {missing} to placeholders"))
    if result.placeholders_created:
        console.print(Text(f"new placeholders: {', '.join(result.placeholders_created)}"))
    if result.placeholders_removed:
        console.print(Text(f"placeholders gone: {', '.join(result.placeholders_removed)}"))


@show.register
def _deleted(result: DeleteResult, console: Console) -> None:
    console.print(Text.assemble("Deleted ", slug_text(result.slug), f" ({result.path})"))
    if result.history_path:
        console.print(Text(f"its last version is kept in {result.history_path}"))
    if result.became_placeholder:
        console.print(Text("other pages still link to it, so it is now a placeholder"))


@show.register
def _renamed(result: RenameResult, console: Console) -> None:
    console.print(
        Text.assemble(
            "Renamed ",
            slug_text(result.old_slug),
            " -> ",
            slug_text(result.slug),
            f" ({result.path})",
        )
    )
    pages = ", ".join(result.rewritten)
    if result.pages_rewritten > len(result.rewritten):
        pages += f", ... ({result.pages_rewritten - len(result.rewritten)} more)"
    console.print(
        Text(
            f"rewrote {plural(result.links_rewritten, 'link')} in "
            f"{plural(result.pages_rewritten, 'page')}" + (f": {pages}" if pages else "")
        )
    )


@show.register
def _history(result: PageHistory, console: Console) -> None:
    if not result.versions:
        console.print(Text(f"No kept versions of {result.path}."))
        return
    table = new_table("version", "kept (UTC)", "tool", "door", "size", "sha256")
    for v in result.versions:
        when = v.time[:19].replace("T", " ")
        table.add_row(str(v.number), when, v.tool, v.door, str(v.size), v.hash[:12])
    console.print(
        Text(f"{result.path}: {plural(len(result.versions), 'kept version')}, newest first")
    )
    console.print(table)


@show.register
def _audit(result: AuditLog, console: Console) -> None:
    if not result.records:
        console.print(Text(f"No writes recorded in {result.path}."))
    else:
        table = new_table("time (UTC)", "door", "client", "session", "tool", "page", "change")
        for r in result.records:
            page = (
                slug_text(r.slug)
                if r.old_slug is None
                else Text.assemble(slug_text(r.old_slug), " -> ", slug_text(r.slug))
            )
            when = r.time[:19].replace("T", " ")
            session = (r.session or "")[:8]
            tool = r.tool if r.mode in (None, "replace", "restore") else f"{r.tool} ({r.mode})"
            table.add_row(when, r.door, r.client(), session, tool, page, _change(r))
        console.print(table)
    if result.skipped:
        console.print(Text(f"{plural(result.skipped, 'line')} could not be read", style="yellow"))


def _change(record: AuditRecord) -> Text:
    """What the write did to the file, with short content hashes."""

    def short(digest: str | None) -> str:
        return digest.rpartition(":")[2][:8] if digest else "none"

    if record.before is None:
        parts = [f"created {short(record.after)}"]
    elif record.after is None:
        parts = [f"deleted {short(record.before)}, kept in {record.history_path or 'nowhere'}"]
    else:
        parts = [f"{short(record.before)} -> {short(record.after)}"]
        if record.history_path:  # an outside edit of a version lore had
            parts.append(f"what it replaced is kept in {record.history_path}")
        elif record.kept is False:
            parts.append("what it replaced was not kept (lore never had those bytes)")
    if record.rewritten:
        parts.append(f"links rewritten in {plural(len(record.rewritten), 'page')}")
    if record.placeholders_created:
        parts.append(f"new placeholders: {', '.join(record.placeholders_created)}")
    if record.placeholders_removed:
        parts.append(f"placeholders gone: {', '.join(record.placeholders_removed)}")
    return Text("; ".join(parts))
