"""The kept versions of a page: listing them, reading one, and putting one back through
a save.

A version is named by its number, 1 the newest. The history follows a page through
renames (see `history`), so the versions of `Final` include those kept while it was
`Draft`; a deleted page's versions are found by the name it had.
"""

from __future__ import annotations

from typing import Literal

from lore_mcp.edits import Mode
from lore_mcp.errors import InvalidArgumentError, LooseNameError, PageNotFoundError, VaultError
from lore_mcp.models import PageHistory, PageVersion, PageView, SaveResult
from lore_mcp.slugs import parse_name, title_from_path
from lore_mcp.vault_ops import history, names
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.open import reading, writing
from lore_mcp.vault_ops.read import read_page, view_of
from lore_mcp.vault_ops.write import Write, save_page, write_page

SaveMode = Literal[Mode, "restore"]


def page_history(vault: AppState, name: str) -> PageHistory:
    """The kept versions of the page `name` (which may be deleted), newest first."""
    with reading(vault):
        rel = _history_path(vault, name)
        return PageHistory(
            path=rel, versions=[_described(vault, v) for v in history.versions(vault.root, rel)]
        )


def read_page_or_version(
    vault: AppState, name: str, offset: int = 0, column: int = 0, version: int | None = None
) -> PageView:
    """read_page's one operation: the page (see `read.read_page`), or with `version`
    that kept version of it (see `read_version`)."""
    if version is None:
        return read_page(vault, name, offset, column)
    return read_version(vault, name, version, offset, column)


def read_version(
    vault: AppState, name: str, version: int, offset: int = 0, column: int = 0
) -> PageView:
    """Kept version `version` of the page a read of `name` finds (or of the deleted page
    of that name), from line `offset` + 1, column `column` + 1 on, as `read_page` reads
    a page: its text, its hash, and which version it is."""
    return _read_version(vault, name, version, (offset, column))[0]


def version_source(vault: AppState, name: str, version: int) -> tuple[PageView, bytes]:
    """The whole version as `read_version` gives it, and its bytes as they are kept."""
    return _read_version(vault, name, version, (0, 0))


def _read_version(
    vault: AppState, name: str, version: int, at: tuple[int, int]
) -> tuple[PageView, bytes]:
    with reading(vault):
        slug, rel = _read_target(vault, name)
        kept = history.versions(vault.root, rel)
        chosen = _pick(rel, kept, version)
        data = _bytes(vault, chosen)
        view = view_of(slug, title_from_path(rel), rel, data, at=at)
        update = {"kept_versions": len(kept), "version": _described(vault, chosen)}
        return view.model_copy(update=update), data


def restore_page(
    vault: AppState,
    name: str,
    version: int = 1,
    *,
    door: str = "api",
    expected_hash: str | None = None,
) -> SaveResult:
    """Put kept version `version` of a page back, through a save (so links and index
    follow, and the bytes it replaces are kept in turn: a restore can be undone by
    restoring version 1). A deleted page comes back at the path it had."""
    with writing(vault):
        rel = _history_path(vault, name)
        chosen = _pick(rel, history.versions(vault.root, rel), version)
        target = names.for_writing(vault, "/" + rel)
        who = Write("restore_page", door, "restore")
        return write_page(vault, target, _bytes(vault, chosen), who, expected_hash)


def save_or_restore(
    vault: AppState,
    name: str,
    content: str | None,
    *,
    mode: SaveMode = "replace",
    old_text: str | None = None,
    heading: str | None = None,
    version: int | None = None,
    door: str = "api",
    expected_hash: str | None = None,
) -> SaveResult:
    """A save of `content` as `mode` says (see `write.save_page`), or with mode
    "restore" a restore of kept version `version` (1, the newest, by default), which
    takes no text. Arguments the mode does not take are refused."""
    if mode == "restore":
        if content or old_text is not None or heading is not None:
            raise InvalidArgumentError(
                "mode='restore' puts a kept version back as it was, so it takes no content, "
                "old_text or heading; send the name, mode='restore' and version. Nothing "
                "was written."
            )
        return restore_page(vault, name, version or 1, door=door, expected_hash=expected_hash)
    if content is None or version is not None:
        raise InvalidArgumentError(
            f"mode={mode!r} needs content (the text to write) and takes no version, which "
            "goes with mode='restore'. Nothing was written."
        )
    return save_page(
        vault,
        name,
        content,
        mode=mode,
        old_text=old_text,
        heading=heading,
        door=door,
        expected_hash=expected_hash,
    )


def _pick(rel: str, kept: list[history.Version], version: int) -> history.Version:
    """Version number `version` of those kept of `rel`, or an error that says which
    there are."""
    if 1 <= version <= len(kept):
        return kept[version - 1]
    if not kept:
        raise InvalidArgumentError(
            f"{rel!r} has no kept versions (no save, delete or rename has replaced it "
            f"yet), so there is no version {version}. Nothing was changed."
        )
    which = (
        "1 kept version, version 1"
        if len(kept) == 1
        else f"{len(kept)} kept versions: ask for one from 1 (the newest) to {len(kept)}"
    )
    raise InvalidArgumentError(
        f"{rel!r} has {which}; there is no version {version}. Nothing was changed."
    )


def _bytes(vault: AppState, version: history.Version) -> bytes:
    try:
        return version.read(vault.root)
    except OSError as exc:
        raise VaultError(
            f"Version {version.number} of {version.path!r} cannot be read "
            f"({exc.strerror or exc}); the history may have just been pruned. Read the "
            "page again to see what is kept."
        ) from exc


def _described(vault: AppState, version: history.Version) -> PageVersion:
    return PageVersion(
        number=version.number,
        time=version.time.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        tool=version.tool,
        door=version.door,
        size=version.size,
        hash=version.hash(vault.root),
        kept=version.kept,
    )


def _read_target(vault: AppState, name: str) -> tuple[str, str]:
    """The page a read of `name` finds, by slug, and the file whose versions it has: its
    own, or for a placeholder or a name no page has, the file a deleted page of that
    name had."""
    parsed = parse_name(name)
    try:
        key = names.find(vault, name).key
    except PageNotFoundError:
        key = parsed.key.path
    row = vault.index.pages.get(key)
    if row is not None and row.path is not None:
        return vault.handle(key), row.path
    if (found := history.find(vault.root, parsed.key)) is not None:
        return vault.handle(found), found
    if row is not None:
        raise InvalidArgumentError(
            f"{vault.handle(key)!r} is a placeholder (linked to, never written), so it has no "
            "kept versions."
        )
    raise PageNotFoundError(name, names.suggest(vault, parsed))


def _history_path(vault: AppState, name: str) -> str:
    """The page file whose history `name` asks for, named as a write names it: a page's
    file, or a file that has kept versions (a deleted page)."""
    try:
        target = names.for_writing(vault, name)
    except (PageNotFoundError, LooseNameError):
        target = None
    if target is not None and (target.exists or history.versions(vault.root, target.rel)):
        return target.rel
    parsed = parse_name(name)
    if (found := history.find(vault.root, parsed.key)) is not None:
        return found
    raise PageNotFoundError(name, names.suggest(vault, parsed))
