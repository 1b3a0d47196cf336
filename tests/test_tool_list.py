"""What `tools/list` costs every session: lean output schemas, descriptions without
docstring indentation, and still schemas a strict client validates results with."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema  # no stubs (see pyproject.toml); the SDK depends on it
import pytest
from mcp import Client
from mcp.types import Tool

from lore_mcp import vault_ops
from lore_mcp.server import build_server
from lore_mcp.vaults import Vaults, VaultSpec

pytestmark = pytest.mark.anyio

# Peers list their tools in about 10,000 characters; ours were 30,500 (19,100 of them
# output schemas) before the schemas were made lean. Counted as JSON on the wire.
MAX_TOOLS_LIST_CHARS = 15_000


def listed_chars(tools: list[Tool]) -> int:
    return len(
        json.dumps(
            [t.model_dump(exclude_none=True, by_alias=True) for t in tools], separators=(",", ":")
        )
    )


async def test_several_vaults_list_the_vault_argument_within_the_limit(tmp_path: Path) -> None:
    specs = [VaultSpec(name, tmp_path / name) for name in ("personal", "team")]
    for spec in specs:
        spec.root.mkdir()
    async with Client(build_server(Vaults(specs))) as client:
        tools = (await client.list_tools()).tools
        assert all("vault" in t.input_schema["properties"] for t in tools)
        assert listed_chars(tools) < MAX_TOOLS_LIST_CHARS


async def test_tools_list_is_lean_and_still_validates(brain_dir: Path) -> None:
    async with Client(build_server(vault_ops.open_vault(brain_dir, scan=False))) as client:
        tools = (await client.list_tools()).tools
        assert listed_chars(tools) < MAX_TOOLS_LIST_CHARS

        for tool in tools:
            assert tool.description is not None
            assert "\n    " not in tool.description  # no docstring indentation
            assert tool.output_schema is not None
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            assert "description" not in json.dumps(tool.output_schema)
            arguments = tool.input_schema["properties"].values()
            assert all("description" in argument for argument in arguments)  # kept: needed
        schemas = {t.name: t.output_schema for t in tools}
        calls: list[tuple[str, dict[str, object]]] = [
            ("read_page", {"slug": "Index"}),
            ("read_page", {"slug": "roadmap"}),  # a placeholder: null path and hash
            ("get_graph", {}),
            ("get_graph", {"slug": "Index", "depth": 2}),
            ("search", {"query": "links"}),
            ("save_page", {"slug": "Scratch", "content": "[[my_index]]\n"}),
        ]
        for name, call in calls:
            result = await client.call_tool(name, call)

            assert result.is_error is False
            jsonschema.validate(result.structured_content, schemas[name])
