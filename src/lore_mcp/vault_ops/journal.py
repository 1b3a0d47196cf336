"""A rename, written down before any file changes: a process killed part-way leaves a
vault that the next start (or the next write) finishes renaming, never half renamed.

The record (`.lore/rename.json`) holds the moves, the folders whose files move with
them (the renamed page's history), and the new bytes of every file the rename writes.
Carrying it out again is harmless: a move is made only while its source is still there,
a folder's file moves only while its name is free in the other folder, and a file is
written only while its bytes differ.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from lore_mcp.config import JOURNAL_FILE, LORE_DIR
from lore_mcp.errors import VaultError
from lore_mcp.vault_ops.files import atomic_write, fsync_dir, page_entry, read_regular
from lore_mcp.vault_ops.paths import real_path

log = logging.getLogger(__name__)


@dataclass
class Plan:
    """File changes made as one: `moves` (old path, new path), then `folders` (old
    folder, new folder: each file of the old one moves into the new one), then `writes`
    (path after the moves, new bytes)."""

    moves: list[tuple[str, str]] = field(default_factory=list)
    writes: dict[str, bytes] = field(default_factory=dict)
    folders: list[tuple[str, str]] = field(default_factory=list)

    def paths(self) -> list[str]:
        """Every page file the plan touches, before and after (not the folders, which
        are outside the vault's pages)."""
        return sorted({*(p for move in self.moves for p in move), *self.writes})


def _record(root: Path) -> Path:
    return root / LORE_DIR / JOURNAL_FILE


def run(root: Path, plan: Plan) -> None:
    """Write the record, carry the plan out, then drop the record."""
    document = {
        "moves": plan.moves,
        "folders": plan.folders,
        "writes": {
            rel: base64.b64encode(data).decode("ascii") for rel, data in plan.writes.items()
        },
    }
    atomic_write(_record(root), json.dumps(document).encode("utf-8"))
    _carry_out(root, plan)
    _record(root).unlink()
    fsync_dir(_record(root).parent)


def pending(root: Path) -> bool:
    """Whether a rename's record is there: it was begun and not finished."""
    return _record(root).exists()


def recover(root: Path) -> list[str]:
    """Finish a rename that a killed process left part-way; the files it touched."""
    record = _record(root)
    try:
        document = json.loads(record.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise VaultError(
            f"The record of an unfinished rename, {record}, cannot be read ({exc}). Look at "
            "it, finish or undo the rename by hand, and delete the file."
        ) from exc
    plan = Plan(
        [(old, new) for old, new in document["moves"]],
        {rel: base64.b64decode(data) for rel, data in document["writes"].items()},
        [(old, new) for old, new in document.get("folders", [])],  # older records have none
    )
    log.warning(
        "finishing a rename that was interrupted: %s",
        ", ".join(f"{a} -> {b}" for a, b in plan.moves),
    )
    _carry_out(root, plan)
    record.unlink()
    return plan.paths()


def _carry_out(root: Path, plan: Plan) -> None:
    """Make the moves and writes that are not made yet, each at its folder entry as it is
    now (a symlink leading out of the vault is neither followed nor written through)."""
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
    for rel, data in plan.writes.items():
        path = page_entry(root, rel)
        real = real_path(root, rel)
        try:
            current = None if real is None else read_regular(real)[1]
        except OSError:
            current = None
        if current != data:
            atomic_write(path, data)


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
