"""What a session hears beside the tools: instructions made when it starts, the server's
warnings at the level it asked for, and two prompts that read the vault as it is."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    LoggingMessageNotificationParams,
    PromptReference,
    TextContent,
)

from conftest import write
from lore_mcp import vault_ops
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio


async def test_instructions_say_the_vault_as_it_is_when_a_session_starts(
    brain_dir: Path, mode: str
) -> None:
    state = vault_ops.open_vault(brain_dir, scan=False)
    server = build_server(state)  # made before the first index: "being indexed now"
    vault_ops.index_vault(state)
    async with Client(server, mode="legacy") if mode == "legacy" else Client(server) as client:
        assert client.instructions is not None
        assert "'brain' (18 pages)" in client.instructions


async def set_level(client: Client, level: str) -> None:
    with warnings.catch_warnings():  # the SDK marks logging deprecated for 2026-07-28
        warnings.simplefilter("ignore")
        await client.set_logging_level(level)  # type: ignore[arg-type]


async def test_the_server_s_warnings_reach_a_client_at_its_level(brain_dir: Path) -> None:
    heard: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        heard.append(params)

    server = build_server(vault_ops.open_vault(brain_dir, scan=False))
    async with Client(server, mode="legacy", logging_callback=on_log) as client:
        assert client.server_capabilities is not None
        assert client.server_capabilities.logging is not None
        log = logging.getLogger("lore_mcp.watcher")
        log.warning("before any level was set")
        await set_level(client, "error")
        log.warning("below the level asked for")
        log.error("a write failed")
        await set_level(client, "warning")
        log.warning("a page could not be read")
        with anyio.fail_after(10):
            while len(heard) < 2:
                await anyio.sleep(0.02)
        assert [(m.level, m.logger, m.data) for m in heard] == [
            ("error", "lore_mcp.watcher", "a write failed"),
            ("warning", "lore_mcp.watcher", "a page could not be read"),
        ]
    logging.getLogger("lore_mcp.watcher").error("after the session: nobody to tell")
    assert len(heard) == 2


async def test_the_stateless_protocol_has_no_log_level(brain_dir: Path) -> None:
    server = build_server(vault_ops.open_vault(brain_dir, scan=False))
    async with Client(server, mode="2026-07-28") as client:
        assert client.server_capabilities is not None
        assert client.server_capabilities.logging is None
        with pytest.raises(MCPError) as refused:
            await set_level(client, "warning")
        assert refused.value.error.code == METHOD_NOT_FOUND


def said(result: object) -> str:
    messages = getattr(result, "messages", [])
    assert len(messages) == 1 and isinstance(messages[0].content, TextContent)
    return str(messages[0].content.text)


async def test_start_session_reads_the_home_page_and_what_changed(
    brain_dir: Path, mode: str
) -> None:
    write(brain_dir, "concepts/Fresh Idea.md", "# Fresh Idea\nabout [[Index]]\n")
    server = build_server(vault_ops.open_vault(brain_dir, scan=False))
    async with Client(server, mode=mode) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(listed) == {"start_session", "record"}
        assert [(a.name, a.required) for a in listed["record"].arguments or []] == [
            ("summary", True),
            ("page", False),
        ]
        with anyio.fail_after(20):
            started = said(await client.get_prompt("start_session", {"topic": "renaming"}))
        home = (brain_dir / "Index.md").read_text(encoding="utf-8")
        assert "the vault 'brain' (19 pages)" in started
        assert home.strip()[:500] in started
        changed = started.split("Changed lately")[1]
        assert changed.index("Fresh Idea (concepts/fresh-idea)") < 50  # the latest first
        assert "Renaming (tools/renaming)" in started.split("Pages about 'renaming'")[1]


async def test_record_names_the_page_and_completes_page_names(brain_dir: Path) -> None:
    server = build_server(vault_ops.open_vault(brain_dir, scan=False))
    async with Client(server, mode="legacy") as client:
        asked = said(
            await client.get_prompt(
                "record", {"summary": "Renames keep aliases.", "page": "renaming"}
            )
        )
        assert "Renames keep aliases." in asked
        assert "It belongs on 'Renaming' (tools/renaming) first." in asked
        new = said(await client.get_prompt("record", {"summary": "x", "page": "Roadmap 2"}))
        assert "named 'Roadmap 2', which does not exist yet" in new
        ref = PromptReference(type="ref/prompt", name="record")
        found = await client.complete(ref, {"name": "page", "value": "renam"})
        assert found.completion.values == ["tools/renaming"]
        none = await client.complete(ref, {"name": "summary", "value": "renam"})
        assert none.completion.values == []


async def test_a_read_only_vault_offers_no_prompt_to_record(brain_dir: Path) -> None:
    server = build_server(vault_ops.open_vault(brain_dir, scan=False, read_only=True))
    async with Client(server) as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["start_session"]
        started = said(await client.get_prompt("start_session", {}))
        assert "read-only" in started
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("record", {"summary": "x"})
        assert refused.value.error.code == INVALID_PARAMS
