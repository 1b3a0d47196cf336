"""What real clients ask of a server beyond the tools: progress while the first index
runs, completion of the page template's slug, and proper errors for prompts."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ResourceTemplateReference

from conftest import write
from helpers import text
from lore_mcp import vault_ops
from lore_mcp.resources import PAGE_TEMPLATE
from lore_mcp.server import build_server
from test_contention import write_lock

pytestmark = pytest.mark.anyio

TEMPLATE = ResourceTemplateReference(type="ref/resource", uri=PAGE_TEMPLATE)


async def test_a_call_waiting_for_the_first_index_reports_progress(brain_dir: Path) -> None:
    vault_ops.open_vault(brain_dir).close()  # an index whose write lock can be held
    write(brain_dir, "Late.md", "written since the last index\n")
    heard: list[str | None] = []
    answers: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    with ExitStack() as lock:
        lock.enter_context(write_lock(brain_dir))  # another process writes: the pass waits
        state = vault_ops.open_vault(brain_dir, scan=False)
        async with Client(build_server(state)) as client:

            async def read() -> None:
                result = await client.call_tool(
                    "read_page", {"slug": "Late"}, progress_callback=progress
                )
                answers.append(text(result))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read)
                with anyio.fail_after(20):
                    while not heard:
                        await anyio.sleep(0.05)
                assert not answers and not state.ready.is_set()  # it is still waiting
                assert heard[0] is not None and heard[0].startswith("indexing the vault")
                lock.close()  # the other process is done: the pass runs, the call answers
    assert answers and "written since the last index" in answers[0]


async def test_the_page_template_completes_slugs(brain_dir: Path, mode: str) -> None:
    state = vault_ops.open_vault(brain_dir, scan=False)
    async with Client(build_server(state), mode=mode) as client:
        found = await client.complete(TEMPLATE, {"name": "slug", "value": "link"})
        assert found.completion.values[:2] == ["concepts/link-resolution", "concepts/link-syntax"]
        first = await client.complete(TEMPLATE, {"name": "slug", "value": ""})
        assert len(first.completion.values) == 18 and first.completion.total == 18
        nothing = await client.complete(TEMPLATE, {"name": "slug", "value": "zzzzzz"})
        assert nothing.completion.values == []


async def test_an_unknown_prompt_is_invalid_params(brain_dir: Path) -> None:
    async with Client(build_server(vault_ops.open_vault(brain_dir, scan=False))) as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("nope")
        assert refused.value.error.code == INVALID_PARAMS
