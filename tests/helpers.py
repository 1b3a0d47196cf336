"""Checks shared by the tests: the live index and graph against a fresh index."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import CallToolResult, TextContent

from lore_mcp import vault_ops
from lore_mcp.config import LORE_DIR
from lore_mcp.vault_ops import AppState


def snapshot(state: AppState) -> dict[str, Any]:
    """Everything the index and graph say about the vault, minus file timestamps."""
    with state.lock:
        pages = sorted((r.key, r.title, r.path, r.hash) for r in state.index.pages.all())
        links = sorted(
            (
                k.source,
                k.target,
                k.line,
                k.context,
                k.key,
                k.exact,
                k.resolved,
                k.ambiguous,
                k.loose,
            )
            for k in state.index.links.all()
        )
        nodes = sorted((n.key, n.title, n.is_placeholder) for n in state.graph.nodes())
        return {
            "pages": pages,
            "links": links,
            "nodes": nodes,
            "edges": sorted(state.graph.edges()),
            "fts": state.index.search.documents(),
            "page_keys": sorted(state.pages),
            "placeholder_keys": sorted(state.placeholders),
        }


def fresh_snapshot(root: Path) -> dict[str, Any]:
    """The snapshot a brand-new index of a copy of the same files gives."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(LORE_DIR), symlinks=True)
        fresh = vault_ops.open_vault(copy)
        try:
            return snapshot(fresh)
        finally:
            fresh.close()


def assert_matches_fresh(state: AppState) -> None:
    """The live state must equal what a fresh index of the same files builds."""
    live = snapshot(state)
    fresh = fresh_snapshot(state.root)
    for part in live:
        assert live[part] == fresh[part], f"{part} differs from a fresh index"
    # The in-memory sets mirror the graph and the index.
    assert live["page_keys"] == sorted(s for s, _, p in live["nodes"] if not p)
    assert live["placeholder_keys"] == sorted(s for s, _, p in live["nodes"] if p)


CALL_TIMEOUT = 30


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    """Call a tool; a hang fails the test instead of stalling the run."""
    with anyio.fail_after(CALL_TIMEOUT):
        return await client.call_tool(tool, arguments)


def text(result: CallToolResult) -> str:
    """The text block of a tool result."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured content."""
    result = await call(client, tool, **arguments)
    assert result.is_error is False, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def fails(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; its error text."""
    result = await call(client, tool, **arguments)
    assert result.is_error is True, f"{tool} did not fail"
    return text(result)


# What a server subprocess needs from our environment; nothing else leaks in (no
# LORE_VAULT, no token unless a test gives one).
PASS_THROUGH = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "SYSTEMROOT",
    "VIRTUAL_ENV",
    "PYTHONPATH",
)


def environment(**extra: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASS_THROUGH if name in os.environ}
    return env | {"PYTHONIOENCODING": "utf-8"} | extra


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m lore_mcp ARGS` to the end, with its output."""
    return subprocess.run(
        [sys.executable, "-m", "lore_mcp", *args],
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def page_slugs(state: AppState) -> set[str]:
    """The names tools show for the vault's pages (their slugs, or paths where slugs clash)."""
    return {state.handle(key) for key in state.pages}


def placeholder_slugs(state: AppState) -> set[str]:
    """The names tools show for the vault's placeholders."""
    return {state.handle(key) for key in state.placeholders}
