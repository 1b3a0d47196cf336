"""Edits made outside lore: found however they were made, and on the record.

An edit that keeps a file's size and modification time (`cp -p`, `rsync -t`) is found by
the periodic check, the watcher's events and a restart, through the inode and ctime the
index keeps for each file and a hash of the bytes of a file whose stamp says only that.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from conftest import write
from lore_mcp import vault_ops as engine
from lore_mcp.vault_ops import AppState
from lore_mcp.watcher import start_watcher


def copy_keeping_size_and_mtime(path: Path, text: str, scratch: Path) -> None:
    """Put `text` (as long as the file's bytes) in the file as `cp -p` does: the bytes
    written in place, then the source's times set on it, which are the file's own."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    source = scratch / "source.md"
    source.write_text(text, encoding="utf-8")
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    shutil.copy2(source, path)
    # The kernel's clock for ctime is coarse: within one tick, set the times once more.
    while path.stat().st_ctime_ns == before.st_ctime_ns:
        time.sleep(0.01)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


def content(state: AppState, name: str) -> str:
    return engine.read_page(state, name).content


def test_the_periodic_check_finds_an_edit_that_kept_size_and_mtime(
    vault_dir: Path, tmp_path: Path
) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    state = engine.open_vault(vault_dir)
    try:
        copy_keeping_size_and_mtime(page, "links [[Omega]]\n", tmp_path)
        assert engine.changed_on_disk(state) == ["Page.md"]
        report = engine.apply_external_changes(state, engine.changed_on_disk(state))
        assert report.updated == 1
        assert content(state, "Page") == "links [[Omega]]\n"
        assert [hit.slug for hit in engine.search(state, "omega").hits] == ["page"]
        assert engine.changed_on_disk(state) == []  # stamped anew: a stat finds it the same
    finally:
        state.close()


def test_a_restart_finds_an_edit_that_kept_size_and_mtime(vault_dir: Path, tmp_path: Path) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    engine.open_vault(vault_dir).close()
    copy_keeping_size_and_mtime(page, "links [[Omega]]\n", tmp_path)
    state = engine.open_vault(vault_dir)
    try:
        assert content(state, "Page") == "links [[Omega]]\n"
        assert "omega" in {state.handle(key) for key in state.placeholders}
    finally:
        state.close()


def test_the_watcher_takes_in_a_copy_that_kept_size_and_mtime(
    vault_dir: Path, tmp_path: Path
) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    state = engine.open_vault(vault_dir)
    try:
        start_watcher(state, 0.05, check_every=3600)  # file events only
        copy_keeping_size_and_mtime(page, "links [[Omega]]\n", tmp_path)
        deadline = time.monotonic() + 10
        while content(state, "Page") != "links [[Omega]]\n" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert content(state, "Page") == "links [[Omega]]\n"
    finally:
        state.close()


def test_a_new_ctime_with_the_same_bytes_costs_a_hash_once(vault_dir: Path) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    state = engine.open_vault(vault_dir)
    try:
        before = page.stat().st_ctime_ns
        while page.stat().st_ctime_ns == before:  # chmod: a new ctime, the same bytes
            time.sleep(0.01)
            page.chmod(0o600 if page.stat().st_mode & 0o077 else 0o644)
        assert engine.changed_on_disk(state) == ["Page.md"]
        report = engine.apply_external_changes(state, ["Page.md"])
        assert (report.updated, report.unchanged) == (0, 1)
        assert engine.changed_on_disk(state) == []
    finally:
        state.close()
