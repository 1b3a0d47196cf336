"""Several states (and processes) on one vault share the index and lose nothing."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

from conftest import write
from helpers import assert_matches_fresh, snapshot
from lore_mcp import vault_ops as ops
from lore_mcp.state import AppState


def test_two_states_see_each_others_writes(vault_dir: Path) -> None:
    a = ops.open_vault(vault_dir)
    b = ops.open_vault(vault_dir)
    try:
        ops.save_page(a, "x", "to [[y]]")
        assert ops.read_page(b, "x").links[0].slug == "y"
        assert "y" in b.placeholders
        ops.save_page(b, "notes/y", "real now")
        assert ops.read_page(a, "x").links[0].slug == "notes/y"
        assert "y" not in a.placeholders
        ops.rename_page(a, "notes/y", "Zed")
        assert ops.read_page(b, "x").links[0].slug == "notes/zed"
        ops.delete_page(b, "x")
        assert "x" not in {p.slug for p in ops.list_pages(a).pages}
        assert snapshot(a) == snapshot(b)
        assert_matches_fresh(a)
    finally:
        a.close()
        b.close()


def test_two_states_writing_at_once_lose_nothing(vault_dir: Path) -> None:
    a = ops.open_vault(vault_dir)
    b = ops.open_vault(vault_dir)
    errors: list[BaseException] = []

    def writer(state: AppState, mine: str, theirs: str) -> None:
        try:
            for i in range(60):
                ops.save_page(state, f"{mine}{i}", f"[[{theirs}{i}]] [[{mine}{i + 1}]]")
                ops.read_page(state, f"{mine}{i}")
                ops.search(state, theirs)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(a, "a", "b")),
        threading.Thread(target=writer, args=(b, "b", "a")),
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        ops.list_pages(a)
        ops.list_pages(b)
        assert len(a.pages) == len(b.pages) == 120
        assert snapshot(a) == snapshot(b)
        assert_matches_fresh(a)
    finally:
        a.close()
        b.close()


def _save_many(root: str, prefix: str, count: int) -> None:
    state = ops.open_vault(root)
    try:
        for i in range(count):
            ops.save_page(state, f"{prefix}/page {i}", f"[[page {i}]] [[{prefix}-hub]]\n")
            ops.list_pages(state, limit=5)
    finally:
        state.close()


def test_two_processes_lose_no_write(vault_dir: Path) -> None:
    ops.open_vault(vault_dir).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_save_many, args=(str(vault_dir), p, 80)) for p in ("one", "two")]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    state = ops.open_vault(vault_dir)
    try:
        assert len(state.pages) == 160
        assert {"one-hub", "two-hub"} <= set(state.placeholders)
        assert ops.read_page(state, "one/page 7").alternatives == []
        assert_matches_fresh(state)
    finally:
        state.close()


def test_a_read_starts_at_once_only_when_nothing_is_due(vault_dir: Path) -> None:
    """`reads_at_once` is what lets the server run a read on its event loop: only after
    the first index pass, with the lock free (and then held), and with no commit from
    another process still to take in."""
    write(vault_dir, "Page.md", "text\n")
    state = ops.open_vault(vault_dir, scan=False)
    with ops.reads_at_once(state) as at_once:
        assert not at_once  # the first index pass has not run
    ops.index_vault(state)
    with ops.reads_at_once(state) as at_once:
        assert at_once
        assert not _free(state.lock)  # held for the read, against other threads

    holder_has_it, release = threading.Event(), threading.Event()

    def hold() -> None:
        with state.lock:
            holder_has_it.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    holder_has_it.wait(10)
    with ops.reads_at_once(state) as at_once:
        assert not at_once
    release.set()
    holder.join()

    other = ops.open_vault(vault_dir)
    ops.save_page(other, "Elsewhere", "written by another process\n")
    with ops.reads_at_once(state) as at_once:
        assert not at_once  # the read must take that commit in first
    assert ops.read_page(state, "elsewhere").content == "written by another process\n"
    with ops.reads_at_once(state) as at_once:
        assert at_once
    assert _free(state.lock)
    other.close()
    state.close()


def _free(lock: threading.RLock) -> bool:
    """Whether another thread could take the lock now."""
    result: list[bool] = []

    def probe() -> None:
        taken = lock.acquire(blocking=False)
        if taken:
            lock.release()
        result.append(taken)

    prober = threading.Thread(target=probe)
    prober.start()
    prober.join()
    return result[0]
