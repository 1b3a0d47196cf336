"""A plan of file changes made as one (see `journal`): carried out at the files, made
again harmlessly (a move only while its source is there, a temp file put in place only
while it is there), or undone before its commit point.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lore_mcp import audit
from lore_mcp.config import HISTORY_DIR, LORE_DIR
from lore_mcp.errors import VaultError
from lore_mcp.vault_ops.files import fsync_dir, page_entry

log = logging.getLogger(__name__)


@dataclass
class Plan:
    """File changes made as one: `moves` (old path, new path), then `folders` (old
    folder, new folder: each file of the old one moves into the new one), then `writes`
    (path after the moves: the temp file beside it holding its new bytes), then
    `deletes`. `kept` and `made` are what undoing it removes: the versions kept in the
    history for it and the folders made for it (deepest first), vault-relative."""

    moves: list[tuple[str, str]] = field(default_factory=list)
    folders: list[tuple[str, str]] = field(default_factory=list)
    writes: dict[str, str] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    made: list[str] = field(default_factory=list)

    def paths(self) -> list[str]:
        """Every page file the plan touches, before and after (not the folders, which
        are outside the vault's pages)."""
        return sorted({*(p for move in self.moves for p in move), *self.writes, *self.deletes})


def carry_out(root: Path, plan: Plan) -> None:
    """Make the moves, writes and deletes that are not made yet, each at its folder entry
    as it is now (a symlink leading out of the vault is neither followed nor written
    through)."""
    for old, new in plan.moves:
        source, dest = page_entry(root, old), page_entry(root, new)
        if source.exists():
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                source.replace(dest)
            except OSError as exc:
                raise VaultError(f"Cannot move {old!r} to {new!r}: {exc.strerror or exc}.") from exc
            fsync_dir(dest.parent)
    for old, new in plan.folders:
        _merge(root / old, root / new)
    for rel, temp in plan.writes.items():
        entry = page_entry(root, rel)
        try:
            (entry.parent / temp).replace(entry)
        except FileNotFoundError:  # put in place already, or lost in a power cut
            if audit.file_hash(entry) is None:
                log.warning("the new bytes of %s were lost before they were put in place", rel)
        except OSError as exc:
            raise VaultError(f"Cannot write {rel!r}: {exc.strerror or exc}.") from exc
    for folder in folders(root, plan.writes):
        fsync_dir(folder)
    for rel in plan.deletes:
        entry = page_entry(root, rel)
        try:
            entry.unlink(missing_ok=True)
        except OSError as exc:
            raise VaultError(f"Cannot delete {rel!r}: {exc.strerror or exc}.") from exc
        fsync_dir(entry.parent)


def folders(root: Path, rels: Iterable[str]) -> list[Path]:
    """The folders the page files `rels` are in, each once."""
    return list(dict.fromkeys(page_entry(root, rel).parent for rel in rels))


def undo(root: Path, plan: Plan) -> None:
    """Remove the temp files, kept versions and folders a write prepared."""
    for rel, temp in plan.writes.items():
        try:
            (page_entry(root, rel).parent / temp).unlink(missing_ok=True)
        except (OSError, VaultError) as exc:
            log.warning("could not remove the temp file of %s: %s", rel, exc)
    for kept in plan.kept:
        try:
            (root / kept).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("could not remove %s: %s", kept, exc)
        top, folder = root / LORE_DIR / HISTORY_DIR, (root / kept).parent
        with contextlib.suppress(OSError):  # the page's history folders, if it made them
            while folder != top and folder.is_relative_to(top):
                folder.rmdir()
                folder = folder.parent
    for made in plan.made:
        with contextlib.suppress(OSError):  # not empty: something else came to live there
            (root / made).rmdir()


def _merge(source: Path, dest: Path) -> None:
    """Move each file of the folder `source` into the folder `dest`, then remove `source`
    if that left it empty. A file whose name `dest` already holds stays where it is:
    nothing is overwritten."""
    try:
        entries = sorted(entry for entry in source.iterdir() if entry.is_file())
    except FileNotFoundError:
        return
    except OSError as exc:
        raise VaultError(f"Cannot read the folder {source.name!r}: {exc.strerror or exc}.") from exc
    if entries:
        try:
            dest.mkdir(parents=True, exist_ok=True)
            for entry in entries:
                if not (dest / entry.name).exists():
                    entry.replace(dest / entry.name)
        except OSError as exc:
            raise VaultError(
                f"Cannot move {source.name!r} to {dest.name!r}: {exc.strerror or exc}."
            ) from exc
        fsync_dir(dest)
        fsync_dir(source)
    try:
        source.rmdir()
    except OSError:
        return  # not empty: what stayed is still kept
    fsync_dir(source.parent)
