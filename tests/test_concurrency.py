"""Several states (and processes) on one vault share the index and lose nothing."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import assert_matches_fresh, placeholder_slugs, snapshot
from lore_mcp import vault_ops as ops
from lore_mcp.vault_ops import AppState


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


@pytest.mark.slow
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


# Each process opens the vault and saves pages, listing between saves.
_SAVE_MANY = """
import sys
from lore_mcp import vault_ops as ops
root, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
state = ops.open_vault(root)
try:
    for i in range(count):
        ops.save_page(state, f"{prefix}/page {i}", f"[[page {i}]] [[{prefix}-hub]]\\n")
        ops.list_pages(state, limit=5)
finally:
    state.close()
"""


@pytest.mark.slow
def test_two_processes_lose_no_write(vault_dir: Path) -> None:
    count = 80
    ops.open_vault(vault_dir).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", _SAVE_MANY, str(vault_dir), prefix, str(count)])
        for prefix in ("one", "two")
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    state = ops.open_vault(vault_dir)
    try:
        assert len(state.pages) == 2 * count
        assert {"one-hub", "two-hub"} <= set(placeholder_slugs(state))
        assert ops.read_page(state, "one/page 7").alternatives == []
        assert_matches_fresh(state)
    finally:
        state.close()
