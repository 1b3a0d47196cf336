"""Read-only mode: no write tools at all, and a vault whose files never change."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import write
from helpers import call, environment, text
from lore_mcp import vault_ops as engine
from lore_mcp.cli_parser import build_parser
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR
from lore_mcp.errors import VaultError
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio

READ_TOOLS = {"read_page", "list_pages", "search", "search_titles", "get_backlinks", "get_graph"}
# `lore` as a child process: the installed script's entry point.
LORE = ["-c", "from lore_mcp.cli import lore_main; lore_main()"]


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder outside `.lore/`, with its bytes and modification time."""
    found: dict[str, tuple[bytes, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == LORE_DIR or rel.startswith(f"{LORE_DIR}/"):
            continue
        found[rel] = (path.read_bytes() if path.is_file() else b"", path.stat().st_mtime_ns)
    return found


async def hits(client: Client, query: str) -> list[Any]:
    found = (await call(client, "search", query=query)).structured_content
    assert found is not None
    return list(found["hits"])


async def test_no_write_tools_and_no_change(brain_dir: Path, mode: str) -> None:
    before = files(brain_dir)
    state = engine.open_vault(brain_dir, scan=False, read_only=True)
    server = build_server(state, watch=True)
    async with Client(server, mode="legacy") if mode == "legacy" else Client(server) as client:
        assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
        assert client.instructions is not None and "read-only" in client.instructions
        assert "save_page" not in client.instructions
        writes: list[tuple[str, dict[str, Any]]] = [
            ("save_page", {"slug": "Index", "content": "overwritten"}),
            ("save_page", {"slug": "New Page", "content": "new"}),
            ("delete_page", {"slug": "Index"}),
            ("rename_page", {"slug": "Index", "new_name": "Moved"}),
        ]
        for tool, arguments in writes:
            refused = await call(client, tool, **arguments)
            assert refused.is_error is True and "Unknown tool" in text(refused)
        reads: list[tuple[str, dict[str, Any]]] = [
            ("read_page", {"slug": "Index"}),
            ("read_page", {"slug": "roadmap"}),
            ("list_pages", {"include_placeholders": True}),
            ("search", {"query": "link"}),
            ("search_titles", {"query": "slug"}),
            ("get_backlinks", {"slug": "Slugs", "include_unlinked": True}),
            ("get_graph", {"slug": "Index", "depth": 3}),
            ("get_graph", {}),
        ]
        for tool, arguments in reads:
            assert (await call(client, tool, **arguments)).is_error is False
        assert files(brain_dir) == before
        # The watcher still runs, and the index (a cache under .lore/) still follows.
        write(brain_dir, "Written Outside.md", "An editor wrote [[Index|this]].")
        with anyio.fail_after(10):
            while not await hits(client, "editor"):
                await anyio.sleep(0.1)
    assert (brain_dir / LORE_DIR / CACHE_DIR / DB_NAME).is_file()
    assert not (brain_dir / LORE_DIR / "audit.jsonl").exists()
    assert set(files(brain_dir)) == {*before, "Written Outside.md"}


def test_the_engine_refuses_writes_too(brain_dir: Path) -> None:
    state = engine.open_vault(brain_dir, read_only=True)
    try:
        for write_op in (
            lambda: engine.save_page(state, "Index", "x"),
            lambda: engine.delete_page(state, "Index"),
            lambda: engine.rename_page(state, "Index", "Moved"),
        ):
            with pytest.raises(VaultError, match="read-only"):
                write_op()
    finally:
        state.close()


def test_lore_serve_takes_the_flags() -> None:
    args = build_parser().parse_args(["serve", "--read-only", "--max-result-chars", "5000"])
    assert (args.read_only, args.max_result_chars) == (True, 5000)
    args = build_parser().parse_args(["serve"])
    assert (args.read_only, args.max_result_chars) == (False, None)


def params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=list(args), env=environment())


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(["-m", "lore_mcp"], id="lore-mcp"),
        pytest.param([*LORE, "serve"], id="lore", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow
async def test_stdio_read_only_with_a_budget(brain_dir: Path, entry: list[str]) -> None:
    write(brain_dir, "Long.md", "".join(f"## Part {i}\n{'text ' * 30}\n" for i in range(200)))
    before = files(brain_dir)
    flags = ["--vault", str(brain_dir), "--no-watch", "--read-only", "--max-result-chars", "3000"]
    with anyio.fail_after(60):
        async with Client(params(*entry, *flags), mode="legacy") as client:
            assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
            page = await call(client, "read_page", slug="Long")
            assert page.is_error is False and len(text(page)) <= 3000
            data = page.structured_content
            assert data is not None and data["truncated"] is True
            assert data["content"].startswith("## Part 0\n") and data["next_offset"] > 0
            rest = await call(client, "read_page", slug="Long", offset=data["next_offset"])
            assert text(rest).count("## Part") > 1
    assert files(brain_dir) == before
