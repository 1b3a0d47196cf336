"""A write, made all or nothing: the files and the audit log agree whatever happens.

A save, delete or rename first does everything that can run out of space or fail: it
keeps the bytes it replaces in the history, writes each new file's bytes to a hidden
temp file beside it (fsynced), and puts the change in the index (not committed yet).
Then it writes down what is left to do (`.lore/journal.json`: the moves, the temp files
to put in place, the files to remove, and the audit record), and appends the audit
record. **The appended record is the commit point.** What follows (moving files,
renaming temp files over pages, removing them) needs no space. So:

- a failure before the commit point is undone (`Change.undo`: temp files, kept versions
  and folders made for the write removed: `Change`), and the write fails having changed
  nothing;
  an audit log that cannot be written is such a failure;
- a process killed before it leaves the journal and no record: the next write or start
  undoes it; killed after, the record is there and the next write or start finishes it
  (`recover`). Carrying a journal out again is harmless: a move is made only while its
  source is there, a temp file put in place only while it is there;
- a vault opened read-only leaves a journal as it is, and says so (`pending`).

A process killed after keeping a version and before writing the journal leaves that
version kept: a copy of what the page still holds, nothing lost.

A journal of the older kind (`.lore/rename.json`: a rename with its new bytes, written
before 0.3) is finished as it was, and gets its audit record then.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lore_mcp import audit
from lore_mcp.config import HISTORY_DIR, JOURNAL_FILE, LEGACY_JOURNAL_FILE, LORE_DIR
from lore_mcp.errors import LoreError, VaultError
from lore_mcp.slugs import slug_from_path
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import atomic_write, fsync_dir, page_entry, prepare
from lore_mcp.vault_ops.pagefile import read_regular
from lore_mcp.vault_ops.paths import real_path

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
        for folder in _folders(self.root, self.plan.writes):  # the temp files' names too
            fsync_dir(folder)  # outlast a power loss, as the journal does
        atomic_write(_record(self.root), _document(self.plan, line))
        try:
            audit.append_line(self.root, line)
        except OSError as exc:
            _drop(self.root, _record(self.root))
            where = audit.log_path(self.root).relative_to(self.root).as_posix()
            raise VaultError(
                f"The vault's audit log ({where}) cannot be written ({exc.strerror or exc}), "
                "and no write is made without its record. Nothing was changed; make it "
                "writable (or free some disk space) and try again."
            ) from exc
        self.committed = True
        self.vault.unindexed.update(self.plan.paths())  # until the index commits
        try:
            _carry_out(self.root, self.plan)
        except VaultError as exc:
            raise VaultError(
                f"The change is recorded in the audit log, but the files could not all be "
                f"changed yet ({exc}); it will be finished by the next write or start of "
                "the vault. Do not repeat it."
            ) from exc
        _drop(self.root, _record(self.root))

    def __enter__(self) -> Change:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        """A failure before the commit point takes back what was prepared, and a
        LoreError then says that nothing was changed."""
        if exc is None or self.committed:
            return
        _undo(self.root, self.plan)
        if isinstance(exc, LoreError) and "nothing was changed" not in exc.message.lower():
            exc.message = f"{exc.message.rstrip()} Nothing was changed."


def _record(root: Path) -> Path:
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


def _drop(root: Path, record: Path) -> None:
    try:
        record.unlink(missing_ok=True)
    except OSError as exc:  # the next write finds it carried out and drops it then
        log.warning("could not remove %s: %s", record, exc)
    fsync_dir(record.parent)


def pending(root: Path) -> str | None:
    """What a write begun and not finished left, in a few words; None when nothing."""
    for name in (JOURNAL_FILE, LEGACY_JOURNAL_FILE):
        record = root / LORE_DIR / name
        if record.exists():
            try:
                moves = json.loads(record.read_bytes()).get("moves", [])
            except (OSError, ValueError, AttributeError):
                moves = []
            what = ", ".join(f"{a} -> {b}" for a, b in moves) or "a save or delete"
            return (
                f"an interrupted write ({what}) is recorded in {record}; the next start "
                "that may write (not --read-only) finishes or undoes it"
            )
    return None


def recover(root: Path, *, read_only: bool = False) -> list[str]:
    """Finish (or, before its commit point, undo) a write that a killed process left;
    the page files it touched. A vault opened read-only only logs that there is one."""
    if read_only:
        if (left := pending(root)) is not None:
            log.warning("%s", left)
        return []
    touched = _recover_legacy(root)
    record = _record(root)
    try:
        document = json.loads(record.read_bytes())
        plan = _plan(document)
        line = str(document["audit"]).encode("utf-8")
    except FileNotFoundError:
        return touched
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VaultError(
            f"The record of an unfinished write, {record}, cannot be read ({exc}). Look at "
            "it, finish or undo the write by hand, and delete the file."
        ) from exc
    if audit.ends_with(root, line):
        log.warning("finishing an interrupted write of %s", ", ".join(plan.paths()))
        _carry_out(root, plan)
        touched += plan.paths()
    else:
        log.warning("undoing an interrupted write of %s", ", ".join(plan.paths()))
        _undo(root, plan)
    _drop(root, record)
    return touched


def _plan(document: dict[str, Any]) -> Plan:
    return Plan(
        [(old, new) for old, new in document["moves"]],
        [(old, new) for old, new in document["folders"]],
        {str(rel): str(temp) for rel, temp in document["writes"].items()},
        [str(rel) for rel in document["deletes"]],
        [str(rel) for rel in document["kept"]],
        [str(rel) for rel in document["made"]],
    )


def _recover_legacy(root: Path) -> list[str]:
    """Finish a rename recorded the older way, and give it its audit record."""
    record = root / LORE_DIR / LEGACY_JOURNAL_FILE
    try:
        document = json.loads(record.read_bytes())
        moves = [(str(old), str(new)) for old, new in document["moves"]]
        writes = {rel: base64.b64decode(data) for rel, data in document["writes"].items()}
        folders = [(str(old), str(new)) for old, new in document.get("folders", [])]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VaultError(
            f"The record of an unfinished rename, {record}, cannot be read ({exc}). Look at "
            "it, finish or undo the rename by hand, and delete the file."
        ) from exc
    log.warning("finishing a rename that was interrupted: %s", _moves(moves))
    plan = Plan(moves, folders)
    _carry_out(root, plan)
    for rel, data in writes.items():
        path = real_path(root, rel)
        try:
            current = None if path is None else read_regular(path)[1]
        except OSError:
            current = None
        if current != data:
            atomic_write(page_entry(root, rel), data)
    old, new = moves[0] if moves else ("", "")
    try:
        audit.append_line(root, _legacy_record(root, old, new, writes).model_dump_json().encode())
    except OSError as exc:
        log.error("could not write the audit record of the rename %s: %s", _moves(moves), exc)
    _drop(root, record)
    return sorted({*plan.paths(), *writes})


def _legacy_record(root: Path, old: str, new: str, writes: dict[str, bytes]) -> audit.AuditRecord:
    """The record of a rename finished at start (its hashes before are not known)."""
    return audit.AuditRecord(
        door="recovery",
        tool="rename_page",
        slug=slug_from_path(new),
        path=new,
        old_slug=slug_from_path(old),
        old_path=old,
        before=None,
        after=audit.file_hash(root / new),
        rewritten=[
            audit.PageChange(
                slug=slug_from_path(rel), path=rel, before=None, after=audit.data_hash(data)
            )
            for rel, data in sorted(writes.items())
            if rel != new
        ],
    )


def _moves(moves: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"{a} -> {b}" for a, b in moves)


def _carry_out(root: Path, plan: Plan) -> None:
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
    for folder in _folders(root, plan.writes):
        fsync_dir(folder)
    for rel in plan.deletes:
        entry = page_entry(root, rel)
        try:
            entry.unlink(missing_ok=True)
        except OSError as exc:
            raise VaultError(f"Cannot delete {rel!r}: {exc.strerror or exc}.") from exc
        fsync_dir(entry.parent)


def _folders(root: Path, rels: Iterable[str]) -> list[Path]:
    """The folders the page files `rels` are in, each once."""
    return list(dict.fromkeys(page_entry(root, rel).parent for rel in rels))


def _undo(root: Path, plan: Plan) -> None:
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
