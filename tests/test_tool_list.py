"""What `tools/list` costs every session: lean output schemas, descriptions without
docstring indentation, and still schemas a strict client validates results with."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema  # no stubs (see pyproject.toml); the SDK depends on it
import pytest
from mcp import Client

from lore_mcp import vault_ops
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio

# Peers list their tools in about 10,000 characters; ours were 30,500 (19,100 of them
# output schemas) before the schemas were made lean. Counted as JSON on the wire.
MAX_TOOLS_LIST_CHARS = 15_000


async def test_tools_list_is_lean_and_still_validates(brain_dir: Path) -> None:
    async with Client(build_server(vault_ops.open_vault(brain_dir, scan=False))) as client:
        tools = (await client.list_tools()).tools
        listed = json.dumps(
            [t.model_dump(exclude_none=True, by_alias=True) for t in tools], separators=(",", ":")
        )

        assert len(listed) < MAX_TOOLS_LIST_CHARS
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
