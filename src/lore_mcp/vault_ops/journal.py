"""A write, made all or nothing: the files and the audit log agree whatever happens.

A save, delete or rename first does everything that can run out of space or fail: it
keeps the bytes it replaces in the history, writes each new file's bytes to a hidden
temp file beside it (fsynced), and puts the change in the index (not committed yet).
Then it writes down what is left to do (`.lore/journal.json`: the moves, the temp files
to put in place, the files to remove, and the audit record), and appends the audit
record. **The appended record is the commit point.** What follows (moving files,
renaming temp files over pages, removing them) needs no space. So:

- a failure before the commit point is undone (leaving a `Change` runs `plan.undo`:
  temp files, kept versions and folders made for the write removed), and the write
  fails having changed nothing;
  an audit log that cannot be written is such a failure;
- a process killed before it leaves the journal and no record: the next write or start
  undoes it; killed after, the record is there and the next write or start finishes it
  (`recovery.recover`). Carrying a journal out again is harmless: a move is made only
  while its source is there, a temp file put in place only while it is there;
- a vault opened read-only leaves a journal as it is, and says so (`recovery.pending`).

A process killed after keeping a version and before writing the journal leaves that
version kept: a copy of what the page still holds, nothing lost.

A journal of the older kind (`.lore/rename.json`: a rename with its new bytes, written
before 0.3) is finished as it was, and gets its audit record then.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from lore_mcp import audit
from lore_mcp.config import JOURNAL_FILE, LORE_DIR
from lore_mcp.errors import LoreError, VaultError
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import atomic_write, fsync_dir, page_entry, prepare
from lore_mcp.vault_ops.plan import Plan, carry_out, folders, undo

log = logging.getLogger(__name__)


class Change:
    """One write being made, as a context: its plan, built step by step, then `commit`.
    Leaving it with an exception before the commit point takes back what was prepared."""

    def __init__(self, vault: AppState) -> None:
        self.vault = vault
        self.root = vault.root
        self.plan = Plan()
        self.committed = False

    def keep(self, kept: str) -> None:
        """A version kept in the history for this write."""
        self.plan.kept.append(kept)

    def move(self, old: str, new: str) -> None:
        """Move page path `old` to `new`; the folders it goes to are made now."""
        self.make_folders(page_entry(self.root, new).parent)
        self.plan.moves.append((old, new))

    def delete(self, rel: str) -> None:
        """Remove the page file `rel`."""
        entry = page_entry(self.root, rel)
        if not os.access(entry.parent, os.W_OK):
            raise VaultError(f"Cannot delete {rel!r}: its folder is not writable.")
        self.plan.deletes.append(rel)

    def write(self, rel: str, data: bytes, moved_from: str | None = None) -> os.stat_result:
        """Put `data` in a temp file beside page path `rel` (its path after the moves,
        from `moved_from`, whose mode it keeps); the temp file's stat, which the page
        file has once the temp is put in place."""
        entry = page_entry(self.root, rel)
        self.make_folders(entry.parent)
        mode_of = None if moved_from is None else page_entry(self.root, moved_from)
        temp, st = prepare(entry, data, mode_of)
        self.plan.writes[rel] = temp.name
        return st

    def make_folders(self, folder: Path) -> None:
        """Make `folder` and the folders above it that are missing (undone with it)."""
        missing = []
        while not folder.exists() and folder != self.root:
            missing.append(folder)
            folder = folder.parent
        for path in reversed(missing):
            try:
                path.mkdir()
            except OSError as exc:
                raise VaultError(
                    f"Cannot make the folder {path.name!r}: {exc.strerror or exc}."
                ) from exc
            self.plan.made.insert(0, path.relative_to(self.root).as_posix())

    def commit(self, record: audit.AuditRecord) -> None:
        """Write the journal down, append `record` to the audit log (the commit point),
        carry the plan out, drop the journal. Before the commit point a failure raises
        VaultError and the caller undoes; after it, the journal stays for the next
        write or start to finish, and the error says so."""
        line = record.model_dump_json().encode("utf-8")
        for folder in folders(self.root, self.plan.writes):  # the temp files' names too
            fsync_dir(folder)  # outlast a power loss, as the journal does
        atomic_write(record_path(self.root), _document(self.plan, line))
        try:
            audit.append_line(self.root, line)
        except OSError as exc:
            drop(self.root, record_path(self.root))
            where = audit.log_path(self.root).relative_to(self.root).as_posix()
            raise VaultError(
                f"The vault's audit log ({where}) cannot be written ({exc.strerror or exc}), "
                "and no write is made without its record. Nothing was changed; make it "
                "writable (or free some disk space) and try again."
            ) from exc
        self.committed = True
        self.vault.unindexed.update(self.plan.paths())  # until the index commits
        try:
            carry_out(self.root, self.plan)
        except VaultError as exc:
            raise VaultError(
                f"The change is recorded in the audit log, but the files could not all be "
                f"changed yet ({exc}); it will be finished by the next write or start of "
                "the vault. Do not repeat it."
            ) from exc
        drop(self.root, record_path(self.root))

    def __enter__(self) -> Change:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        """A failure before the commit point takes back what was prepared, and a
        LoreError then says that nothing was changed."""
        if exc is None or self.committed:
            return
        undo(self.root, self.plan)
        if isinstance(exc, LoreError) and "nothing was changed" not in exc.message.lower():
            exc.message = f"{exc.message.rstrip()} Nothing was changed."


def record_path(root: Path) -> Path:
    return root / LORE_DIR / JOURNAL_FILE


def _document(plan: Plan, line: bytes) -> bytes:
    document = {
        "moves": plan.moves,
        "folders": plan.folders,
        "writes": plan.writes,
        "deletes": plan.deletes,
        "kept": plan.kept,
        "made": plan.made,
        "audit": line.decode("utf-8"),
    }
    return json.dumps(document).encode("utf-8")


def drop(root: Path, record: Path) -> None:
    try:
        record.unlink(missing_ok=True)
    except OSError as exc:  # the next write finds it carried out and drops it then
        log.warning("could not remove %s: %s", record, exc)
    fsync_dir(record.parent)
