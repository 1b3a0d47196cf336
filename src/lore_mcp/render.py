"""The text the model reads beside each tool's structured content: a few lines per
result, lists as bullet lines, and a page's Markdown left as Markdown under a short
header. Pure functions of the result models; the structured content carries every field.
"""

from __future__ import annotations

from collections.abc import Iterable

from lore_mcp.models import (
    Backlink,
    Backlinks,
    Budgeted,
    DeleteResult,
    GraphResult,
    LinkedCount,
    OutgoingLink,
    Paged,
    PageList,
    PageView,
    RenameResult,
    SaveResult,
    SearchResults,
    TitleMatches,
)


def _join(items: Iterable[str], limit: int = 25, total: int | None = None) -> str:
    """The first `limit` items, and how many more there are: of `total` when the
    items are only the first ones of that many."""
    unique = list(dict.fromkeys(items))
    shown = unique[:limit]
    left = (len(unique) if total is None else max(total, len(unique))) - len(shown)
    more = f", ... ({left} more)" if left > 0 else ""
    return ", ".join(shown) + more if shown else "none"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _link(link: OutgoingLink) -> str:
    if not link.exists:
        return f"{link.slug} (placeholder)"
    return f"{link.slug} (ambiguous)" if link.ambiguous else link.slug


PAGE_INFO = "<page-info>"
PAGE_INFO_END = "</page-info>"


def page(view: PageView) -> str:
    """A header (title, slug, path, backlinks, links, the history) between <page-info>
    tags, which no Markdown or frontmatter uses, then the Markdown as it is in the file.
    A kept version's header says which version it is instead of the links."""
    lines = [PAGE_INFO, f"title: {view.title}", f"slug: {view.slug}"]
    lines.append(f"path: {view.path or 'none (a placeholder: linked to, no file yet)'}")
    if view.vault is not None:
        lines.append(f"vault: {view.vault}")
    if (kept := view.version) is not None:
        lines.append(
            f"version: {kept.number} of {view.kept_versions} kept (1 is the newest), kept "
            f"{kept.time} when {kept.tool} ({kept.door}) replaced it; "
            f"save_page(mode='restore', version={kept.number}) brings it back"
        )
    else:
        total = len(view.backlinks) if view.backlink_count is None else view.backlink_count
        backlinks = _join((r.slug for r in view.backlinks), total=total)
        lines.append(f"backlinks ({total}): {backlinks}")
        if not view.is_placeholder:
            targets = list(dict.fromkeys(_link(link) for link in view.links))
            count = len(view.links) if view.link_count is None else view.link_count
            more = len(targets) + count - len(view.links)
            lines.append(f"links ({count}): {_join(targets, total=more)}")
        lines.append(f"history: {_history(view.kept_versions)}")
    if view.alternatives:
        lines.append(f"also matches: {_join(view.alternatives)}")
    if view.offset or view.column or view.next_offset is not None:
        lines.append(f"lines: {_span(view)}")
    if view.encoding_errors:
        lines.append(
            "encoding: not valid UTF-8; bytes that do not decode show as U+FFFD (only a "
            "whole-page save_page can change it)"
        )
    lines.append(PAGE_INFO_END)
    if view.is_placeholder:
        lines.append("(empty until save_page writes it)")
    return "\n".join(lines) + "\n" + view.content


def _history(kept: int) -> str:
    if not kept:
        return "no kept versions"
    which = "version=1" if kept == 1 else f"version=1 (the newest) to {kept}"
    return f"{_plural(kept, 'kept version')}; read one with {which}"


def _span(view: PageView) -> str:
    """Which lines a part shows, and which part it is."""
    last = view.last_line
    start = f"{view.offset + 1}" + (f" from column {view.column + 1}" if view.column else "")
    shown = f"{start}-{last} of {view.total_lines}"
    if view.next_column:
        shown += f" (line {last} goes on in the next part)"
    return shown + (f", part 1 of {view.parts}" if view.parts > 1 else "")


def _rows(paged: Paged, shown: int, total: int) -> str:
    """Which rows of a paged list are shown: ' (rows 11-20 of 35)', or nothing when
    they are all."""
    if shown == total:
        return ""
    if not shown:
        return " (none of them in these rows)"
    return f" (rows {paged.offset + 1}-{paged.offset + shown} of {total})"


def _more(paged: Paged) -> list[str]:
    """The line that says how to page on, if there is more."""
    if paged.next_offset is None:
        return []
    return [f"More: call again with offset={paged.next_offset}."]


def noted(text: str, result: Budgeted) -> str:
    """`text`, then on a line of its own the note on what was left out to fit the size
    limit, if anything was."""
    if not result.note:
        return text
    newline = "" if text.endswith("\n") else "\n"
    return f"{text}{newline}[{result.note}]"


def _where(result: Budgeted, path: str) -> str:
    """A written file, with the vault it is in when the result names one."""
    return f"{path} in vault {result.vault!r}" if result.vault is not None else path


def _placeholder_lines(created: list[str], removed: list[str]) -> list[str]:
    return [
        f"placeholders {verb}: {_join(slugs)}"
        for verb, slugs in (("created", created), ("removed", removed))
        if slugs
    ]


_SAVED = {
    "replace": "overwritten",
    "append": "appended to",
    "prepend": "prepended to",
    "edit": "edited (old_text replaced)",
    "section": "section replaced",
    "restore": "a kept version restored (what it replaced is kept in turn)",
}


def saved(result: SaveResult) -> str:
    how = "created" if result.created else _SAVED.get(result.mode, "overwritten")
    if result.unchanged:
        how = "unchanged (same content)"
    elif result.promoted:
        how = "placeholder promoted to a page"
    lines = [f"Saved {result.slug} ({_where(result, result.path)}): {how}."]
    if result.links:
        lines.append(f"links: {_join(_link(link) for link in result.links)}")
    lines += _placeholder_lines(result.placeholders_created, result.placeholders_removed)
    return "\n".join(lines)


def deleted(result: DeleteResult) -> str:
    lines = [f"Deleted {result.slug} ({_where(result, result.path)})."]
    if result.history_path:
        lines.append(f"Its last version is kept in {result.history_path}.")
    if result.became_placeholder:
        lines.append("Other pages still link to it, so it stays on as a placeholder.")
    lines += _placeholder_lines(result.placeholders_created, result.placeholders_removed)
    return "\n".join(lines)


def renamed(result: RenameResult) -> str:
    lines = [f"Renamed {result.old_slug} to {result.slug} ({_where(result, result.path)})."]
    links = _plural(result.links_rewritten, "link")
    pages = _plural(result.pages_rewritten, "page")
    if result.pages_rewritten > len(result.rewritten):
        pages += f"; the first {len(result.rewritten)}"
    lines.append(f"Rewrote {links} in {pages}" + (":" if result.rewritten else "."))
    lines += [f"- {slug}" for slug in result.rewritten]
    if result.retargeted_count:
        first = (
            f"; the first {len(result.retargeted)}"
            if result.retargeted_count > len(result.retargeted)
            else ""
        )
        lines.append(
            f"{_plural(result.retargeted_count, 'link')} that led nowhere now lead to "
            f"{result.slug} without being rewritten{first}:"
        )
        lines += [f"- {r.source}:{r.line}: [[{r.target}]]" for r in result.retargeted]
    lines.append(f"get_backlinks of {result.slug} lists every page that links to it now.")
    return "\n".join(lines)


def listing(result: PageList) -> str:
    if not result.pages:
        return f"No pages here (offset {result.offset}, {result.total} in all)."
    last = result.offset + len(result.pages)
    order = ", the latest modified first" if result.sort == "modified" else ""
    lines = [
        f"Pages {result.offset + 1}-{last} of {result.total}{order} "
        "(links out/in, last modified UTC):"
    ]
    for row in result.pages:
        mark = ", placeholder" if row.is_placeholder else ""
        when = f", {row.modified}" if row.modified else ""
        lines.append(f"- {row.slug}: {row.title} ({row.links_out}/{row.links_in}{when}{mark})")
    return "\n".join(lines + _more(result))


def hits(result: SearchResults) -> str:
    best = f"The best {_plural(result.total, 'page')} for {result.query!r}"
    if not result.hits:
        if result.total:
            return f"{best} are all before offset {result.offset}."
        return f"No page holds any word of {result.query!r}. Try other words, or search_titles."
    shown = ""
    if result.offset or len(result.hits) < result.total:
        shown = f" (hits {result.offset + 1}-{result.offset + len(result.hits)} of them)"
    lines = [f"{best}{shown}, best first:"]
    lines += [
        f"- {hit.slug} ({hit.title})" + (f": {hit.snippet}" if hit.snippet else "")
        for hit in result.hits
    ]
    return "\n".join(lines + _more(result))


def title_matches(result: TitleMatches) -> str:
    if not result.total:
        return f"No page is called anything like {result.query!r}."
    shown = _rows(result, len(result.matches), result.total)
    lines = [f"{_plural(result.total, 'page')} named like {result.query!r}{shown}:"]
    for match in result.matches:
        mark = ", placeholder" if match.is_placeholder else ""
        lines.append(f"- {match.slug} ({match.title}; {match.match}{mark})")
    return "\n".join(lines + _more(result))


def _line_refs(rows: list[Backlink]) -> list[str]:
    return [
        f"- {row.slug}:{row.line}: {row.text}" + (f" ({row.links} links)" if row.links > 1 else "")
        for row in rows
    ]


def backlinks(result: Backlinks) -> str:
    links, pages = _plural(result.links, "link"), _plural(result.linking_pages, "page")
    where = _plural(result.total, "line") + _rows(result, len(result.linked), result.total)
    lines = [f"{links} to {result.slug} ({result.title}) from {pages}, on {where}:"]
    lines += _line_refs(result.linked)
    if result.unlinked is not None:  # rows of the same list, after the links
        total, shown = result.unlinked_total or 0, len(result.unlinked)
        start = max(result.offset, result.total)
        rows = ""
        if shown < total:
            rows = f" (rows {start + 1}-{start + shown})" if shown else " (none in these rows)"
        mentions = _plural(total, "unlinked mention")
        lines += [f"{mentions} of {result.title!r}{rows}:", *_line_refs(result.unlinked)]
    return "\n".join(lines + _more(result))


def _counts(rows: list[LinkedCount]) -> list[str]:
    return [f"- {row.slug} ({row.title}): {row.count}" for row in rows] or ["- none"]


def graph(result: GraphResult) -> str:
    if (hood := result.neighbourhood) is not None:
        lines = [
            f"Within {_plural(hood.depth, 'link')} of {hood.center}: "
            f"{_plural(hood.node_count, 'page')}, {_plural(hood.edge_count, 'link')}.",
            f"Pages (hops away){_rows(result, len(hood.nodes), hood.node_count)}:",
        ]
        for node in hood.nodes:
            mark = ", placeholder" if node.is_placeholder else ""
            lines.append(f"- {node.slug} ({node.title}; {node.depth}{mark})")
        paged = len(hood.nodes) < hood.node_count
        lines += [
            "Links among the pages so far that reach these:" if paged else "Links:",
            *(f"- {e.source} -> {e.target}" for e in hood.edges),
        ]
        return "\n".join(lines + _more(result))
    shape = result.shape
    assert shape is not None
    lines = [
        f"{_plural(shape.pages, 'page')}, {_plural(shape.placeholders, 'placeholder')}, "
        f"{_plural(shape.links, 'link')}, {_plural(shape.orphan_count, 'orphan')}, "
        f"{shape.unreferenced_count} unreferenced.",
        "Most linked (pages linking in)"
        f"{_rows(result, len(shape.most_linked), shape.most_linked_count)}:",
        *_counts(shape.most_linked),
        "Unresolved link targets (placeholders; pages linking in)"
        f"{_rows(result, len(shape.unresolved), shape.unresolved_count)}:",
        *_counts(shape.unresolved),
    ]
    if shape.orphans:
        shown = _rows(result, len(shape.orphans), shape.orphan_count)
        lines.append(f"Orphans (no links in or out){shown}: {', '.join(shape.orphans)}")
    if shape.unreferenced:
        shown = _rows(result, len(shape.unreferenced), shape.unreferenced_count)
        lines.append(
            f"Unreferenced (no other page links to them){shown}: {', '.join(shape.unreferenced)}"
        )
    if result.other_vaults:
        lines.append(
            f"This is the vault {result.vault!r}; the others: {', '.join(result.other_vaults)} "
            "(name one as vault)."
        )
    return "\n".join(lines + _more(result))
