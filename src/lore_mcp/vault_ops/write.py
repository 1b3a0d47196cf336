"""Saving, deleting and writing one page.

A write changes exactly the one file its name means (see `names`), keeps the bytes it
replaces in the history, and puts the new file into the index, the graph and the
placeholders as `apply` does for any change to the files: all or nothing, the audit
record written first (see `journal`).
"""

from __future__ import annotations

from dataclasses import dataclass

from lore_mcp import audit, edits
from lore_mcp.errors import (
    ConflictError,
    ContentTooLargeError,
    InvalidArgumentError,
    RenamedPageError,
    UnsafePathError,
    VaultError,
)
from lore_mcp.models import DeleteResult, OutgoingLink, SaveResult
from lore_mcp.slugs import title_from_path
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
from lore_mcp.vault_ops.open import writing
from lore_mcp.vault_ops.read import current_bytes, outgoing, read_bytes


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
