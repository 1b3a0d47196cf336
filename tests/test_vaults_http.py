"""Several vaults over HTTP, with a token file of tokens of different reach: a reader
token writes nothing, a token for one vault reaches no other by any argument or URI,
and the audit log names the token each write came with. A real `lore-mcp --http`."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import ResourceTemplateReference, TextResourceContents

from conftest import write
from helpers import fails, ok
from lore_mcp import audit
from test_http import MODERN, connect, serving

pytestmark = pytest.mark.anyio

READER, TEAM, ADMIN = (secrets.token_urlsafe(24) for _ in range(3))


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    personal, team = tmp_path / "personal", tmp_path / "team"
    for root, word in ((personal, "okapi"), (team, "narwhal")):
        write(root, "Plans.md", f"# Plans\n{word} plans.\n")
    tokens = tmp_path / "tokens"
    tokens.write_text(
        "# one token a line\n"
        f"{READER} label=reader role=reader\n"
        f"{TEAM} label=team-writer vaults=team\n"
        f"{ADMIN}\n",
        encoding="utf-8",
    )
    tokens.chmod(0o600)
    return personal, team


@asynccontextmanager
async def server(folders: tuple[Path, Path]) -> AsyncIterator[str]:
    personal, team = folders
    args = (
        "--vault",
        f"team={team}",
        "--no-watch",
        "--token-file",
        str(personal.parent / "tokens"),
    )
    async with serving(personal, *args, token_env=False) as served:
        yield served.url


def files(*roots: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for root in roots for p in root.glob("*.md")}


async def read_resource(client: Client, uri: str) -> str:
    with anyio.fail_after(30):
        result = await client.read_resource(uri)
    content = result.contents[0]
    assert isinstance(content, TextResourceContents)
    return content.text


@pytest.mark.slow  # a second server process; the reach of a token is tested by default
async def test_a_reader_token_cannot_write(folders: tuple[Path, Path]) -> None:
    before = files(*folders)
    with anyio.fail_after(60):
        async with server(folders) as url:
            async with connect(url, "legacy", READER) as client:
                assert "okapi" in (await ok(client, "read_page", slug="Plans"))["content"]
                team = await ok(client, "read_page", slug="Plans", vault="team")
                assert "narwhal" in team["content"]
                for vault in (None, "personal", "team"):
                    named = {} if vault is None else {"vault": vault}
                    for tool, args in (
                        ("save_page", {"slug": "Plans", "content": "x"}),
                        ("save_page", {"slug": "New", "content": "x"}),
                        ("delete_page", {"slug": "Plans"}),
                        ("rename_page", {"slug": "Plans", "new_name": "Moved"}),
                    ):
                        assert "may only read" in await fails(client, tool, **args, **named)
            assert files(*folders) == before
            async with connect(url, "legacy", ADMIN) as client:
                saved = await ok(client, "save_page", slug="Admin", content="a", vault="team")
                assert saved["vault"] == "team"
    assert files(*folders) == before | {str(folders[1] / "Admin.md"): b"a"}
    (record,) = audit.read_log(folders[1]).records
    assert record.token == "line-4"  # a token without a label is named by its line


@pytest.mark.parametrize("era", ["legacy", pytest.param(MODERN, marks=pytest.mark.slow)])
async def test_a_token_for_one_vault_reaches_no_other(folders: tuple[Path, Path], era: str) -> None:
    personal, team = folders
    with anyio.fail_after(60):
        async with server(folders) as url, connect(url, era, TEAM) as client:
            said = client.instructions or ""  # this session's: only what the token reaches
            assert "'team' (" in said and "personal" not in said
            listed = await client.list_resources()
            assert [str(r.uri) for r in listed.resources] == ["lore://page/plans"]
            # No vault named: the first it reaches, not the server's default.
            page = await ok(client, "read_page", slug="Plans")
            assert page["vault"] == "team" and "narwhal" in page["content"]
            for spelt in ("personal", "PERSONAL", " personal "):
                error = await fails(client, "read_page", slug="Plans", vault=spelt)
                assert "The vaults are: team;" in error and "okapi" not in error
                assert "personal" not in error.split("The vaults are:")[1]
                await fails(client, "save_page", slug="Plans", content="x", vault=spelt)
                await fails(client, "list_pages", vault=spelt)
                await fails(client, "search", query="okapi", vault=spelt)
            assert (await ok(client, "search", query="okapi"))["hits"] == []
            shape = await ok(client, "get_graph")
            assert shape["vault"] == "team" and shape["other_vaults"] == []
            for uri in ("lore://personal/page/Plans", "lore://Personal/page/Plans"):
                with pytest.raises(MCPError):
                    await read_resource(client, uri)
            assert "narwhal" in await read_resource(client, "lore://page/Plans")
            assert "narwhal" in await read_resource(client, "lore://team/page/Plans")
            completed = await client.complete(
                ResourceTemplateReference(type="ref/resource", uri="lore://page/{+slug}"),
                {"name": "slug", "value": "P"},
            )
            assert completed.completion.values == ["plans"]  # the team's page
            in_vault = ResourceTemplateReference(
                type="ref/resource", uri="lore://{vault}/page/{+slug}"
            )
            for vault, found in (("team", ["plans"]), ("personal", [])):
                named = await client.complete(
                    in_vault, {"name": "slug", "value": "P"}, {"vault": vault}
                )
                assert named.completion.values == found  # never past the token's reach
            vault_names = await client.complete(in_vault, {"name": "vault", "value": ""})
            assert vault_names.completion.values == ["team"]

            saved = await ok(client, "save_page", slug="Ours", content="team work")
            assert saved["vault"] == "team"
    assert (team / "Ours.md").read_text() == "team work"
    assert sorted(p.name for p in personal.glob("*.md")) == ["Plans.md"]
    assert (personal / "Plans.md").read_text() == "# Plans\nokapi plans.\n"
    (record,) = audit.read_log(team).records
    assert record.token == "team-writer"
    assert audit.read_log(personal).records == []
