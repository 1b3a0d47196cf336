"""Reading, saving, deleting and restoring one page.

A write changes exactly the one file its name means (see `names`), keeps the bytes it
replaces in the history, then lets `sync` take the file in, so the index, the graph and
the placeholders follow as for any other change to the files.
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
    PageNotFoundError,
    UnsafePathError,
    VaultError,
)
from lore_mcp.markdown import split_lines
from lore_mcp.models import (
    DeleteResult,
    OutgoingLink,
    PageRef,
    PageView,
    SaveResult,
)
from lore_mcp.slugs import parse_name, slug_from_path, title_from_path
from lore_mcp.vault_ops import apply, files, history, names, sync
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
        if (rel := names.passed_over(vault, name)) is not None:
            found = read_bytes(vault, rel)
            view = _view(slug_from_path(rel), title_from_path(rel), rel, found, at=(offset, column))
            holder = vault.index.pages.get(view.slug)
            holds = holder.path if holder else None
            return view.model_copy(update={"passed_over_for": holds}), found
        slug, alternatives = names.for_reading(vault, name)
        row = vault.index.pages.get(slug)
        if row is None:
            raise PageNotFoundError(name)
        data = None if row.path is None else read_bytes(vault, row.path)
        view = _view(slug, row.title, row.path, data, at=(offset, column))
        update = {
            "tags": vault.index.pages.tags_of(slug),
            "is_placeholder": row.is_placeholder,
            "backlinks": [
                PageRef(slug=s, title=vault.graph.title(s)) for s in vault.graph.linking_to(slug)
            ],
            "backlink_count": vault.graph.in_degree(slug),
            "links": [link for link in outgoing(vault, slug) if link.line > offset],
            "alternatives": alternatives,
        }
        return view.model_copy(update=update), data


def _plain(properties: dict[str, Any]) -> dict[str, Any]:
    """Properties as JSON holds them (YAML may hold other types)."""
    plain: dict[str, Any] = json.loads(json.dumps(properties, default=str))
    return plain


def _view(
    slug: str, title: str, rel: str | None, data: bytes | None, *, at: tuple[int, int]
) -> PageView:
    """The page's text from line `offset` + 1, column `column` + 1 (`at`) on, as the
    file holds it."""
    offset, column = at
    text, bad = ("", False) if data is None else files.decode(data)
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
        hash=None if data is None else files.content_hash(data),
        encoding_errors=bad,
    )


def outgoing(vault: AppState, slug: str) -> list[OutgoingLink]:
    """The links written in a page, with where each resolves."""
    return [
        OutgoingLink(
            target=link.target,
            slug=link.resolved,
            exists=link.resolved in vault.pages,
            line=link.line,
            ambiguous=link.ambiguous,
        )
        for link in vault.index.links.from_page(slug)
    ]


def read_bytes(vault: AppState, rel: str) -> bytes:
    """A page file's bytes; the file must be there."""
    data = current_bytes(vault, rel)
    if data is None:
        raise FileVanishedError(rel)
    return data


def read_text(vault: AppState, rel: str) -> str:
    """A page file's text (a byte-order mark dropped; bytes that are not UTF-8 replaced)."""
    return files.decode(read_bytes(vault, rel))[0].removeprefix("\ufeff")


def current_bytes(vault: AppState, rel: str) -> bytes | None:
    """What the file holds now; None when there is no file."""
    try:
        return (vault.root / rel).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise VaultError(f"Cannot read {rel!r}: {exc.strerror or exc}.") from exc


def check_expected(rel: str, current: bytes | None, expected_hash: str | None) -> None:
    """Refuse a write when the caller's `expected_hash` is not the file's hash."""
    if expected_hash is None:
        return
    now = None if current is None else files.content_hash(current)
    if now != expected_hash.strip().lower().removeprefix("sha256:"):
        raise ConflictError(rel, now)


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
    """A new file must land inside the vault, not through a folder symlink leading out."""
    existing = (vault.root / rel).parent
    while not existing.exists() and existing != vault.root:
        existing = existing.parent
    if not files.inside(vault.root, existing):
        raise UnsafePathError(
            f"{rel!r} would be written outside the vault (a folder on its path is a "
            "symbolic link that leads out). Choose a name in another folder."
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
        current = current_bytes(vault, target.rel)
        check_expected(target.rel, current, expected_hash)
        if edit.partial:
            data = encode(vault, edits.apply(edit, _editable(target, current, edit)))
        return _put(vault, target, current, data, Write("save_page", door, mode))


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
    if not target.exists and (vault.root / target.rel).exists():
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
    write, take it in."""
    if not target.exists:
        check_inside(vault, target.rel)
    applied = apply.Applied()
    kept = None
    if current != data:
        if current is not None:
            kept = history.keep(vault.root, target.rel, current, who.tool, who.door)
        vault.undo.record(vault.root, {target.rel: current}, [kept])
        try:
            files.atomic_write(vault.root / target.rel, data)
        except VaultError:
            if kept is not None:
                history.discard(vault.root, kept)
            raise
        applied = sync.sync_files(vault, [target.rel])
    # Read before the audit record: damage this read finds puts the file back and runs
    # the write again (see `heal`), which must not be recorded twice.
    links = outgoing(vault, target.slug) if target.indexed else []
    if current != data:
        audit.append(
            vault.root,
            audit.AuditRecord(
                door=who.door,
                tool=who.tool,
                mode=who.mode,
                slug=target.slug,
                path=target.rel,
                before=None if current is None else audit.data_hash(current),
                after=audit.data_hash(data),
                placeholders_created=applied.created,
                placeholders_removed=applied.removed,
            ),
        )
    return SaveResult(
        slug=target.slug,
        title=title_from_path(target.rel),
        path=target.rel,
        created=current is None and not target.placeholder,
        promoted=current is None and target.placeholder,
        unchanged=current == data,
        mode=who.mode or "replace",
        hash=files.content_hash(data),
        history_path=kept,
        links=links,
        placeholders_created=applied.created,
        placeholders_removed=applied.removed,
    )


def delete_page(
    vault: AppState, name: str, *, door: str = "api", expected_hash: str | None = None
) -> DeleteResult:
    """Delete the page's file, its last version kept in the history, and drop it from
    index and graph. If other pages still link to it, it stays on as a placeholder."""
    with writing(vault):
        parsed = parse_name(name)
        if parsed.key.path in vault.placeholders and parsed.key.path not in vault.pages:
            raise VaultError(
                f"{name!r} is a placeholder: no file exists, so there is nothing to "
                "delete. It goes away by itself when no page links to it."
            )
        target = names.existing(vault, name)
        current = read_bytes(vault, target.rel)
        check_expected(target.rel, current, expected_hash)
        kept = history.keep(vault.root, target.rel, current, "delete_page", door)
        vault.undo.record(vault.root, {target.rel: current}, [kept])
        try:
            (vault.root / target.rel).unlink()
        except OSError as exc:
            history.discard(vault.root, kept)
            raise VaultError(f"Cannot delete {target.rel!r}: {exc.strerror or exc}.") from exc
        files.fsync_dir((vault.root / target.rel).parent)
        applied = sync.sync_files(vault, [target.rel])
        audit.append(
            vault.root,
            audit.AuditRecord(
                door=door,
                tool="delete_page",
                slug=target.slug,
                path=target.rel,
                before=audit.data_hash(current),
                after=None,
                history_path=kept,
                placeholders_created=applied.created,
                placeholders_removed=applied.removed,
            ),
        )
        return DeleteResult(
            slug=target.slug,
            path=target.rel,
            history_path=kept,
            became_placeholder=target.slug in vault.placeholders,
            placeholders_created=applied.created,
            placeholders_removed=applied.removed,
        )
