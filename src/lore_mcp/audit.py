"""The audit log: one JSON line per write, in `<vault>/.lore/audit.jsonl`.

Every save, delete and rename that changes the vault, through any door (the MCP
server, the `lore` command line, or the Python API), appends one line: when, which
door and tool, and through the MCP door which session and client (the name and
version it gave in `initialize`), the page(s), the SHA-256 of the content before and
after, and the placeholders created and removed. It is the record of what an agent wrote. A save
that changes nothing (same content) is not a write and is not logged. Changes made
outside (an editor, `git pull`), as the watcher, the periodic check or a start-up pass
finds them, are logged too, with door `outside` (see `vault_ops.outside`).

The file is only ever appended to. Each line goes out in one `write` and is fsynced
before the page files change: the appended line is a write's commit point (see
`vault_ops.journal`), so a write whose line cannot be written fails having changed
nothing, and a crash leaves both or neither. Writers run inside the index's write
transaction, which is one writer at a time across processes, so lines never
interleave. A crash can leave at most a torn last line: readers skip it, and the next
append starts on a new line.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, model_validator

from lore_mcp.config import AUDIT_FILE, LORE_DIR
from lore_mcp.errors import InvalidArgumentError, LoreError
from lore_mcp.slugs import parse_name, slug_from_path

log = logging.getLogger(__name__)

_RELATIVE = re.compile(r"(\d+)\s*([smhdw])", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DAYS = {"today": 0, "yesterday": 1}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Door(str):
    """Who asks for a write: `mcp`, `cli` or `api`, with the MCP session and the client
    when there is one. It is the door's name as a string (as the engine passes it on
    to the history), carrying the rest to the audit record."""

    session: str | None
    client_name: str | None
    client_version: str | None
    token: str | None

    def __new__(
        cls,
        name: str,
        *,
        session: str | None = None,
        client_name: str | None = None,
        client_version: str | None = None,
        token: str | None = None,
    ) -> Door:
        door = super().__new__(cls, name)
        door.session = session
        door.client_name = client_name
        door.client_version = client_version
        door.token = token
        return door


class PageChange(BaseModel):
    """Another page a rename rewrote the links of."""

    slug: str
    path: str
    before: str | None
    after: str | None


class AuditRecord(BaseModel):
    """One write, as one line of `.lore/audit.jsonl`."""

    time: str = Field(default_factory=_now, description="UTC, ISO 8601, milliseconds")
    door: str = Field(
        description="mcp, cli or api: who asked for the write; outside: a change lore found"
    )
    tool: str = Field(
        description="save_page, delete_page or rename_page; for door outside: create, "
        "edit or delete"
    )
    mode: str | None = Field(
        default=None,
        description="save_page: replace, append, prepend, edit or section; restore_page: restore",
    )
    pid: int = Field(default_factory=os.getpid, description="The writing process")
    session: str | None = Field(
        default=None,
        description="The MCP session: its Mcp-Session-Id over HTTP, one per process on "
        "stdio; null where there is none (the CLI, a request of the 2026-07-28 protocol)",
    )
    client_name: str | None = Field(
        default=None, description="The client's name, as its initialize gave it"
    )
    client_version: str | None = Field(default=None, description="The client's version")
    token: str | None = Field(
        default=None, description="Over HTTP: the label of the bearer token the write came with"
    )
    slug: str = Field(description="The page written (after a rename: its new slug)")
    path: str = Field(description="Its vault-relative file")
    old_slug: str | None = Field(default=None, description="rename_page: the slug before")
    old_path: str | None = Field(default=None, description="rename_page: the file before")
    before: str | None = Field(description="sha256:… of the file before; null if none")
    after: str | None = Field(description="sha256:… of the file after; null once deleted")
    history_path: str | None = Field(
        default=None,
        description="delete_page: where its last version is kept; door outside: where the "
        "version the change replaced is kept",
    )
    kept: bool | None = Field(
        default=None,
        description="door outside: whether the version the change replaced is kept (false "
        "when lore never had its bytes: an outside program wrote it); null for a create",
    )
    rewritten: list[PageChange] = Field(
        default_factory=list, description="rename_page: other pages whose links were rewritten"
    )
    placeholders_created: list[str] = Field(default_factory=list)
    placeholders_removed: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_door(cls, data: object) -> object:
        """A `Door` given as `door` fills in the session and the client."""
        if isinstance(data, dict) and isinstance(door := data.get("door"), Door):
            return (
                {
                    "session": door.session,
                    "client_name": door.client_name,
                    "client_version": door.client_version,
                    "token": door.token,
                }
                | data
                | {"door": str(door)}
            )
        return data

    def client(self) -> str:
        """The client as one word or two (name and version), or empty."""
        return " ".join(part for part in (self.client_name, self.client_version) if part)

    def slugs(self) -> set[str]:
        """Every page the write touched."""
        found = {self.slug, *(page.slug for page in self.rewritten)}
        return found | {self.old_slug} if self.old_slug else found


class AuditLog(BaseModel):
    """What `lore log` shows: the matching records, oldest first."""

    path: str = Field(description="The log file")
    records: list[AuditRecord]
    skipped: int = Field(description="Lines that were not complete records (a torn last line)")


# -- writing ----------------------------------------------------------------------------


def data_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_hash(path: Path) -> str | None:
    """The hash of a file's bytes; None when there is no such file."""
    try:
        return data_hash(path.read_bytes())
    except OSError:
        return None


def log_path(root: Path) -> Path:
    return root / LORE_DIR / AUDIT_FILE


def append(root: Path, record: AuditRecord) -> None:
    """Append `record` as one line and fsync it. Never raises: a failure is logged."""
    try:
        append_line(root, record.model_dump_json().encode("utf-8"))
    except OSError as exc:
        log.error("could not write the audit log of %s: %s", root, exc)


def append_all(root: Path, records: list[AuditRecord]) -> None:
    """Append `records`, a line each, in one write and one fsync (a pass may find
    thousands of outside changes). Never raises: a failure is logged."""
    if not records:
        return
    lines = b"\n".join(record.model_dump_json().encode("utf-8") for record in records)
    try:
        append_line(root, lines)
    except OSError as exc:
        log.error("could not write the audit log of %s: %s", root, exc)


TAIL_BYTES = 1 << 20  # how far back `ends_with` looks


def ends_with(root: Path, line: bytes) -> bool:
    """Whether `line` is a whole line among the last ones of the log (the record of a
    write whose journal is still there: it was the last line appended, or near it)."""
    try:
        with log_path(root).open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - TAIL_BYTES - len(line))
            handle.seek(start)
            tail = handle.read()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise LoreError(f"Cannot read the audit log of {root}: {exc.strerror or exc}.") from exc
    return (start == 0 and tail.startswith(line + b"\n")) or b"\n" + line + b"\n" in tail


def append_line(root: Path, line: bytes) -> None:
    """Append one line to the log and fsync it; OSError when it cannot."""
    path = log_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a crash tore the last line: start a new one
        data = memoryview(line + b"\n")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def renamed(
    door: str,
    *,
    old: tuple[str, str],
    new: tuple[str, str],
    others: dict[str, str],
    before: dict[str, str | None],
    after: dict[str, str | None],
    placeholders: tuple[list[str], list[str]],
) -> AuditRecord:
    """The record of a rename from `old` to `new` (slug, path) that rewrote the links
    in `others` (slug: path); `before` and `after` hold the hashes of the files by path
    (before: by the old path), and `placeholders` the placeholders created and removed."""
    return AuditRecord(
        door=door,
        tool="rename_page",
        slug=new[0],
        path=new[1],
        old_slug=old[0],
        old_path=old[1],
        before=before.get(old[1]),
        after=after.get(new[1]),
        rewritten=[
            PageChange(slug=s, path=p, before=before.get(p), after=after.get(p))
            for s, p in sorted(others.items())
        ],
        placeholders_created=placeholders[0],
        placeholders_removed=placeholders[1],
    )


# -- reading ----------------------------------------------------------------------------


def read_log(
    root: Path,
    since: datetime | None = None,
    slug: str | None = None,
    limit: int | None = None,
) -> AuditLog:
    """The records of the vault at `root`, oldest first: written at or after `since`,
    touching the page `slug` (a bare name matches it in any folder), the last `limit`."""
    path = log_path(root)
    key = None if slug is None else parse_name(slug).key.fold
    kept: deque[AuditRecord] = deque(maxlen=limit)
    skipped = 0
    for record in _records(path):
        if record is None:
            skipped += 1
        elif (since is None or _time(record) >= since) and _touches(record, key):
            kept.append(record)
    return AuditLog(path=str(path), records=list(kept), skipped=skipped)


def _records(path: Path) -> Iterator[AuditRecord | None]:
    """Each line's record, or None for a line that is not one."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LoreError(f"Cannot read the audit log {path}: {exc.strerror or exc}.") from exc
    with handle:
        for raw in handle:
            if raw.strip():
                try:
                    yield AuditRecord.model_validate_json(raw)
                except ValidationError:
                    yield None


def recorded(root: Path) -> dict[str, str | None]:
    """What the last records in the log (its last `TAIL_BYTES`) say each page file
    holds: path -> the sha256 after the write (None: deleted). A change found on disk
    that matches is lore's own, recorded before the process that made it was killed."""
    found: dict[str, str | None] = {}
    try:
        with log_path(root).open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read().split(b"\n")
    except OSError:
        return found
    for raw in tail[1:] if size > TAIL_BYTES else tail:  # a line cut at the start goes
        try:
            record = AuditRecord.model_validate_json(raw)
        except ValidationError:
            continue
        if record.old_path is not None:
            found[record.old_path] = None
        found[record.path] = record.after
        for page in record.rewritten:
            found[page.path] = page.after
    return found


def _time(record: AuditRecord) -> datetime:
    try:
        return datetime.fromisoformat(record.time)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)


def _touches(record: AuditRecord, key: str | None) -> bool:
    """Whether the record touches the page `key` (a slug form); a bare name matches it
    in any folder."""
    folded = (slug_from_path(s) for s in record.slugs())
    return key is None or any(s == key or s.endswith("/" + key) for s in folded)


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`1h`, `30m`, `2d`, `1w` ago, `today` or `yesterday` (from local midnight), or an
    ISO date or time (local time unless it names its offset, `Z` for UTC)."""
    now = now or datetime.now(UTC)
    text = text.strip()
    if (days := _DAYS.get(text.lower())) is not None:
        midnight = now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight - timedelta(days=days)
    if (match := _RELATIVE.fullmatch(text)) is not None:
        unit = _UNITS[match.group(2).lower()]
        return now - timedelta(**{unit: int(match.group(1))})
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(
            f"--since {text!r} is neither a time span (30m, 1h, 2d, 1w), today, yesterday, "
            "nor an ISO date or time (2025-06-01, 2025-06-01T14:30, 2025-06-01T14:30Z)."
        ) from None
    return when if when.tzinfo is not None else when.astimezone()
