"""The kept versions of a page: listing them, and putting one back through a save."""

from __future__ import annotations

from lore_mcp.errors import InvalidArgumentError, PageNotFoundError
from lore_mcp.models import PageHistory, PageVersion, SaveResult
from lore_mcp.slugs import parse_name
from lore_mcp.vault_ops import history, names
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.open import reading, writing
from lore_mcp.vault_ops.pages import Write, write_page


def page_history(vault: AppState, name: str) -> PageHistory:
    """The kept versions of the page `name` (which may be deleted), newest first."""
    with reading(vault):
        rel = _history_path(vault, name)
        return PageHistory(
            path=rel,
            versions=[
                PageVersion(
                    number=v.number,
                    time=v.time.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    tool=v.tool,
                    door=v.door,
                    size=v.size,
                    hash=v.hash(vault.root),
                    kept=v.kept,
                )
                for v in history.versions(vault.root, rel)
            ],
        )


def restore_page(vault: AppState, name: str, version: int = 1, *, door: str = "api") -> SaveResult:
    """Put a kept version of a page back, through a save (so links and index follow, and
    the version it replaces is kept in turn)."""
    with writing(vault):
        rel = _history_path(vault, name)
        kept = history.versions(vault.root, rel)
        if not 1 <= version <= len(kept):
            raise InvalidArgumentError(
                f"{rel!r} has {len(kept)} kept versions; ask for one from 1 (the newest) "
                f"to {len(kept)}."
            )
        target = names.for_writing(vault, "/" + rel)
        return write_page(
            vault, target, kept[version - 1].read(vault.root), Write("restore_page", door), None
        )


def _history_path(vault: AppState, name: str) -> str:
    """The page file whose history `name` asks for, named as a write names it: a page's
    file, or a file that has kept versions (a deleted page)."""
    try:
        target = names.for_writing(vault, name)
    except PageNotFoundError:
        target = None
    if target is not None and (target.exists or history.versions(vault.root, target.rel)):
        return target.rel
    if (found := history.find(vault.root, parse_name(name).key.path)) is not None:
        return found
    raise PageNotFoundError(name, names.suggest(vault, parse_name(name).key))
