"""The history through the tools: read_page counts and reads kept versions, save_page
restores one, the history follows a page through renames, and expected_hash="" means
"only if the page does not exist yet". Everything through the real tools, in memory."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, fails, ok
from lore_mcp import vault_ops
from lore_mcp.cli import main as lore
from lore_mcp.errors import VaultError
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def page_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.md"))
        if not p.relative_to(root).as_posix().startswith(".")
    }


def serve(root: Path, mode: str = "auto", **options: Any) -> Client:
    """A client of a server over the vault at `root`, in memory."""
    era: Any = mode
    return Client(build_server(vault_ops.open_vault(root, scan=False), **options), mode=era)


# -- expected_hash="" -----------------------------------------------------------------------


async def test_an_empty_expected_hash_only_creates(vault_dir: Path) -> None:
    write(vault_dir, "Hub.md", "see [[Wanted]]\n")
    write(vault_dir, "Taken.md", "taken\n")
    before = page_files(vault_dir)
    async with serve(vault_dir) as client:
        for mode in ("replace", "append", "prepend"):
            refused = await fails(
                client, "save_page", slug="Taken", content="mine\n", mode=mode, expected_hash=""
            )
            assert "'Taken.md' already exists" in refused and sha(b"taken\n") in refused
            assert "Nothing was written" in refused
        for tool, more in [("delete_page", {}), ("rename_page", {"new_name": "Moved"})]:
            assert "already exists" in await fails(
                client, tool, slug="Taken", expected_hash="", **more
            )
        assert page_files(vault_dir) == before
        assert not (vault_dir / ".lore/history").exists()  # nothing was kept: nothing changed
        created = await ok(client, "save_page", slug="Fresh", content="new\n", expected_hash="")
        assert created["created"] and (vault_dir / "Fresh.md").read_bytes() == b"new\n"
        again = await fails(client, "save_page", slug="Fresh", content="2\n", expected_hash="")
        assert "already exists" in again and (vault_dir / "Fresh.md").read_bytes() == b"new\n"
        filled = await ok(client, "save_page", slug="Wanted", content="x\n", expected_hash="")
        assert filled["promoted"]


# -- the history follows a page through renames ---------------------------------------------

CRLF = b"\xef\xbb\xbffirst line\r\nsecond line\r\n"  # a byte-order mark and CRLF breaks
PLAIN = "plain text\n"
NOW = "now, the fourth\n"


def kept_hashes(root: Path, name: str) -> list[str]:
    opened = vault_ops.open_vault(root)
    try:
        return [version.hash for version in vault_ops.page_history(opened, name).versions]
    finally:
        opened.close()


async def test_the_history_follows_a_rename(vault_dir: Path) -> None:
    write(vault_dir, "Hub.md", "see [[Draft]]\n")
    (vault_dir / "Draft.md").write_bytes(CRLF)
    async with serve(vault_dir) as client:
        await ok(client, "save_page", slug="Draft", content=PLAIN)
        await ok(client, "rename_page", slug="Draft", new_name="archive/Final")
    assert kept_hashes(vault_dir, "Final") == [sha(CRLF)]
    assert lore(["history", "Draft", "--vault", str(vault_dir)]) == 1  # nothing kept there
    assert lore(["restore", "Final", "--vault", str(vault_dir)]) == 0
    assert page_files(vault_dir) == {"Hub.md": b"see [[Final]]\n", "archive/Final.md": CRLF}


async def test_the_history_comes_back_with_a_rename_and_back(vault_dir: Path) -> None:
    (vault_dir / "Draft.md").write_bytes(CRLF)
    async with serve(vault_dir) as client:
        await ok(client, "save_page", slug="Draft", content=PLAIN)  # keeps CRLF
        await ok(client, "rename_page", slug="Draft", new_name="Final")
        await ok(client, "save_page", slug="Final", content=NOW)  # keeps PLAIN, as Final
        await ok(client, "rename_page", slug="Final", new_name="Draft")
    assert kept_hashes(vault_dir, "Draft") == [sha(PLAIN.encode()), sha(CRLF)]
    assert lore(["history", "Final", "--vault", str(vault_dir)]) == 1
    assert lore(["restore", "Draft", "--version", "2", "--vault", str(vault_dir)]) == 0
    assert (vault_dir / "Draft.md").read_bytes() == CRLF
    assert sorted(p.name for p in (vault_dir / ".lore/history").iterdir()) == ["Draft.md"]


async def test_a_rename_cut_short_takes_the_history_along_when_it_is_finished(
    vault_dir: Path,
) -> None:
    """A rename that fails after moving the page, before moving its history (here a file
    stands where the history's new folder must go), is finished by the next start."""
    (vault_dir / "Draft.md").write_bytes(CRLF)
    opened = vault_ops.open_vault(vault_dir)
    try:
        vault_ops.save_page(opened, "Draft", PLAIN)
        obstacle = vault_dir / ".lore/history/archive"
        obstacle.write_bytes(b"in the way")
        with pytest.raises(VaultError):
            vault_ops.rename_page(opened, "Draft", "archive/Final")
    finally:
        opened.close()
    assert page_files(vault_dir) == {"archive/Final.md": PLAIN.encode()}  # moved, not done
    obstacle.unlink()
    assert kept_hashes(vault_dir, "Final") == [sha(CRLF)]  # the start finished the rename
    assert not (vault_dir / ".lore/history/Draft.md").exists()
    opened = vault_ops.open_vault(vault_dir)
    try:
        assert_matches_fresh(opened)
    finally:
        opened.close()
