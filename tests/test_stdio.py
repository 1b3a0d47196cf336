"""End to end: `python -m lore_mcp` as a real stdio subprocess, in both protocol eras."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import write
from helpers import call, environment, ok, run_cli, text
from lore_mcp import vault_ops as engine

pytestmark = pytest.mark.anyio


def server_params(args: list[str], **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "lore_mcp", *args], env=environment(**env)
    )


async def exercise(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert len(tools) == 9 and all(t.output_schema for t in tools)
    page = await call(client, "read_page", slug="Slugs")
    assert page.is_error is False
    assert text(page).startswith("<page-info>\ntitle: Slugs\nslug: concepts/slugs\n")
    saved = await call(
        client, "save_page", slug="notes/Stdio Test", content="Saved over stdio: 記憶 zebra."
    )
    assert saved.is_error is False and saved.structured_content is not None
    assert saved.structured_content["created"] is True
    found = await call(client, "search", query="zebra")
    assert found.structured_content is not None
    assert [hit["slug"] for hit in found.structured_content["hits"]] == ["notes/stdio-test"]
    error = await call(client, "read_page", slug="no such page")
    assert error.is_error is True and "No page named" in text(error)
    again = await call(client, "read_page", slug="notes/stdio-test")
    assert again.is_error is False and "記憶 zebra" in text(again)


@pytest.mark.parametrize("mode", ["legacy", pytest.param("2026-07-28", marks=pytest.mark.slow)])
async def test_stdio_server(brain_dir: Path, mode: str) -> None:
    params = server_params(["--vault", str(brain_dir), "--no-watch"])
    with anyio.fail_after(60):
        client = Client(params, mode="legacy") if mode == "legacy" else Client(params)
        async with client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            assert client.instructions is not None and "'brain'" in client.instructions
            await exercise(client)
    assert (brain_dir / "notes" / "Stdio Test.md").read_text(encoding="utf-8").endswith("zebra.")


@pytest.mark.slow
async def test_vault_from_environment(brain_dir: Path) -> None:
    params = server_params(["--no-watch", "--log-level", "warning"], LORE_VAULT=str(brain_dir))
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            result = await call(client, "get_graph")
            assert result.structured_content is not None
            assert result.structured_content["shape"]["pages"] == 18


def test_no_vault_is_a_usage_error() -> None:
    done = run_cli()
    assert done.returncode == 2 and done.stdout == ""
    assert "--vault" in done.stderr and "LORE_VAULT" in done.stderr


def test_missing_vault_folder(tmp_path: Path) -> None:
    done = run_cli("--vault", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "does not exist; `lore init" in done.stderr


def test_bad_log_level(brain_dir: Path) -> None:
    done = run_cli("--vault", str(brain_dir), "--log-level", "LOUD")
    assert done.returncode == 2 and "--log-level" in done.stderr


@pytest.mark.slow
async def test_a_large_first_index_misses_no_edit_made_while_it_runs(vault_dir: Path) -> None:
    # Enough pages that the first index pass is still running when the edit is made.
    count = 1600
    for i in range(count):
        write(vault_dir, f"Page {i}.md", f"# Page {i}\n\nSee [[Page {(i + 1) % count}]].\n")
    params = server_params(["--vault", str(vault_dir)])  # watching
    with anyio.fail_after(120):
        async with Client(params, mode="legacy") as client:
            # The server looked at the files before it answered `initialize`: only the
            # watcher can bring this page in.
            write(vault_dir, "Late Page.md", "Written while the server starts. [[Page 7]]\n")
            page = await ok(client, "read_page", slug="Page 7")
            assert "page-6" in [ref["slug"] for ref in page["backlinks"]]
            while True:
                backlinks = await ok(client, "get_backlinks", slug="Page 7")
                sources = sorted(link["slug"] for link in backlinks["linked"])
                if "late-page" in sources:
                    break
                await anyio.sleep(0.1)
            assert sources == ["late-page", "page-6"]
            shape = (await ok(client, "get_graph"))["shape"]
            assert shape["pages"] == count + 1


def test_indexing_turns_the_cycle_collector_back_on(vault_dir: Path) -> None:
    """A pass over the vault runs with the collector off; it must be on again after the
    pass, even one that failed, or a long-running server would never free its garbage
    cycles. A host that keeps it off keeps it off."""
    write(vault_dir, "Page.md", "[[Other]]\n")

    def fail(done: int, total: int) -> None:
        assert not gc.isenabled()
        raise RuntimeError("the pass broke off")

    assert gc.isenabled()
    opened = engine.open_vault(vault_dir, scan=False)
    try:
        with pytest.raises(RuntimeError, match="broke off"):
            engine.index_vault(opened, progress=fail)
        assert gc.isenabled()
        gc.disable()
        engine.index_vault(opened)
        assert not gc.isenabled()
    finally:
        gc.enable()
        opened.close()
