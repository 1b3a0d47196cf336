"""Changes made outside lore's tools, on the record.

Each change to the page files that lore did not make (an editor, `git pull`, Obsidian,
`cp`), as the watcher, the periodic check or a start-up pass finds it, gets a line in
the audit log with door `outside`: tool `create`, `edit` or `delete`, the page, and the
hashes of its bytes before (as the index held them) and after (as the file holds them).
A pass over an empty index (a first index, a rebuild) has nothing to compare with and
records nothing.

The version such a change replaced is kept in the history when lore still has its
bytes. The index holds only their hash, so after each write of a tool lore keeps a copy
of the bytes the index now holds for the page, beside the index
(`<index folder>/written/<page path>/<sha256>`): when an outside program then replaces or
deletes them, the copy moves into the history, and the record names it. A version that an
outside program wrote was never lore's to copy: when another outside change replaces it,
it is not kept, and the record says so (`kept: false`). A copy is checked against the
hash before it is kept, so a stale or torn one is never taken for a version.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lore_mcp import audit
from lore_mcp.errors import VaultError
from lore_mcp.vault_ops import history
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.pagefile import content_hash, read_regular
from lore_mcp.vault_ops.paths import real_path

log = logging.getLogger(__name__)

OUTSIDE = "outside"  # the door of a change lore found made
WRITTEN_DIR = "written"
_COPY_NAME = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Change:
    """A page file a pass found changed: its path, and the sha256 (hex) of its bytes as
    the index held them and as the file holds them now (None: no page then, or now)."""

    path: str
    before: str | None
    after: str | None

    @property
    def tool(self) -> str:
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "edit"


def remember(vault: AppState, changes: Iterable[Change]) -> None:
    """After a tool's write: copy the bytes the index now holds of each page file it
    changed (up to the size a save may write), and drop the copies of those it removed.
    A copy that cannot be made costs only the history of a later outside change. The
    removed go first: where names ignore case, `Draft.md`'s folder is `draft.md`'s."""
    for change in sorted(changes, key=lambda change: change.after is not None):
        folder = _copies(vault, change.path)
        try:
            _drop(folder)
            if change.after is None:
                continue
            path = real_path(vault.root, change.path)
            data = None if path is None else read_regular(path, vault.max_content_bytes)[1]
            if data is not None and content_hash(data) == change.after:
                folder.mkdir(parents=True, exist_ok=True)
                (folder / change.after).write_bytes(data)
        except OSError as exc:
            log.warning("could not copy %s for its history: %s", change.path, exc)


def record(vault: AppState, changes: list[Change], created: list[str], removed: list[str]) -> None:
    """Write the audit records of changes made outside, keeping in the history each
    replaced version lore has a copy of. The placeholders the pass `created` and
    `removed` go into the record when it found one change only (else no record could
    say which change made them)."""
    if not changes:
        return
    ours = audit.recorded(vault.root)  # the change a killed write recorded is no outside one
    changes = [c for c in changes if c.path not in ours or ours[c.path] != _digest(c.after)]
    if not changes:
        return
    alone = len(changes) == 1
    records: list[audit.AuditRecord] = []
    for change in changes:
        kept = None if change.before is None else _keep(vault, change)
        records.append(
            audit.AuditRecord(
                door=OUTSIDE,
                tool=change.tool,
                slug=vault.handle(change.path),
                path=change.path,
                before=_digest(change.before),
                after=_digest(change.after),
                history_path=kept,
                kept=None if change.before is None else kept is not None,
                placeholders_created=vault.handles(created) if alone else [],
                placeholders_removed=vault.handles(removed) if alone else [],
            )
        )
    audit.append_all(vault.root, records)


def _keep(vault: AppState, change: Change) -> str | None:
    """Move lore's copy of the version `change` replaced into the history; where it went,
    or None when there is no such copy. The page's other copies are dropped."""
    assert change.before is not None
    folder = _copies(vault, change.path)
    copy = folder / change.before
    kept = None
    try:
        if content_hash(copy.read_bytes()) == change.before:
            kept = history.keep_copy(vault.root, change.path, copy, change.tool, OUTSIDE)
    except FileNotFoundError:
        pass
    except (OSError, VaultError) as exc:
        log.warning("could not keep the version of %s an outside change replaced: %s", copy, exc)
    try:
        _drop(folder)
    except OSError as exc:
        log.warning("could not remove the copies in %s: %s", folder, exc)
    return kept


def _copies(vault: AppState, rel: str) -> Path:
    """The folder of the copies of page file `rel` (at most one, named by its hash)."""
    return vault.index.path.parent / WRITTEN_DIR / rel


def _drop(folder: Path) -> None:
    """Remove the copies in `folder` (not the folders of pages under a folder so named)."""
    try:
        entries = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if _COPY_NAME.fullmatch(entry.name) and not entry.is_dir():
            entry.unlink(missing_ok=True)


def _digest(hex_hash: str | None) -> str | None:
    return None if hex_hash is None else f"sha256:{hex_hash}"
