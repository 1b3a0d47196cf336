"""The audit log as a timeline, and each change as a diff.

A change's record names the file and the hashes of its bytes before and after. Both
versions are looked for where the engine keeps them: the page's kept versions (the
history follows renames) and the file as it is now. What the change replaced is
usually kept; what it wrote is the file now, or the version a later change kept.
A version no longer kept (pruned, or written by an outside program) is said to be
missing rather than guessed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from lore_mcp import audit
from lore_mcp import vault_ops as engine
from lore_mcp.errors import LoreError
from lore_mcp.models import PageVersion

MAX_DIFF_LINES = 4000  # lines of each side a diff compares; the rest is left out, and said


@dataclass(frozen=True, slots=True)
class Entry:
    """One record of the log, with its place in it (its id in the UI)."""

    number: int
    record: audit.AuditRecord

    @property
    def day(self) -> str:
        return self.record.time[:10]

    @property
    def client(self) -> str:
        return self.record.client() or self.record.door


@dataclass(frozen=True, slots=True)
class Filters:
    day: str = ""
    client: str = ""
    page: str = ""


@dataclass(frozen=True, slots=True)
class Timeline:
    entries: list[Entry]  # newest first
    days: list[str]
    clients: list[str]
    total: int


def timeline(root: Path, filters: Filters, limit: int = 500) -> Timeline:
    """The newest `limit` records that pass `filters`, and what the filters can choose."""
    records = audit.read_log(root).records
    entries = [Entry(i, record) for i, record in enumerate(records)]
    days = sorted({entry.day for entry in entries}, reverse=True)
    clients = sorted({entry.client for entry in entries})
    key = filters.page.strip().casefold()
    chosen = [
        entry
        for entry in entries
        if (not filters.day or entry.day == filters.day)
        and (not filters.client or entry.client == filters.client)
        and (not key or any(key in slug.casefold() for slug in _names(entry.record)))
    ]
    chosen.reverse()
    return Timeline(chosen[:limit], days, clients, len(chosen))


def _names(record: audit.AuditRecord) -> set[str]:
    return record.slugs() | {record.path, *([record.old_path] if record.old_path else [])}


def entry(root: Path, number: int) -> Entry | None:
    records = audit.read_log(root).records
    return Entry(number, records[number]) if 0 <= number < len(records) else None


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a diff: the bytes, if found, and where they were found."""

    text: str | None
    where: str  # "the file now", "version N", "nothing (a new page)", "not kept"
    version: int | None = None


@dataclass(frozen=True, slots=True)
class Change:
    entry: Entry
    name: str  # the page's name for the engine: "/" + its path
    before: Side
    after: Side
    diff: list[tuple[str, str]]  # (kind, line): kind is " ", "+", "-", "@"
    versions: list[PageVersion]
    cut: bool


def change(vault: engine.AppState, found: Entry) -> Change:
    """The diff of the version `found` replaced against the one it wrote, and the page's
    kept versions (any of them can be restored)."""
    record = found.record
    name = "/" + record.path
    try:
        versions = engine.page_history(vault, name).versions
    except LoreError:
        versions = []
    current = _current(vault, name)
    before = _side(vault, name, record.before, versions, current, none="nothing (a new page)")
    after = _side(vault, name, record.after, versions, current, none="nothing (it was deleted)")
    lines, cut = _diff(before.text or "", after.text or "")
    return Change(found, name, before, after, lines, versions, cut)


def _current(vault: engine.AppState, name: str) -> tuple[str, bytes] | None:
    try:
        page, data = engine.read_source(vault, name)
    except LoreError:
        return None
    if data is None or page.path is None:
        return None
    return _bare(audit.data_hash(data)), data


def _bare(digest: str) -> str:
    """A hash without its `sha256:` (the audit log writes it, the history does not)."""
    return digest.removeprefix("sha256:")


def _side(
    vault: engine.AppState,
    name: str,
    digest: str | None,
    versions: list[PageVersion],
    current: tuple[str, bytes] | None,
    *,
    none: str,
) -> Side:
    if digest is None:
        return Side("", none)
    digest = _bare(digest)
    if current is not None and current[0] == digest:
        return Side(_text(current[1]), "the file now")
    for version in versions:
        if _bare(version.hash) == digest:
            try:
                data = engine.version_source(vault, name, version.number)[1]
            except LoreError:
                break
            return Side(_text(data), f"version {version.number}", version.number)
    return Side(None, "not kept")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _diff(old: str, new: str) -> tuple[list[tuple[str, str]], bool]:
    a, b = old.splitlines(), new.splitlines()
    cut = len(a) > MAX_DIFF_LINES or len(b) > MAX_DIFF_LINES
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(a[:MAX_DIFF_LINES], b[:MAX_DIFF_LINES], lineterm="", n=3):
        if line.startswith(("---", "+++")):
            continue
        kind = "@" if line.startswith("@@") else line[:1]
        out.append((kind, line if kind == "@" else line[1:]))
    return out, cut


def parse_day(text: str) -> str:
    """A day as YYYY-MM-DD, or empty when `text` is none."""
    try:
        return date.fromisoformat(text.strip()).isoformat() if text.strip() else ""
    except ValueError:
        return ""


def when(record: audit.AuditRecord) -> str:
    """The record's time as people read it: date and time to the second, UTC."""
    try:
        moment = datetime.fromisoformat(record.time.replace("Z", "+00:00"))
    except ValueError:
        return record.time
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
