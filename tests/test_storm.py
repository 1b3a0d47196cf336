"""An event storm: a `git checkout` that rewrites 20,000 pages while a server watches.
The kernel's queue of file events overflows and events are lost; the index still
converges to what a fresh index of the files builds, with no restart."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from helpers import fresh_snapshot, placeholder_slugs, snapshot
from lore_mcp import vault_ops as engine
from lore_mcp.watcher import start_watcher

PAGES = 20_000
FOLDERS = 100
CONVERGE_SECONDS = 60


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=lore", "-c", "user.email=lore@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=300,
    )


def write_pages(root: Path, version: str) -> None:
    for i in range(PAGES):
        folder = root / f"folder {i % FOLDERS}"
        folder.mkdir(exist_ok=True)
        neighbour = (i * 7 + (1 if version == "base" else 3)) % PAGES
        text = (
            f"# Page {i}\n\nThe {version} text of page {i}, {version}word{i}.\n"
            f"See [[Page {neighbour}]] and [[{version} hub]].\n"
        )
        (folder / f"Page {i}.md").write_text(text, encoding="utf-8")


@pytest.mark.slow
def test_a_checkout_of_20000_changed_pages_converges(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    write_pages(root, "base")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "changed")
    write_pages(root, "changed")
    git(root, "commit", "-q", "-a", "-m", "changed")
    git(root, "checkout", "-q", "-")
    state = engine.open_vault(root)
    try:
        assert "base-hub" in placeholder_slugs(state)
        # The minute's check is put out of reach: the events (and their loss) must do it.
        start_watcher(state, check_every=3600)
        git(root, "checkout", "-q", "changed")
        expected = fresh_snapshot(root)
        deadline = time.monotonic() + CONVERGE_SECONDS
        while (live := snapshot(state)) != expected and time.monotonic() < deadline:
            time.sleep(1)
        assert live == expected, "the index did not converge to a fresh index of the files"
        assert "changed-hub" in placeholder_slugs(state) and "base-hub" not in placeholder_slugs(
            state
        )
        hits = engine.search(state, '"changedword123"').hits
        assert [hit.slug for hit in hits] == ["folder-23/page-123"]
        assert engine.search(state, '"baseword123"').hits == []
    finally:
        state.close()
