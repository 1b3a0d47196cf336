"""The benchmark's SDK floor: lore-mcp's tools as declared, answering recorded results."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from lore_mcp import vault_ops
from lore_mcp.server import build_server

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `bench` is a folder of the repository, not installed
    sys.path.append(str(ROOT))

from bench.sdkfloor import build  # noqa: E402

pytestmark = pytest.mark.anyio


def _answer(result: Any) -> dict[str, Any]:
    answer: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return answer


async def test_declares_the_tools_of_the_real_server(brain_dir: Path) -> None:
    """Same names, input and output schemas: the client validates the same things."""
    state = vault_ops.open_vault(brain_dir)
    async with Client(build_server(state)) as real, Client(build({})) as floor:
        ours = {tool.name: tool for tool in (await real.list_tools()).tools}
        canned = {tool.name: tool for tool in (await floor.list_tools()).tools}
    assert canned.keys() == ours.keys()
    for name, tool in ours.items():
        assert canned[name].input_schema == tool.input_schema, name
        assert canned[name].output_schema == tool.output_schema, name


async def test_replays_recorded_answers_in_order_then_fails(brain_dir: Path) -> None:
    state = vault_ops.open_vault(brain_dir)
    async with Client(build_server(state)) as real:
        first = await real.call_tool("read_page", {"slug": "index"})
        second = await real.call_tool("read_page", {"slug": "getting-started"})
        found = await real.call_tool("search", {"query": "links"})
    recorded = {"read_page": [_answer(first), _answer(second)], "search": [_answer(found)]}
    async with Client(build(recorded)) as floor:
        # The arguments are validated as the real server does, then ignored.
        assert _answer(await floor.call_tool("read_page", {"slug": "x"})) == _answer(first)
        assert _answer(await floor.call_tool("search", {"query": "y"})) == _answer(found)
        assert _answer(await floor.call_tool("read_page", {"slug": "x"})) == _answer(second)
        spent = await floor.call_tool("read_page", {"slug": "x"})
        bad = await floor.call_tool("read_page", {"slug": ""})
    assert spent.is_error
    assert "no recorded answers of read_page left" in spent.content[0].text  # type: ignore[union-attr]
    assert bad.is_error  # a slug must not be empty, as in the real server
