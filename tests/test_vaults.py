"""Several vaults behind one server, through the real tools: each call reaches only the
vault it names, results name their vault, a read-only vault refuses writes while the
other takes them, and a missing vault fails only its own calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from conftest import write
from helpers import fails, ok, text
from lore_mcp import audit
from lore_mcp.server import build_server
from lore_mcp.vaults import Vaults, VaultSpec

pytestmark = pytest.mark.anyio


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """Two vaults holding pages of the same names, with different text."""
    personal, team = tmp_path / "personal", tmp_path / "team"
    for root, word in ((personal, "okapi"), (team, "narwhal")):
        write(root, "Plans.md", f"# Plans\n{word} plans, see [[Ideas]].\n")
        write(root, "Ideas.md", f"# Ideas\n{word} ideas.\n")
    return personal, team


@asynccontextmanager
async def serving(vaults: Vaults, mode: str) -> AsyncIterator[Client]:
    server = build_server(vaults)
    async with Client(server, mode="legacy") if mode == "legacy" else Client(server) as client:
        yield client


@pytest.fixture
async def client(folders: tuple[Path, Path], mode: str) -> AsyncIterator[Client]:
    personal, team = folders
    specs = [VaultSpec("personal", personal), VaultSpec("team", team)]
    async with serving(Vaults(specs), mode) as c:
        yield c


async def test_each_call_reaches_only_the_vault_it_names(
    client: Client, folders: tuple[Path, Path]
) -> None:
    personal, team = folders
    mine = await ok(client, "read_page", slug="Plans")
    theirs = await ok(client, "read_page", slug="Plans", vault="team")
    assert (mine["vault"], theirs["vault"]) == ("personal", "team")
    assert "okapi" in mine["content"] and "narwhal" in theirs["content"]
    assert (await ok(client, "search", query="narwhal"))["hits"] == []
    found = await ok(client, "search", query="narwhal", vault="team")
    assert sorted(hit["slug"] for hit in found["hits"]) == ["ideas", "plans"]
    assert found["vault"] == "team"

    saved = await call_text(client, "save_page", slug="Ideas", content="new", vault="team")
    assert saved.startswith("Saved ideas (Ideas.md in vault 'team')")
    assert (team / "Ideas.md").read_text() == "new"
    assert (personal / "Ideas.md").read_text() == "# Ideas\nokapi ideas.\n"

    renamed = await ok(client, "rename_page", slug="Ideas", new_name="Notions", vault="team")
    assert renamed["vault"] == "team" and renamed["pages_rewritten"] == 1
    assert (team / "Notions.md").is_file() and not (team / "Ideas.md").exists()
    assert (personal / "Ideas.md").is_file()
    assert "[[Ideas]]" in (personal / "Plans.md").read_text()
    assert "[[Notions]]" in (team / "Plans.md").read_text()
    listed = await ok(client, "list_pages")
    assert [p["slug"] for p in listed["pages"]] == ["ideas", "plans"]
    deleted = await call_text(client, "delete_page", slug="Notions", vault="team")
    assert "in vault 'team'" in deleted and (personal / "Ideas.md").is_file()
    # Each vault keeps its own audit log.
    assert [r.tool for r in audit.read_log(team).records] == [
        "save_page",
        "rename_page",
        "delete_page",
    ]
    assert audit.read_log(personal).records == []


async def call_text(client: Client, tool: str, **arguments: object) -> str:
    result = await client.call_tool(tool, dict(arguments))
    assert result.is_error is False, text(result)
    return text(result)


async def test_an_unknown_vault_lists_the_names(client: Client) -> None:
    error = await fails(client, "read_page", slug="Plans", vault="nope")
    assert "no vault 'nope'" in error and "personal, team" in error
    assert (await ok(client, "read_page", slug="Plans", vault="TEAM"))["vault"] == "team"


async def test_instructions_and_the_shape_name_the_vaults(
    folders: tuple[Path, Path], mode: str
) -> None:
    personal, team = folders
    vaults = Vaults([VaultSpec("personal", personal), VaultSpec("team", team, read_only=True)])
    server = build_server(vaults)
    async with Client(server, mode="legacy") if mode == "legacy" else Client(server) as client:
        said = client.instructions or ""
        assert "2 memory vaults" in said and "'personal' (" in said and "default" in said
        assert "'team' (not indexed yet, read-only)" in said
        shape = await ok(client, "get_graph", vault="team")
        assert shape["vault"] == "team" and shape["other_vaults"] == ["personal"]
        assert shape["shape"]["pages"] == 2
        drawn = text(await client.call_tool("get_graph", {}))
        assert "This is the vault 'personal'; the others: team" in drawn
    # A later server knows the count from the index alone, without opening the vault.
    again = build_server(Vaults([VaultSpec("personal", personal), VaultSpec("team", team)]))
    async with Client(again, mode="legacy") as client:
        assert "'team' (2 pages at its last index)" in (client.instructions or "")


async def test_a_read_only_vault_refuses_writes_the_other_takes(
    folders: tuple[Path, Path], mode: str
) -> None:
    personal, team = folders
    vaults = Vaults([VaultSpec("personal", personal), VaultSpec("team", team, read_only=True)])
    async with serving(vaults, mode) as client:
        before = (team / "Plans.md").read_bytes()
        for tool, args in (
            ("save_page", {"slug": "Plans", "content": "x"}),
            ("delete_page", {"slug": "Plans"}),
            ("rename_page", {"slug": "Plans", "new_name": "Other"}),
        ):
            error = await fails(client, tool, vault="team", **args)
            assert "'team' is read-only" in error and "personal" in error
        assert (team / "Plans.md").read_bytes() == before
        assert not (team / "Other.md").exists()
        saved = await ok(client, "save_page", slug="Plans", content="mine", vault="personal")
        assert saved["vault"] == "personal" and (personal / "Plans.md").read_text() == "mine"


async def test_a_missing_vault_fails_only_its_calls_and_opens_once_it_exists(
    folders: tuple[Path, Path], tmp_path: Path, mode: str
) -> None:
    personal, _ = folders
    later = tmp_path / "later"
    vaults = Vaults([VaultSpec("personal", personal), VaultSpec("later", later)])
    async with serving(vaults, mode) as client:
        error = await fails(client, "list_pages", vault="later")
        assert "'later' cannot be opened" in error and "does not exist" in error
        assert (await ok(client, "read_page", slug="Plans"))["vault"] == "personal"
        write(later, "Here.md", "# Here\n")
        listed = await ok(client, "list_pages", vault="later")  # tried again: it is there now
        assert [p["slug"] for p in listed["pages"]] == ["here"]


async def test_other_vaults_open_on_first_use(folders: tuple[Path, Path]) -> None:
    personal, team = folders
    vaults = Vaults([VaultSpec("personal", personal), VaultSpec("team", team)])
    async with serving(vaults, "legacy") as client:
        await ok(client, "read_page", slug="Plans")
        assert vaults.is_open("personal") and not vaults.is_open("team")
        assert not (team / ".lore").exists()
        await ok(client, "read_page", slug="Plans", vault="team")
        assert vaults.is_open("team")
    assert vaults.closed.is_set()


async def test_a_vault_page_resource(client: Client) -> None:
    mine = await client.read_resource("lore://page/Plans")
    theirs = await client.read_resource("lore://team/page/Plans")
    texts = [json.dumps(r.model_dump(mode="json")) for r in (mine, theirs)]
    assert "okapi" in texts[0] and "narwhal" in texts[1]


async def test_still_nine_tools_with_one_small_vault_argument(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert len(tools) == 9
    for tool in tools:
        vault = tool.input_schema["properties"]["vault"]
        assert len(json.dumps(vault)) < 120 and "vault" not in tool.input_schema.get("required", [])


async def test_the_prompts_name_the_vault_not_its_folder(folders: tuple[Path, Path]) -> None:
    personal, team = folders
    specs = [VaultSpec("mine", personal), VaultSpec("ours", team)]
    async with serving(Vaults(specs), "legacy") as client:
        started = await client.get_prompt("start_session", {})
        assert isinstance(started.messages[0].content, TextContent)
        assert "the vault 'mine' (2 pages)" in started.messages[0].content.text
        asked = await client.get_prompt("record", {"summary": "x"})
        assert isinstance(asked.messages[0].content, TextContent)
        assert "memory vault 'mine'" in asked.messages[0].content.text
