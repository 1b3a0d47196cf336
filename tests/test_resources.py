"""Pages as MCP resources: the templates `lore://page/{+slug}` (the default vault) and
`lore://{vault}/page/{+slug}`, in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS, TextResourceContents

from conftest import write
from lore_mcp import vault_ops as engine
from lore_mcp.resources import PAGE_TEMPLATE, VAULT_PAGE_TEMPLATE
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[False, True], ids=["read-write", "read-only"])
async def client(
    brain_dir: Path, mode: str, request: pytest.FixtureRequest
) -> AsyncIterator[Client]:
    write(brain_dir, "Ünïcode Ω.md", "# Ünïcode\r\nnon-Latin: 記憶\n")
    state = engine.open_vault(brain_dir, scan=False, read_only=request.param)
    server = build_server(state)
    async with Client(server, mode="legacy") if mode == "legacy" else Client(server) as c:
        yield c


async def read(client: Client, uri: str) -> TextResourceContents:
    with anyio.fail_after(10):
        result = await client.read_resource(uri)
    assert len(result.contents) == 1
    content = result.contents[0]
    assert isinstance(content, TextResourceContents)
    return content


async def missing(client: Client, uri: str) -> str:
    with anyio.fail_after(10), pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    assert caught.value.code == INVALID_PARAMS
    return caught.value.message


async def test_the_template_is_listed(client: Client) -> None:
    templates = (await client.list_resource_templates()).resource_templates
    listed = [t.uri_template for t in templates]
    assert listed == [PAGE_TEMPLATE, VAULT_PAGE_TEMPLATE]
    assert listed == ["lore://page/{+slug}", "lore://{vault}/page/{+slug}"]
    assert all(t.mime_type == "text/markdown" and t.description for t in templates)


async def test_a_page_of_a_named_vault(client: Client, brain_dir: Path) -> None:
    expected = (brain_dir / "concepts" / "Slugs.md").read_text(encoding="utf-8")
    assert (await read(client, "lore://brain/page/concepts/slugs")).text == expected
    assert (await read(client, "lore://BRAIN/page/Slugs")).text == expected
    assert "no vault 'other'" in await missing(client, "lore://other/page/concepts/slugs")


async def test_a_nested_slug_reads_the_file(client: Client, brain_dir: Path) -> None:
    page = await read(client, "lore://page/concepts/slugs")
    assert page.mime_type == "text/markdown"
    assert page.text == (brain_dir / "concepts" / "Slugs.md").read_text(encoding="utf-8")
    assert str(page.uri) == "lore://page/concepts/slugs"


async def test_titles_and_bare_names_work_too(client: Client, brain_dir: Path) -> None:
    expected = (brain_dir / "concepts" / "Link Resolution.md").read_text(encoding="utf-8")
    assert (await read(client, "lore://page/Link%20Resolution")).text == expected
    assert (await read(client, "lore://page/link-resolution")).text == expected


async def test_non_latin_slugs(client: Client, brain_dir: Path) -> None:
    expected = (brain_dir / "Ünïcode Ω.md").read_bytes().decode("utf-8")
    assert (await read(client, "lore://page/" + quote("ünïcode-ω"))).text == expected
    assert (await read(client, "lore://page/ünïcode-ω")).text == expected


async def test_what_is_not_a_page_is_not_found(client: Client) -> None:
    assert "No page named 'no-such-page'" in await missing(client, "lore://page/no-such-page")
    assert "placeholder" in await missing(client, "lore://page/roadmap")
    await missing(client, "lore://page/../Index")
    await missing(client, "lore://page/concepts/%2E%2E/%2E%2E/etc/passwd")
    await missing(client, "lore://page/")
    await missing(client, "lore://elsewhere/index")


async def test_pages_are_listed_a_page_at_a_time(vault_dir: Path, mode: str) -> None:
    for n in range(450):
        write(vault_dir, f"notes/Note {n:03}.md", f"# Note {n}\n")
    write(vault_dir, "Café [draft].md", "[[Nowhere]]\n")  # a placeholder is no resource
    server = build_server(engine.open_vault(vault_dir, scan=False))
    async with Client(server, mode="legacy") if mode == "legacy" else Client(server) as c:
        listed, cursors = [], []
        cursor: str | None = None
        while True:
            with anyio.fail_after(30):
                answer = await c.list_resources(cursor=cursor)
            listed += answer.resources
            if answer.next_cursor is None:
                break
            cursors.append(cursor := answer.next_cursor)
        assert len(cursors) == 2  # 451 pages, 200 an answer
        assert len({r.uri for r in listed}) == len(listed) == 451
        assert all(r.mime_type == "text/markdown" for r in listed)
        odd = next(r for r in listed if r.title == "Café [draft]")
        assert (await read(c, str(odd.uri))).text == "[[Nowhere]]\n"
        last = listed[-1]
        assert (last.name, last.title) == ("notes/note-449", "Note 449")
        assert (await read(c, str(last.uri))).text == "# Note 449\n"

        with anyio.fail_after(10), pytest.raises(MCPError) as caught:
            await c.list_resources(cursor="not a cursor")
        assert caught.value.code == INVALID_PARAMS
