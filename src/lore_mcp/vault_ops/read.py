"""Reading one page: its text from a line and column on, exactly as its file holds it,
with its backlinks and the links it shows; and a page file's bytes as they are now, for
the reads and for the writes that check them first (see `write`).
"""

from __future__ import annotations

import json
from typing import Any

from lore_mcp import frontmatter
from lore_mcp.errors import (
    FileVanishedError,
    InvalidArgumentError,
    LeadsOutsideError,
    PageNotFoundError,
    VaultError,
)
from lore_mcp.index import LinkRow
from lore_mcp.markdown import split_lines
from lore_mcp.models import OutgoingLink, PageRef, PageView
from lore_mcp.slugs import path_key, title_from_path
from lore_mcp.vault_ops import history, names, pagefile, paths
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.open import reading


def read_page(vault: AppState, name: str, offset: int = 0, column: int = 0) -> PageView:
    """A page's text from line `offset` + 1, column `column` + 1 on (0, 0: all of it),
    exactly as in its file; its backlinks, and the links on the lines it shows. A
    placeholder reads as empty content plus who links to it."""
    return _read(vault, name, offset, column)[0]


def read_source(vault: AppState, name: str) -> tuple[PageView, bytes | None]:
    """The whole page as `read_page` gives it, and its file's bytes as they are (None
    for a placeholder), read together."""
    return _read(vault, name, 0, 0)


def _read(vault: AppState, name: str, offset: int, column: int) -> tuple[PageView, bytes | None]:
    with reading(vault):
        found = names.find(vault, name)
        row = vault.index.pages.get(found.key)
        if row is None:
            raise PageNotFoundError(name)
        data = None if row.path is None else read_bytes(vault, row.path)
        view = view_of(vault.handle(found.key), row.title, row.path, data, at=(offset, column))
        shown = [link for link in outgoing(vault, found.key) if link.line > offset]
        update = {
            "tags": vault.index.pages.tags_of(found.key),
            "is_placeholder": row.is_placeholder,
            "backlinks": [
                PageRef(slug=vault.handle(s), title=vault.graph.title(s))
                for s in vault.graph.linking_to(found.key)
            ],
            "backlink_count": vault.graph.in_degree(found.key),
            "links": shown,
            "link_count": len(shown),
            "matched_by": found.rule,
            "alternatives": found.alternatives,
            "kept_versions": history.count(vault.root, row.path, found.key),
        }
        return view.model_copy(update=update), data


def _plain(properties: dict[str, Any]) -> dict[str, Any]:
    """Properties as JSON holds them (YAML may hold other types)."""
    plain: dict[str, Any] = json.loads(json.dumps(properties, default=str))
    return plain


def view_of(
    slug: str, title: str, rel: str | None, data: bytes | None, *, at: tuple[int, int]
) -> PageView:
    """The page's text from line `offset` + 1, column `column` + 1 (`at`) on, as the
    file holds it (or as a kept version of it holds it: `data`)."""
    offset, column = at
    text, bad = ("", False) if data is None else pagefile.decode(data)
    lines = split_lines(text)
    if offset < 0 or (offset and offset >= len(lines)):
        raise InvalidArgumentError(
            f"offset={offset} is past the end: {slug!r} has {len(lines)} lines. "
            "Read it from offset=0."
        )
    line = lines[offset] if lines else ""
    if column < 0 or (column and column >= len(line)):
        raise InvalidArgumentError(
            f"column={column} is past the end of line {offset + 1} of {slug!r}, which has "
            f"{len(line)} characters (its line break included). Read it from column=0."
        )
    properties = frontmatter.split(text)
    return PageView(
        slug=slug,
        title=title,
        path=rel,
        content="".join(lines[offset:])[column:] if offset or column else text,
        offset=offset,
        column=column,
        total_lines=len(lines),
        is_placeholder=data is None,
        backlinks=[],
        links=[],
        properties=_plain(properties.properties),
        aliases=properties.aliases,
        hash=None if data is None else pagefile.content_hash(data),
        encoding_errors=bad,
    )


def outgoing(vault: AppState, page: str) -> list[OutgoingLink]:
    """The links written in a page, with where each resolves, and for a link Obsidian
    will not follow (a loose one, or an alias) the link to write instead."""
    return [
        OutgoingLink(
            target=link.target,
            slug=vault.handle(link.resolved),
            exists=link.resolved in vault.pages,
            line=link.line,
            ambiguous=link.ambiguous,
            loose=link.loose,
            note=link_advice(vault, link),
        )
        for link in vault.index.links.from_page(page)
    ]


def link_advice(vault: AppState, link: LinkRow) -> str | None:
    """What to write instead of a link Obsidian will not follow: one only the slug form
    resolves (`[[my_page]]` for `My Page.md`), or a bare alias."""
    if link.loose:
        form = shortest_link(vault, link.resolved)
        return f"Obsidian will not follow this link; write [[{form}]]"
    if link.resolved in vault.placeholders and (pages := vault.aliases.pages(link.key)):
        alias = link.target.strip().rpartition("/")[2]
        return (
            f"An alias does not resolve a link (Obsidian's rule); write "
            f"[[{shortest_link(vault, pages[0])}|{alias}]]"
        )
    return None


def shortest_link(vault: AppState, page: str) -> str:
    """The shortest link target that leads to `page` from anywhere: its file name when
    no other file has it, else its path (without `.md`)."""
    title = title_from_path(page)
    if vault.pages.titled(path_key(title)) == [page]:
        return title
    return page[:-3] if page.lower().endswith(".md") else page


def read_bytes(vault: AppState, rel: str) -> bytes:
    """A page file's bytes; the file must be there."""
    data = current_bytes(vault, rel)
    if data is None:
        raise FileVanishedError(rel)
    return data


def read_text(vault: AppState, rel: str) -> str:
    """A page file's text (a byte-order mark dropped; bytes that are not UTF-8 replaced)."""
    return pagefile.decode(read_bytes(vault, rel))[0].removeprefix("\ufeff")


def current_bytes(vault: AppState, rel: str) -> bytes | None:
    """What the file holds now; None when there is no file. Resolved now, not when it
    was indexed: where a symlink on the way leads out of the vault (a checkout may have
    made one since), LeadsOutsideError, and the callers' `reading` or `writing` takes
    the page out of the index."""
    path = paths.real_path(vault.root, rel)
    if path is None:
        raise LeadsOutsideError(rel)
    try:
        return pagefile.read_regular(path)[1]
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise VaultError(f"Cannot read {rel!r}: {exc.strerror or exc}.") from exc
