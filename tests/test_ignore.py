"""What `.gitignore` and `.loreignore` files leave out is no part of the vault: no page,
not looked into, not watched, never written to, and counted by `lore doctor`."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, fails, ok
from lore_mcp import vault_ops
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState
from lore_mcp.watcher import start_watcher
from test_watcher import FAST, wait_until

pytestmark = pytest.mark.anyio


def project(root: Path) -> None:
    """A project folder kept as a vault, with the files git ignores in it."""
    write(root, ".gitignore", "node_modules/\nbuild\n*.draft.md\n!keep.draft.md\n")
    write(root, ".loreignore", "archive/\n")
    write(root, "Home.md", "[[Notes]] [[Readme]] [[Old]]\n")
    write(root, "Notes.md", "notes\n")
    write(root, "node_modules/pkg/Readme.md", "a package's readme\n")
    write(root, "build/Readme.md", "generated\n")
    write(root, "idea.draft.md", "half an idea\n")
    write(root, "keep.draft.md", "kept on purpose\n")
    write(root, "archive/Old.md", "old\n")
    write(root, "docs/.gitignore", "private.md\n")
    write(root, "docs/private.md", "not for the vault\n")
    write(root, "docs/Public.md", "for the vault\n")


@pytest.fixture
def vault(vault_dir: Path) -> AppState:
    project(vault_dir)
    return vault_ops.open_vault(vault_dir)


def test_ignored_files_are_no_pages(vault: AppState) -> None:
    try:
        assert sorted(vault.pages) == ["Home.md", "Notes.md", "docs/Public.md", "keep.draft.md"]
        links = {k.target: k.exists for k in vault_ops.read_page(vault, "Home").links}
        assert links == {"Notes": True, "Readme": False, "Old": False}  # placeholders now
        report = vault_ops.doctor(vault)
        # node_modules/, build/, idea.draft.md, archive/, docs/private.md
        assert report.ignored == 5
        assert report.unindexed == []
        assert_matches_fresh(vault)
    finally:
        vault.close()


async def test_a_write_into_an_ignored_place_is_refused(vault: AppState) -> None:
    async with Client(build_server(vault)) as client:
        for name in ("build/New", "node_modules/x/Page", "archive/Also", "other.draft"):
            message = await fails(client, "save_page", slug=name, content="x\n")
            assert "left out of the vault by a .gitignore or .loreignore" in message
        assert not (vault.root / "build/New.md").exists()
        message = await fails(client, "rename_page", slug="Notes", new_name="archive/Notes")
        assert ".loreignore" in message and (vault.root / "Notes.md").exists()
        assert (await ok(client, "save_page", slug="docs/Fine", content="x\n"))["created"]


def test_a_changed_ignore_file_changes_the_vault(vault: AppState) -> None:
    try:
        write(vault.root, ".gitignore", "node_modules/\n")  # build/ and drafts are back
        vault_ops.apply_external_changes(vault, [".gitignore"])
        assert {"build/Readme.md", "idea.draft.md"} <= set(vault.pages)
        assert "node_modules/pkg/Readme.md" not in vault.pages
        (vault.root / ".loreignore").unlink()
        vault_ops.apply_external_changes(vault, [".loreignore"])
        assert "archive/Old.md" in vault.pages
        assert_matches_fresh(vault)
    finally:
        vault.close()


def test_the_watcher_passes_ignored_files_over_and_sees_ignore_files(vault: AppState) -> None:
    start_watcher(vault, FAST)
    try:
        write(vault.root, "node_modules/pkg/Other.md", "more of a package\n")
        write(vault.root, "Seen.md", "a page\n")
        assert wait_until(lambda: "Seen.md" in vault.pages)
        assert "node_modules/pkg/Other.md" not in vault.pages
        write(vault.root, ".gitignore", "")
        assert wait_until(lambda: "node_modules/pkg/Other.md" in vault.pages)
        assert wait_until(lambda: "build/Readme.md" in vault.pages)
    finally:
        vault.close()


def test_the_periodic_check_counts_no_ignored_file_as_changed(vault: AppState) -> None:
    try:
        write(vault.root, "build/Another.md", "generated again\n")
        assert vault_ops.changed_on_disk(vault) == []
    finally:
        vault.close()


async def test_served_ignored_pages_cannot_be_read(vault_dir: Path) -> None:
    project(vault_dir)
    async with Client(build_server(vault_ops.open_vault(vault_dir, scan=False))) as client:
        message = await fails(client, "read_page", slug="build/Readme")
        assert "No page named" in message
        listed = await ok(client, "list_pages")
        assert listed["total"] == 4
