"""Reading, saving, deleting and restoring one page.

A write changes exactly the one file its name means (see `names`), keeps the bytes it
replaces in the history, and puts the new file into the index, the graph and the
placeholders as `apply` does for any change to the files: all or nothing, the audit
record written first (see `journal`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lore_mcp import audit, edits, frontmatter
from lore_mcp.errors import (
    ConflictError,
    ContentTooLargeError,
    FileVanishedError,
    InvalidArgumentError,
    LeadsOutsideError,
    PageNotFoundError,
    RenamedPageError,
    UnsafePathError,
    VaultError,
)
from lore_mcp.index import LinkRow
from lore_mcp.markdown import split_lines
from lore_mcp.models import (
    DeleteResult,
    OutgoingLink,
    PageRef,
    PageView,
    SaveResult,
)
from lore_mcp.slugs import path_key, title_from_path
from lore_mcp.vault_ops import (
    apply,
    files,
    history,
    journal,
    names,
    outside,
    pagefile,
    paths,
    sync,
)
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.open import reading, writing


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


def check_expected(rel: str, current: bytes | None, expected_hash: str | None) -> None:
    """Refuse a write when the caller's `expected_hash` is not the file's hash; an empty
    one means the file must not exist yet."""
    if expected_hash is None:
        return
    now = None if current is None else pagefile.content_hash(current)
    wanted = expected_hash.strip().lower().removeprefix("sha256:")
    if now != (wanted or None):
        raise ConflictError(rel, now, wanted_new=not wanted)


def encode(vault: AppState, content: str) -> bytes:
    if "\x00" in content:
        raise InvalidArgumentError("Content cannot contain NUL bytes.")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            "Content is not valid Unicode (it holds a lone surrogate); send UTF-8 text."
        ) from None
    if len(data) > vault.max_content_bytes:
        raise ContentTooLargeError(len(data), vault.max_content_bytes)
    return data


def check_inside(vault: AppState, rel: str) -> None:
    """A new file must land inside the vault, not through a folder symlink leading out,
    and not where an ignore file leaves it out of the vault (it would be no page)."""
    files.page_entry(vault.root, rel)
    if vault.ignores.ignored(rel):
        raise UnsafePathError(
            f"{rel!r} is left out of the vault by a .gitignore or .loreignore file, so a "
            "page there would not be one; nothing was written. Choose another folder or name."
        )


@dataclass(frozen=True, slots=True)
class Write:
    """Who writes, for the history and the audit log; for a save, in which mode."""

    tool: str
    door: str
    mode: str | None = None


def save_page(
    vault: AppState,
    name: str,
    content: str,
    *,
    mode: edits.Mode = "replace",
    old_text: str | None = None,
    heading: str | None = None,
    door: str = "api",
    expected_hash: str | None = None,
) -> SaveResult:
    """Change the page `name` as `mode` says (see `edits`): replace its text with
    `content`, append or prepend `content`, replace the one occurrence of `old_text`
    with it, or the body of the section under `heading`. Replace, append and prepend
    create a missing page or fill a placeholder. Then reindex it in the same call. A
    change is kept in the history and recorded in the audit log."""
    edit = edits.Edit(mode, content, old_text, heading)
    with writing(vault):
        data = encode(vault, content)
        target = _target(vault, name)
        if edit.partial and expected_hash is None and not target.exists:
            _refuse_renamed(vault, name, mode, target)
        current = current_bytes(vault, target.rel)
        check_expected(target.rel, current, expected_hash)
        if edit.partial:
            data = encode(vault, edits.apply(edit, _editable(target, current, edit)))
        return _put(vault, target, current, data, Write("save_page", door, mode))


def _refuse_renamed(vault: AppState, name: str, mode: str, target: names.Target) -> None:
    """Refuse a change to part of a page by a name no page has now, if a rename took the
    page that had it away (another client's, perhaps one that raced this call): the part
    would become a page of its own at the old name, beside the renamed page."""
    if target.placeholder or (moved := names.renamed_to(vault, target.rel)) is None:
        return
    raise RenamedPageError(name, mode, target.rel, vault.handle(moved), moved)


def _editable(target: names.Target, current: bytes | None, edit: edits.Edit) -> str:
    """The text a partial edit changes: the file's, which must be UTF-8, and for edit and
    section must be there."""
    if current is None:
        if edit.mode in ("append", "prepend"):
            return ""
        what = "old_text" if edit.mode == "edit" else "section"
        raise InvalidArgumentError(
            f"{target.rel!r} does not exist yet, so it has no {what} to replace; nothing "
            "was written. Create it with mode='replace' (or 'append')."
        )
    try:
        return current.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"{target.rel!r} is not valid UTF-8 (the byte at offset {exc.start} does not "
            f"decode), so mode={edit.mode!r} cannot change it without replacing such bytes "
            "with U+FFFD; nothing was written. Save the page whole with mode='replace' "
            "(the history keeps its bytes as they were), or fix its encoding in an editor."
        ) from None


def _target(vault: AppState, name: str) -> names.Target:
    """The file a save of `name` writes; a file written outside and not indexed yet is
    taken in first."""
    target = names.for_writing(vault, name)
    if not target.exists and paths.on_disk(vault.root, target.rel).exists():
        sync.sync_files(vault, [target.rel])
        target = names.for_writing(vault, name)
        if not target.exists:
            raise VaultError(
                f"A file already exists at {target.rel!r} but is not indexed (it is too large "
                "or a symbolic link leading outside the vault; `lore doctor` says which). It "
                "was left as it is; choose another name."
            )
    return target


def write_page(
    vault: AppState, target: names.Target, data: bytes, who: Write, expected_hash: str | None
) -> SaveResult:
    """Put `data` in the target's file, unless it changed from `expected_hash`."""
    current = current_bytes(vault, target.rel)
    check_expected(target.rel, current, expected_hash)
    return _put(vault, target, current, data, who)


def _put(
    vault: AppState, target: names.Target, current: bytes | None, data: bytes, who: Write
) -> SaveResult:
    """Put `data` in the target's file, which holds `current`: keep what it replaces,
    write, take it in, all or nothing (see `journal`)."""
    if not target.exists:
        check_inside(vault, target.rel)
    applied = apply.Applied()
    kept = None
    links: list[OutgoingLink] | None = None
    if current != data:
        with journal.Change(vault) as change:
            if current is not None:
                kept = history.keep(vault.root, target.rel, current, who.tool, who.door)
                change.keep(kept)
            st = change.write(target.rel, data)
            page = pagefile.parse(target.rel, data, st.st_size, st.st_mtime_ns, vault.others)
            applied = apply.apply(vault, [page], coming=[target.rel])
            # Read before the commit point: damage found after it would leave the write
            # made, and one found before it lets the write run again whole (see `heal`).
            links = outgoing(vault, target.rel)
            change.commit(
                audit.AuditRecord(
                    door=who.door,
                    tool=who.tool,
                    mode=who.mode,
                    slug=vault.handle(target.rel),
                    path=target.rel,
                    before=None if current is None else audit.data_hash(current),
                    after=audit.data_hash(data),
                    placeholders_created=vault.handles(applied.created),
                    placeholders_removed=vault.handles(applied.removed),
                )
            )
        # A copy of what was written, for the history of a later outside edit.
        outside.remember(vault, [outside.Change(target.rel, None, pagefile.content_hash(data))])
    return SaveResult(
        slug=vault.handle(target.rel),
        title=title_from_path(target.rel),
        path=target.rel,
        created=current is None and not target.placeholder,
        promoted=current is None and target.placeholder,
        unchanged=current == data,
        mode=who.mode or "replace",
        hash=pagefile.content_hash(data),
        history_path=kept,
        links=outgoing(vault, target.rel) if links is None else links,
        placeholders_created=vault.handles(applied.created),
        placeholders_removed=vault.handles(applied.removed),
    )


def delete_page(
    vault: AppState, name: str, *, door: str = "api", expected_hash: str | None = None
) -> DeleteResult:
    """Delete the page's file, its last version kept in the history, and drop it from
    index and graph, all or nothing (see `journal`). If other pages still link to it, it
    stays on as a placeholder."""
    with writing(vault):
        target = names.existing(vault, name, placeholders_too=True)
        if not target.exists:
            raise VaultError(
                f"{name!r} is a placeholder: no file exists, so there is nothing to "
                "delete. It goes away by itself when no page links to it."
            )
        handle = vault.handle(target.rel)
        current = read_bytes(vault, target.rel)
        check_expected(target.rel, current, expected_hash)
        with journal.Change(vault) as change:
            kept = history.keep(vault.root, target.rel, current, "delete_page", door)
            change.keep(kept)
            change.delete(target.rel)
            applied = apply.apply(vault, [], [target.rel])
            change.commit(
                audit.AuditRecord(
                    door=door,
                    tool="delete_page",
                    slug=handle,
                    path=target.rel,
                    before=audit.data_hash(current),
                    after=None,
                    history_path=kept,
                    placeholders_created=vault.handles(applied.created),
                    placeholders_removed=vault.handles(applied.removed),
                )
            )
        outside.remember(vault, [outside.Change(target.rel, None, None)])
        return DeleteResult(
            slug=handle,
            path=target.rel,
            history_path=kept,
            became_placeholder=bool(applied.created),
            placeholders_created=vault.handles(applied.created),
            placeholders_removed=vault.handles(applied.removed),
        )
