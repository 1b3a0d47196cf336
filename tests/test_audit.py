"""The audit log: one whole JSON line per write, through every door, and `lore log`."""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import Implementation

from helpers import assert_matches_fresh, environment
from lore_mcp import audit
from lore_mcp import vault_ops as ops
from lore_mcp.cli import main
from lore_mcp.errors import InvalidArgumentError, LoreError, VaultError
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState


@pytest.fixture(autouse=True)
def no_vault_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LORE_VAULT", raising=False)


def sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def lines(root: Path) -> list[dict[str, Any]]:
    """The log file, each line parsed on its own (a torn line fails the test)."""
    path = audit.log_path(root)
    if not path.exists():
        return []
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    return [json.loads(line) for line in raw.decode("utf-8").splitlines()]


# -- what a line holds ------------------------------------------------------------------


def test_each_write_appends_one_line(state: AppState) -> None:
    root = state.root
    ops.save_page(state, "notes/Alpha", "see [[Beta]]\n")
    first_hash = sha(root / "notes/Alpha.md")
    ops.save_page(state, "notes/Alpha", "see [[Beta]]\n")  # unchanged: not a write
    ops.save_page(state, "notes/Alpha", "see [[Beta]] again\n")
    ops.save_page(state, "Beta", "back to [[Alpha]]\n")  # promotes the placeholder
    beta_before = sha(root / "Beta.md")
    ops.rename_page(state, "notes/Alpha", "Gamma")
    beta_after = sha(root / "Beta.md")
    deleted = ops.delete_page(state, "Beta")
    log = lines(root)
    assert [(r["tool"], r["slug"]) for r in log] == [
        ("save_page", "notes/alpha"),
        ("save_page", "notes/alpha"),
        ("save_page", "beta"),
        ("rename_page", "notes/gamma"),
        ("delete_page", "beta"),
    ]
    created, overwritten, promoted, renamed, gone = log
    assert set(created) == set(audit.AuditRecord.model_fields)
    assert {r["door"] for r in log} == {"api"}
    assert created["before"] is None and created["after"] == first_hash
    assert created["placeholders_created"] == ["beta"] and created["path"] == "notes/Alpha.md"
    assert overwritten["before"] == first_hash
    assert overwritten["after"] == renamed["before"] == renamed["after"]
    assert promoted["before"] is None and promoted["after"] == beta_before
    assert (renamed["old_slug"], renamed["old_path"]) == ("notes/alpha", "notes/Alpha.md")
    assert renamed["path"] == "notes/Gamma.md"
    assert renamed["rewritten"] == [
        {"slug": "beta", "path": "Beta.md", "before": beta_before, "after": beta_after}
    ]
    assert gone["before"] == beta_after and gone["after"] is None
    assert gone["history_path"] == deleted.history_path
    assert sha(root / gone["history_path"]) == beta_after
    assert gone["placeholders_created"] == ["beta"]
    assert datetime.fromisoformat(gone["time"]) >= datetime.fromisoformat(created["time"])


def test_writes_that_change_nothing_leave_no_line(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "a/Same", "x")
    ops.save_page(state, "b/Same", "y")
    with pytest.raises(LoreError):
        ops.save_page(state, "same", "which one?")
    with pytest.raises(LoreError):
        ops.delete_page(state, "nowhere")
    with pytest.raises(LoreError):
        ops.rename_page(state, "a/Same", "b/Same")
    ops.save_page(state, "a/Same", "x")
    assert len(lines(vault_dir)) == 2
    reader = ops.open_vault(vault_dir, read_only=True)
    try:
        with pytest.raises(VaultError, match="read-only"):
            ops.save_page(reader, "c", "z")
    finally:
        reader.close()
    assert len(lines(vault_dir)) == 2


# -- the doors ----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_server_writes_as_mcp_naming_session_and_client(
    vault_dir: Path, mode: str
) -> None:
    server = build_server(ops.open_vault(vault_dir, scan=False))
    agent = Implementation(name="test-agent", version="9.9")
    connect = "legacy" if mode == "legacy" else "auto"
    async with Client(server, mode=connect, client_info=agent) as client:
        with anyio.fail_after(10):
            await client.call_tool("save_page", {"slug": "Note", "content": "hi"})
            await client.call_tool("rename_page", {"slug": "Note", "new_name": "Memo"})
            await client.call_tool("delete_page", {"slug": "Memo"})
    log = lines(vault_dir)
    assert [(r["door"], r["tool"]) for r in log] == [
        ("mcp", "save_page"),
        ("mcp", "rename_page"),
        ("mcp", "delete_page"),
    ]
    assert {(r["client_name"], r["client_version"]) for r in log} == {("test-agent", "9.9")}
    sessions = {r["session"] for r in log}  # one process, one stdio-like session
    assert len(sessions) == 1 and None not in sessions


def test_the_cli_writes_as_cli(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# Note\n")))
    assert main(["--vault", str(vault_dir), "save", "Note"]) == 0
    assert main(["--vault", str(vault_dir), "rename", "Note", "Memo"]) == 0
    assert main(["--vault", str(vault_dir), "delete", "Memo"]) == 0
    log = lines(vault_dir)
    assert [(r["door"], r["tool"]) for r in log] == [
        ("cli", "save_page"),
        ("cli", "rename_page"),
        ("cli", "delete_page"),
    ]
    assert {(r["client_name"], r["session"]) for r in log} == {("lore", None)}
    capsys.readouterr()


# -- whole lines, always ----------------------------------------------------------------------


def _write_many(root: str, prefix: str, count: int) -> None:
    state = ops.open_vault(root)
    try:
        for i in range(count):
            ops.save_page(state, f"{prefix}/page {i}", f"{prefix} {i} links [[{prefix} hub]]\n")
            if i % 10 == 9:
                ops.rename_page(state, f"{prefix}/page {i}", f"moved {i}")
    finally:
        state.close()


@pytest.mark.slow
def test_many_writes_at_once_give_whole_lines(vault_dir: Path) -> None:
    """Two threads with their own connections and two processes append at once; every
    line is one complete record and none is lost."""
    ops.open_vault(vault_dir).close()
    threads = [
        threading.Thread(target=_write_many, args=(str(vault_dir), name, 60))
        for name in ("t1", "t2")
    ]
    # The same function in child processes that import only what it needs.
    script = (
        "import sys\n"
        "from lore_mcp import vault_ops as ops\n"
        f"{inspect.getsource(_write_many)}\n"
        "_write_many(sys.argv[1], sys.argv[2], int(sys.argv[3]))\n"
    )
    for thread in threads:
        thread.start()
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(vault_dir), n, "40"])
        for n in ("p1", "p2")
    ]
    for thread in threads:
        thread.join(120)
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    log = lines(vault_dir)
    assert len(log) == 2 * (60 + 6) + 2 * (40 + 4)
    assert len({r["pid"] for r in log}) == 3
    found = audit.read_log(vault_dir)
    assert found.skipped == 0 and len(found.records) == len(log)


def test_a_torn_last_line_is_skipped_and_the_next_starts_clean(state: AppState) -> None:
    ops.save_page(state, "One", "1")
    with audit.log_path(state.root).open("ab") as handle:
        handle.write(b'{"time":"2025-01-01T00:00:00.000Z","door":"mcp","to')  # a crash
    ops.save_page(state, "Two", "2")
    raw = audit.log_path(state.root).read_bytes().decode("utf-8").splitlines()
    assert len(raw) == 3 and json.loads(raw[2])["slug"] == "two"
    found = audit.read_log(state.root)
    assert [r.slug for r in found.records] == ["one", "two"] and found.skipped == 1


def vault_files(root: Path) -> dict[str, bytes]:
    """Every file of the vault, its history and audit log too, but not the index cache."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".lore/cache" not in p.relative_to(root).as_posix()
    }


def test_a_write_whose_record_cannot_be_written_changes_nothing(state: AppState) -> None:
    first = ops.save_page(state, "Kept", "first\n")
    ops.save_page(state, "Other", "see [[Kept]]\n")
    log = audit.log_path(state.root)
    log.rename(log.with_suffix(".moved"))
    log.mkdir()  # the audit log cannot be written: the path is a folder
    before = vault_files(state.root)
    attempts: list[Callable[[], object]] = [
        lambda: ops.save_page(state, "Kept", "second\n", expected_hash=first.hash),
        lambda: ops.save_page(state, "New", "new\n"),
        lambda: ops.delete_page(state, "Kept", expected_hash=first.hash),
        lambda: ops.rename_page(state, "Kept", "Moved", expected_hash=first.hash),
    ]
    for attempt in attempts:
        with pytest.raises(
            VaultError, match=r"audit log .* cannot be written.*Nothing was changed"
        ):
            attempt()
        assert vault_files(state.root) == before
    ops.list_pages(state)  # the next call loads again what the failed ones rolled back
    assert_matches_fresh(state)
    log.rmdir()
    log.with_suffix(".moved").rename(log)
    attempts[3]()  # the same call, with the same expected_hash, once the log can be written
    attempts[1]()
    assert [(r.tool, r.slug) for r in audit.read_log(state.root).records][2:] == [
        ("rename_page", "moved"),
        ("save_page", "new"),
    ]
    assert_matches_fresh(state)


# -- reading it back ------------------------------------------------------------------------


def record(when: datetime, slug: str, **extra: Any) -> audit.AuditRecord:
    stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    fields: dict[str, Any] = {"door": "api", "tool": "save_page", "path": f"{slug}.md"}
    fields |= {"before": None, "after": None} | extra
    return audit.AuditRecord(time=stamp, slug=slug, **fields)


def test_read_log_filters_by_time_page_and_count(state: AppState) -> None:
    now = datetime.now(UTC)
    audit.append(state.root, record(now - timedelta(days=3), "notes/alpha"))
    audit.append(state.root, record(now - timedelta(hours=5), "beta"))
    audit.append(
        state.root,
        record(
            now - timedelta(minutes=5),
            "gamma",
            tool="rename_page",
            old_slug="notes/alpha",
            rewritten=[audit.PageChange(slug="delta", path="delta.md", before=None, after=None)],
        ),
    )
    root = state.root

    def slugs(**kwargs: Any) -> list[str]:
        return [r.slug for r in audit.read_log(root, **kwargs).records]

    assert slugs() == ["notes/alpha", "beta", "gamma"]
    assert slugs(since=audit.parse_since("1d", now)) == ["beta", "gamma"]
    assert slugs(since=audit.parse_since("1h", now)) == ["gamma"]
    assert slugs(slug="alpha") == ["notes/alpha", "gamma"]
    assert slugs(slug="Notes/Alpha.md") == ["notes/alpha", "gamma"]
    assert slugs(slug="delta") == ["gamma"]
    assert slugs(slug="beta", since=audit.parse_since("1h", now)) == []
    assert slugs(limit=2) == ["beta", "gamma"]


def test_parse_since() -> None:
    now = datetime(2025, 6, 10, 12, 0, tzinfo=UTC)
    assert audit.parse_since("90m", now) == now - timedelta(minutes=90)
    assert audit.parse_since("2d", now) == now - timedelta(days=2)
    assert audit.parse_since("1W", now) == now - timedelta(weeks=1)
    assert audit.parse_since("2025-06-01T10:00Z") == datetime(2025, 6, 1, 10, tzinfo=UTC)
    local = audit.parse_since("2025-06-01")
    assert local.tzinfo is not None and local.replace(tzinfo=None) == datetime(2025, 6, 1)
    today = audit.parse_since("today", now)
    assert today.tzinfo is not None and (today.hour, today.minute) == (0, 0)
    assert today <= now < today + timedelta(days=1)
    assert audit.parse_since("Yesterday", now) == today - timedelta(days=1)
    for bad in ("tomorrow", "5 parsecs", "-1h", ""):
        with pytest.raises(InvalidArgumentError, match="neither a time span"):
            audit.parse_since(bad, now)


def test_lore_log(
    brain_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = ["--vault", str(brain_dir)]
    assert main([*vault, "log"]) == 0
    assert "No writes recorded" in capsys.readouterr().out
    assert not (brain_dir / ".lore" / "lore.db").exists()  # the log does not index
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# Roadmap\n")))
    assert main([*vault, "save", "roadmap"]) == 0
    assert main([*vault, "rename", "Slugs", "Slug Rules"]) == 0
    capsys.readouterr()
    assert main([*vault, "log", "--since", "1h"]) == 0
    out = capsys.readouterr().out
    assert "cli" in out and "save_page" in out and "roadmap" in out
    assert "concepts/slugs -> concepts/slug-rules" in out and "links rewritten in" in out
    assert main([*vault, "--json", "log", "--slug", "slug-rules"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [r["tool"] for r in shown["records"]] == ["rename_page"] and shown["skipped"] == 0
    assert main([*vault, "log", "--since", "soon"]) == 2  # a usage error of the one parser
    assert "neither a time span" in capsys.readouterr().err
    assert main([*vault, "log", "--since", "yesterday"]) == 0
    assert "roadmap" in capsys.readouterr().out
    lore = [sys.executable, "-c", "from lore_mcp.cli import lore_main; lore_main()"]
    done = subprocess.run(
        [*lore, *vault, "log", "--since", "someday"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "neither a time span" in done.stderr
    assert main(["--vault", str(brain_dir / "nope"), "log"]) == 2  # not a folder: usage
