"""Finishing, or undoing, a write a killed process left (see `journal`): after its
commit point it is carried out, before it undone; a vault opened read-only leaves it as
it is and says so. A rename journal of the older kind (`.lore/rename.json`, before 0.3)
is finished as it was, and gets its audit record then.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lore_mcp import audit
from lore_mcp.config import JOURNAL_FILE, LEGACY_JOURNAL_FILE, LORE_DIR
from lore_mcp.errors import VaultError
from lore_mcp.slugs import slug_from_path
from lore_mcp.vault_ops import journal
from lore_mcp.vault_ops.files import atomic_write, page_entry
from lore_mcp.vault_ops.pagefile import read_regular
from lore_mcp.vault_ops.paths import real_path
from lore_mcp.vault_ops.plan import Plan, carry_out, undo

log = logging.getLogger(__name__)


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
    record = journal.record_path(root)
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
        carry_out(root, plan)
        touched += plan.paths()
    else:
        log.warning("undoing an interrupted write of %s", ", ".join(plan.paths()))
        undo(root, plan)
    journal.drop(root, record)
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
    carry_out(root, plan)
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
    journal.drop(root, record)
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
