"""A locked index is busy, never damaged: opening does not wait for another process's
write lock, a write that cannot get it fails having changed nothing, and only an index
SQLite itself finds damaged is rebuilt, by one process, in place, so that every
process goes on sharing one database."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from helpers import assert_matches_fresh, environment, page_slugs, snapshot, text
from lore_mcp import audit
from lore_mcp import vault_ops as ops
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR
from lore_mcp.errors import VaultBusyError
from lore_mcp.index import Index, PageRow


def db_path(root: Path) -> Path:
    return root / LORE_DIR / CACHE_DIR / DB_NAME


def epoch(root: Path) -> str:
    with closing(sqlite3.connect(db_path(root))) as conn:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()[0])


@contextmanager
def write_lock(root: Path) -> Iterator[None]:
    """Another connection holds the index's write lock (as a second process would)."""
    with closing(sqlite3.connect(db_path(root), isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")


def test_a_locked_index_opens_at_once_and_a_write_fails_cleanly(brain_dir: Path) -> None:
    ops.open_vault(brain_dir).close()
    before = (db_path(brain_dir).stat().st_ino, epoch(brain_dir))
    with write_lock(brain_dir):
        state = ops.open_vault(brain_dir, scan=False)  # reads the schema; takes no lock
        try:
            state.index.busy_timeout = 0.1
            with pytest.raises(VaultBusyError, match="Nothing was changed; try again"):
                ops.index_vault(state)
            with pytest.raises(VaultBusyError, match="vault is busy"):
                ops.save_page(state, "Waiting", "written while locked")
        finally:
            state.close()
    assert not (brain_dir / "Waiting.md").exists()
    assert not any(r.slug == "waiting" for r in audit.read_log(brain_dir).records)
    assert (db_path(brain_dir).stat().st_ino, epoch(brain_dir)) == before
    state = ops.open_vault(brain_dir)
    try:
        assert not state.index.rebuilt
        assert ops.save_page(state, "Waiting", "written once free").created
    finally:
        state.close()


def test_a_damaged_index_is_rebuilt_in_place_under_a_live_process(brain_dir: Path) -> None:
    ops.open_vault(brain_dir).close()  # the last close leaves everything in the file
    live = ops.open_vault(brain_dir)
    path = db_path(brain_dir)
    inode, old_epoch = path.stat().st_ino, epoch(brain_dir)
    try:
        with path.open("r+b") as handle:  # every page but the first: the tables are gone
            handle.seek(4096)
            handle.write(os.urandom(path.stat().st_size - 4096))
        second = ops.open_vault(brain_dir)
        try:
            assert second.index.rebuilt and len(second.pages) == 18
            assert path.stat().st_ino == inode and epoch(brain_dir) != old_epoch
            ops.save_page(second, "After Repair", "links [[Slugs]]")
            # The live process takes in the rebuilt index as the other's commits.
            assert ops.read_page(live, "After Repair").links[0].slug == "concepts/slugs"
            assert snapshot(live) == snapshot(second)
            assert_matches_fresh(live)
        finally:
            second.close()
    finally:
        live.close()


def test_processes_finding_one_damaged_index_repair_it_once(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    path.write_bytes(b"\x00not a database" * 1000)
    opened: list[Index] = []
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            opened.append(Index(path))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == [] and len(opened) == 4
    try:
        with opened[0].write():
            opened[0].pages.upsert([PageRow("shared", "Shared", "shared.md")])
        assert all(index.pages.get("shared") is not None for index in opened)
    finally:
        for index in opened:
            index.close()


# -- real processes -------------------------------------------------------------------------

HOLD_SECONDS = 45
# Holds the index's write lock for HOLD_SECONDS, as a process indexing a large vault does.
_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""
LORE = ["-c", "from lore_mcp.cli import lore_main; lore_main()"]


def server(root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lore_mcp", "--vault", str(root), "--log-level", "WARNING"],
        env=environment(),
    )


async def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(120):
        result = await client.call_tool(name, arguments)
    assert result.is_error is False, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_held_write_lock_splits_nothing(brain_dir: Path) -> None:
    """A process holds the write lock for 45 s while a second server starts and a
    `lore save` runs: the second server answers at once, the save fails cleanly (or
    succeeds once the lock is free), the index file is never replaced, and afterwards
    both servers see each other's writes."""
    ops.open_vault(brain_dir).close()
    path = db_path(brain_dir)
    before = (path.stat().st_ino, epoch(brain_dir))
    holding = [sys.executable, "-c", _HOLDER, str(path), str(HOLD_SECONDS)]
    saving = [sys.executable, *LORE, "--vault", str(brain_dir), "save", "From The CLI"]
    with anyio.fail_after(240):
        async with Client(server(brain_dir), mode="legacy") as first:
            await tool(first, "read_page", slug="Slugs")  # indexed and serving
            with (
                subprocess.Popen(holding, stdout=subprocess.PIPE, text=True) as holder,
                subprocess.Popen(
                    saving,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env=environment(),
                    text=True,
                ) as save,
            ):
                assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
                assert save.stdin is not None and save.stderr is not None
                save.stdin.write("saved by lore save, see [[Slugs]]\n")
                save.stdin.close()
                async with Client(server(brain_dir)) as second:
                    # It answered while the lock is still held: it did not wait for it.
                    assert holder.poll() is None, "the second server waited for the lock"
                    assert second.instructions is not None and "'brain'" in second.instructions
                    assert (await tool(first, "search", query="placeholder"))["hits"]
                    # Its calls wait for its first pass, which waits for the lock.
                    await tool(second, "save_page", slug="From Second", content="[[From First]]")
                    assert holder.poll() is not None
                    await tool(first, "save_page", slug="From First", content="[[From Second]]")
                    seen_by_first = await tool(first, "read_page", slug="From Second")
                    seen_by_second = await tool(second, "read_page", slug="From First")
                    assert seen_by_first["is_placeholder"] is False
                    assert seen_by_second["is_placeholder"] is False
                    assert [b["slug"] for b in seen_by_second["backlinks"]] == ["from-second"]
                    shapes = [(await tool(c, "get_graph"))["shape"] for c in (first, second)]
                    assert shapes[0] == shapes[1]
                assert save.wait(timeout=60) in (0, 1) and holder.wait(timeout=60) == 0
                failure = save.stderr.read()
    written = brain_dir / "From The CLI.md"
    if save.returncode == 0:
        assert written.read_text(encoding="utf-8").startswith("saved by lore save")
    else:
        assert "vault is busy" in failure and "Nothing was changed" in failure
        assert not written.exists()
    assert (path.stat().st_ino, epoch(brain_dir)) == before, "the index was replaced"
    state = ops.open_vault(brain_dir)
    try:
        assert not state.index.rebuilt
        assert {"from-first", "from-second"} <= set(page_slugs(state))
        assert_matches_fresh(state)
    finally:
        state.close()
