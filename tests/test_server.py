"""The nine tools through the SDK's in-memory client, in both protocol eras."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, call, fails, ok, text
from lore_mcp import vault_ops as engine
from lore_mcp.calls import INTERNAL_ERROR
from lore_mcp.instructions import instructions
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState

pytestmark = pytest.mark.anyio

TOOL_NAMES = {
    "read_page",
    "save_page",
    "delete_page",
    "rename_page",
    "list_pages",
    "search",
    "search_titles",
    "get_backlinks",
    "get_graph",
}
READ_ONLY = {"read_page", "list_pages", "search", "search_titles", "get_backlinks", "get_graph"}


def connect(state: AppState, mode: str, watch: bool = False) -> Client:
    server = build_server(state, watch=watch)
    return Client(server, mode="legacy") if mode == "legacy" else Client(server)


@pytest.fixture
async def client(brain_dir: Path, mode: str) -> AsyncIterator[Client]:
    """A client on a server over a cold copy of brain/ (indexed in the background)."""
    async with connect(engine.open_vault(brain_dir, scan=False), mode) as c:
        assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        yield c


# -- listing and instructions ------------------------------------------------------------


def references(schema: Any) -> Iterator[str]:
    """Every `$ref` in a JSON schema."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from references(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from references(item)


async def test_tools_have_schemas_and_annotations(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOL_NAMES
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 40
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        for ref in references(tool.output_schema):  # the SDK's schemas, `$defs` and all
            assert ref.startswith("#/$defs/"), f"{name}: {ref}"
            assert ref.removeprefix("#/$defs/") in tool.output_schema["$defs"], f"{name}: {ref}"
        for prop in tool.input_schema["properties"].values():
            assert prop.get("description"), f"{name}: undescribed parameter"
        hints = tool.annotations
        assert hints is not None and tool.title
        assert hints.open_world_hint is False
        assert hints.read_only_hint is (name in READ_ONLY)
    writes = {
        name: (hints.destructive_hint, hints.idempotent_hint)
        for name in ("save_page", "delete_page", "rename_page")
        if (hints := tools[name].annotations) is not None
    }
    assert writes == {
        "save_page": (True, False),  # append and prepend are not idempotent
        "delete_page": (True, True),
        "rename_page": (False, False),
    }


async def test_input_bounds(client: Client) -> None:
    listed = (await client.list_tools()).tools
    tools = {t.name: t.input_schema["properties"] for t in listed}
    required = {t.name: t.input_schema.get("required", []) for t in listed}

    for name in ("list_pages", "search", "search_titles"):
        assert (tools[name]["limit"]["minimum"], tools[name]["limit"]["maximum"]) == (1, 100)
    assert (tools["get_graph"]["depth"]["minimum"], tools["get_graph"]["depth"]["maximum"]) == (
        1,
        3,
    )
    assert tools["list_pages"]["offset"]["minimum"] == 0
    content = tools["save_page"]["content"]  # a string, or left out for a restore
    assert content["type"] == "string" and "1 MiB" in content["description"]
    assert "content" not in required["save_page"]
    # String lengths are not listed, but still checked, with a sentence that says so.
    long = await client.call_tool("read_page", {"slug": "x" * 1001})
    assert long.is_error and "at most 1000 characters" in text(long)


async def test_instructions_name_the_vault(client: Client) -> None:
    assert client.instructions is not None
    assert "'brain'" in client.instructions
    assert "being indexed" in client.instructions
    assert "read_page" in client.instructions and "save_page" in client.instructions


def test_instructions_count_pages(brain_dir: Path) -> None:
    engine.open_vault(brain_dir).close()
    stale = engine.open_vault(brain_dir, scan=False)
    try:
        assert "18 pages at its last index" in instructions(stale)
        engine.index_vault(stale)
        assert "(18 pages)" in instructions(stale)
    finally:
        stale.close()


# -- reading ---------------------------------------------------------------------------------


async def test_read_page_text_is_markdown(client: Client) -> None:
    result = await call(client, "read_page", slug="Link Resolution")
    body = text(result)
    assert body.startswith("<page-info>\ntitle: Link Resolution\nslug: concepts/link-resolution\n")
    assert "path: concepts/Link Resolution.md\n" in body
    assert "backlinks (9): " in body and "index" in body
    assert "\n</page-info>\n# Link Resolution\n\nHow a link target" in body
    data = result.structured_content
    assert data is not None and data["slug"] == "concepts/link-resolution"
    assert body.endswith(data["content"])
    assert "index" in {ref["slug"] for ref in data["backlinks"]}


async def test_fuzzy_names_read_the_same_page(client: Client) -> None:
    for name in ("Link Resolution", "concepts/Link Resolution.md", "link-resolution"):
        assert (await ok(client, "read_page", slug=name))["slug"] == "concepts/link-resolution"


async def test_read_facts_of_the_sample_vault(client: Client) -> None:
    persistence = await ok(client, "read_page", slug="persistence")
    assert "記憶は消えない" in persistence["content"]
    syntax = await ok(client, "read_page", slug="Link Syntax")
    assert "[[not-a-link]]" in syntax["content"]
    assert "not-a-link" not in {link["target"] for link in syntax["links"]}
    index = await ok(client, "read_page", slug="index")
    assert "concepts/slugs" in {link["slug"] for link in index["links"]}


async def test_read_a_placeholder(client: Client) -> None:
    result = await call(client, "read_page", slug="roadmap")
    data = result.structured_content
    assert data is not None and data["is_placeholder"] is True and data["content"] == ""
    assert {ref["slug"] for ref in data["backlinks"]} == {"open-questions", "concepts/placeholders"}
    assert "placeholder" in text(result)


async def test_unknown_name_suggests(client: Client) -> None:
    message = await fails(client, "read_page", slug="link-resolutoin")
    assert "No page named 'link-resolutoin'" in message
    assert "concepts/link-resolution" in message


async def test_list_pages(client: Client) -> None:
    first = await ok(client, "list_pages", limit=5)
    assert first["total"] == 18 and len(first["pages"]) == 5 and first["next_offset"] == 5
    rest = await ok(client, "list_pages", offset=5, limit=100)
    slugs = [p["slug"] for p in first["pages"] + rest["pages"]]
    assert slugs == sorted(slugs) and len(slugs) == 18 and rest["next_offset"] is None
    tools = await ok(client, "list_pages", folder="tools")
    assert {p["slug"] for p in tools["pages"]} >= {"tools/renaming", "tools/search-tools"}
    every = await ok(client, "list_pages", include_placeholders=True)
    assert [p["slug"] for p in every["pages"] if p["is_placeholder"]] == ["roadmap"]
    result = await call(client, "list_pages", limit=2)
    assert text(result).splitlines()[1].startswith("- agent-habits: Agent Habits")


async def test_search(client: Client) -> None:
    found = await ok(client, "search", query="記憶")
    assert "concepts/persistence" in {hit["slug"] for hit in found["hits"]}
    assert "**記憶**" in text(await call(client, "search", query="記憶", limit=3))
    for query in ('"unbalanced', "NEAR(a b", "a AND OR NOT", "*", "title:x"):
        await ok(client, "search", query=query)


async def test_search_titles(client: Client) -> None:
    found = await ok(client, "search_titles", query="slugs")
    assert found["matches"][0] == {
        "slug": "concepts/slugs",
        "title": "Slugs",
        "is_placeholder": False,
        "match": "exact",
    }
    roadmap = await ok(client, "search_titles", query="road")
    assert roadmap["matches"][0]["is_placeholder"] is True


async def test_backlinks(client: Client) -> None:
    found = await ok(client, "get_backlinks", slug="Slugs")
    assert found["slug"] == "concepts/slugs" and found["unlinked"] is None
    index_lines = [b for b in found["linked"] if b["slug"] == "index"]
    assert index_lines and "[[Slugs]]" in index_lines[0]["text"]
    assert isinstance(index_lines[0]["line"], int)
    with_mentions = await ok(client, "get_backlinks", slug="Slugs", include_unlinked=True)
    assert isinstance(with_mentions["unlinked"], list)


async def test_graph(client: Client) -> None:
    shape = (await ok(client, "get_graph"))["shape"]
    assert (shape["pages"], shape["placeholders"]) == (18, 1)
    assert [row["slug"] for row in shape["unresolved"]] == ["roadmap"]
    hood = (await ok(client, "get_graph", slug="roadmap", depth=1))["neighbourhood"]
    assert hood["center"] == "roadmap"
    assert {n["slug"] for n in hood["nodes"]} == {
        "roadmap",
        "open-questions",
        "concepts/placeholders",
    }
    deeper = (await ok(client, "get_graph", slug="roadmap", depth=3))["neighbourhood"]
    assert len(deeper["nodes"]) > len(hood["nodes"])
    assert "depth" in await fails(client, "get_graph", slug="roadmap", depth=4)
    assert "depth" in await fails(client, "get_graph", depth=0)


# -- writing ---------------------------------------------------------------------------------


async def test_save_creates_then_overwrites(client: Client, brain_dir: Path) -> None:
    created = await ok(client, "save_page", slug="notes/First Note", content="See [[Slugs]].\n")
    assert created["created"] is True and created["path"] == "notes/First Note.md"
    assert (brain_dir / "notes" / "First Note.md").read_text(encoding="utf-8") == "See [[Slugs]].\n"
    again = await ok(client, "save_page", slug="notes/first-note", content="See [[Slugs]].\n")
    assert again["unchanged"] is True and again["created"] is False
    changed = await call(client, "save_page", slug="First Note", content="Now [[Index]].\n")
    assert text(changed).startswith(
        "Saved notes/first-note (notes/First Note.md in vault 'brain'): overwritten."
    )
    backlinks = await ok(client, "get_backlinks", slug="index")
    assert "notes/first-note" in {b["slug"] for b in backlinks["linked"]}


async def test_bad_names_and_content_are_refused(client: Client, brain_dir: Path) -> None:
    assert "leaves the vault" in await fails(client, "save_page", slug="../evil", content="x")
    assert not (brain_dir.parent / "evil.md").exists()
    assert "absolute" in await fails(client, "save_page", slug="C:/tmp/evil", content="x")
    # A leading / names the vault's top, never the machine's.
    inside = await ok(client, "save_page", slug="/tmp/evil", content="x")
    assert inside["path"] == "tmp/evil.md" and (brain_dir / "tmp/evil.md").is_file()
    await ok(client, "delete_page", slug="/tmp/evil")
    assert "hidden" in await fails(client, "save_page", slug=".lore/evil", content="x")
    assert "letters or digits" in await fails(client, "save_page", slug="!!!", content="x")
    await fails(client, "save_page", slug="a\x00b", content="x")
    await fails(client, "save_page", slug="", content="x")
    assert "NUL" in await fails(client, "save_page", slug="nul", content="a\x00b")
    too_big = "é" * (600 * 1024)  # under the character bound, over 1 MiB of UTF-8
    assert "limit is 1,048,576 bytes" in await fails(
        client, "save_page", slug="big", content=too_big
    )
    assert (await ok(client, "list_pages"))["total"] == 18


async def test_ambiguous_write_lists_candidates(client: Client) -> None:
    await ok(client, "save_page", slug="a/Note", content="one")
    await ok(client, "save_page", slug="b/Note", content="two")
    message = await fails(client, "save_page", slug="note", content="three")
    assert "a/Note.md" in message and "b/Note.md" in message
    assert "a/Note.md" in await fails(client, "delete_page", slug="Note")
    assert "b/Note.md" in await fails(client, "rename_page", slug="note", new_name="Other")
    read = await ok(client, "read_page", slug="note")
    assert read["slug"] == "a/note" and read["alternatives"] == ["b/Note.md"]
    assert read["matched_by"] == "title"
    assert "also matches: b/Note.md" in text(await call(client, "read_page", slug="note"))


async def test_delete_keeps_the_last_version(client: Client, brain_dir: Path) -> None:
    deleted = await ok(client, "delete_page", slug="Graph Tools")
    assert deleted["path"] == "tools/Graph Tools.md"
    assert deleted["history_path"].startswith(".lore/history/")
    assert (brain_dir / deleted["history_path"]).is_file()
    assert not (brain_dir / "tools" / "Graph Tools.md").exists()
    assert deleted["placeholders_created"] == ["graph-tools"]  # Index.md links [[Graph Tools]]
    habits = await call(client, "delete_page", slug="Agent Habits")
    assert habits.structured_content is not None
    assert habits.structured_content["became_placeholder"] is True
    assert "stays on as a placeholder" in text(habits)
    assert "placeholder" in await fails(client, "delete_page", slug="Agent Habits")
    assert "No page named" in await fails(client, "delete_page", slug="no-such-page")


async def test_rename_rewrites_links(client: Client, brain_dir: Path) -> None:
    renamed = await ok(client, "rename_page", slug="Slugs", new_name="Page Names")
    assert (renamed["old_slug"], renamed["slug"]) == ("concepts/slugs", "concepts/page-names")
    assert "index" in renamed["rewritten"] and renamed["links_rewritten"] > 0
    index = (brain_dir / "Index.md").read_text(encoding="utf-8")
    assert "[[Page Names]]" in index and "[[Slugs]]" not in index
    assert "already exists" in await fails(
        client, "rename_page", slug="Page Names", new_name="Link Syntax"
    )
    assert (await ok(client, "read_page", slug="Page Names"))["path"] == "concepts/Page Names.md"
    assert "No page named 'Slugs'" in await fails(client, "read_page", slug="Slugs")


async def test_placeholder_lifecycle(brain_dir: Path, mode: str) -> None:
    state = engine.open_vault(brain_dir, scan=False)
    async with connect(state, mode) as client:
        saved = await ok(
            client, "save_page", slug="notes/Plan", content="Next: [[Trailing Slash]], [[Someday]]."
        )
        assert sorted(saved["placeholders_created"]) == ["someday", "trailing-slash"]
        listed = await ok(client, "list_pages", include_placeholders=True)
        placeholders = {p["slug"] for p in listed["pages"] if p["is_placeholder"]}
        assert placeholders == {"roadmap", "someday", "trailing-slash"}
        assert (await ok(client, "list_pages"))["total"] == 19
        promoted = await ok(
            client, "save_page", slug="trailing-slash", content="# Trailing Slash\n"
        )
        assert promoted["promoted"] is True and promoted["path"] == "Trailing Slash.md"
        assert (brain_dir / "Trailing Slash.md").is_file()
        plan = await ok(client, "read_page", slug="plan")
        assert {(link["slug"], link["exists"]) for link in plan["links"]} == {
            ("trailing-slash", True),
            ("someday", False),
        }
        deleted = await ok(client, "delete_page", slug="notes/Plan.md")
        assert deleted["placeholders_removed"] == ["someday"]
        assert deleted["became_placeholder"] is False
        titles = await ok(client, "search_titles", query="someday")
        assert "someday" not in {m["slug"] for m in titles["matches"]}
        assert (await ok(client, "read_page", slug="Trailing Slash"))["backlinks"] == []
        assert_matches_fresh(state)


# -- failures ----------------------------------------------------------------------------------


async def test_still_serving_after_errors(client: Client) -> None:
    await fails(client, "read_page", slug="nowhere")
    await fails(client, "get_graph", depth=9)
    await fails(client, "save_page", slug="../../x", content="")
    await fails(client, "list_pages", offset=-1)
    await fails(client, "search", query="")
    await fails(client, "no_such_tool")
    assert (await ok(client, "read_page", slug="index"))["slug"] == "index"


async def test_bad_arguments_read_as_plain_sentences(client: Client) -> None:
    message = await fails(client, "list_pages", limit="lots", offset=-1)
    assert message.startswith("list_pages was called with arguments it cannot take (")
    assert "limit: Input should be a valid integer" in message
    assert "offset: Input should be greater than or equal to 0" in message
    assert "input schema" in message
    assert "pydantic" not in message.lower() and "http" not in message
    missing = await fails(client, "read_page")
    assert "slug: Field required" in missing and "pydantic" not in missing.lower()


async def test_writes_run_off_the_event_loop(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write waits for the vault's lock and the disk: in a worker thread, so that the
    server goes on answering (a quick read that can run at once runs on the event loop:
    test_tool_concurrency shows one that must wait doing so in a thread)."""
    loop_thread = threading.current_thread()
    seen: list[threading.Thread] = []
    real = engine.save_or_restore

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "save_or_restore", spy)
    await ok(client, "save_page", slug="Threaded", content="Saved in a thread.\n")
    assert len(seen) == 1 and seen[0] is not loop_thread


async def test_crash_is_a_generic_error(
    client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(engine, "search", explode)
    message = await fails(client, "search", query="slugs")
    assert INTERNAL_ERROR in message and "secret" not in message
    assert "secret internals" in caplog.text  # the traceback went to the log
    monkeypatch.undo()
    assert (await ok(client, "search", query="slugs"))["hits"]


async def test_lifespan_closes_the_state(brain_dir: Path, mode: str) -> None:
    state = engine.open_vault(brain_dir, scan=False)
    async with connect(state, mode) as client:
        await ok(client, "read_page", slug="index")
        assert state.ready.is_set()
    with pytest.raises(Exception, match="closed"):
        state.index.links.count()


async def test_watcher_applies_outside_edits(brain_dir: Path, mode: str) -> None:
    state = engine.open_vault(brain_dir, scan=False)
    async with connect(state, mode, watch=True) as client:
        await ok(client, "read_page", slug="index")
        write(brain_dir, "outside/Edited Elsewhere.md", "Written by [[Index|an editor]].")
        with anyio.fail_after(10):
            while not (await ok(client, "search_titles", query="edited elsewhere"))["matches"]:
                await anyio.sleep(0.1)
        assert state.watcher is not None
    assert state.watcher is None
