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
from helpers import fails, ok
from lore_mcp import vault_ops
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
