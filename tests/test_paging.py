"""Paged lists: every row of a list a result budget can cut is reached by paging on
with `next_offset`, once, and the counts are those of the whole list."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from conftest import write
from helpers import call, text
from lore_mcp import vault_ops as engine
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio

LINKING = 2500  # pages that link to the hub
MISSING = 100  # placeholders the hub links to
ORPHANS = 120
TOPIC_LINKS = 40  # pages that link to Topic
TOPIC_MENTIONS = 120  # pages that name it without a link
CHAINED = 50  # every CHAINED-th person also links to the next one


def person(i: int) -> str:
    return f"people/person-{i:04d}"


@pytest.fixture(scope="module")
def busy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault with one busy page, indexed once."""
    root = tmp_path_factory.mktemp("busy")
    write(root, "Hub.md", "# Hub\n\n" + "".join(f"- [[Missing {i}]]\n" for i in range(MISSING)))
    for i in range(LINKING):
        chain = f" Next: [[Person {i + 1:04d}]]." if i % CHAINED == 0 and i + 1 < LINKING else ""
        write(root, f"people/Person {i:04d}.md", f"Met at the [[Hub]].{chain}\n")
    for i in range(ORPHANS):
        write(root, f"orphans/Orphan {i:03d}.md", "alone\n")
    write(root, "Topic.md", "# Topic\n")
    for i in range(TOPIC_LINKS):
        write(root, f"topics/Linker {i:03d}.md", "See [[Topic]].\n")
    for i in range(TOPIC_MENTIONS):
        write(root, f"topics/Mention {i:03d}.md", "We talked about the topic today.\n")
    engine.open_vault(root).close()
    return root


def connect(root: Path, limit: int, mode: str = "legacy") -> Client:
    server = build_server(engine.open_vault(root, scan=False), max_result_chars=limit)
    return Client(server, mode="legacy") if mode == "legacy" else Client(server)


@pytest.fixture
async def schemas(busy_dir: Path) -> dict[str, dict[str, Any]]:
    """Each tool's output schema, as tools/list gives it."""
    async with connect(busy_dir, 40_000) as client:
        listed = await client.list_tools()
    return {tool.name: tool.output_schema for tool in listed.tools if tool.output_schema}


async def fetch(
    client: Client, schemas: dict[str, dict[str, Any]], chars: int, tool: str, **arguments: Any
) -> tuple[dict[str, Any], str]:
    """A successful call's structured content, checked against the tool's output schema
    and the size limit of `chars`, and its text."""
    result = await call(client, tool, **arguments)
    assert result.is_error is False, text(result)
    found = result.structured_content
    assert isinstance(found, dict)
    jsonschema.validate(found, schemas[tool])
    assert len(text(result)) <= chars
    assert len(json.dumps(found, ensure_ascii=False, separators=(",", ":"))) <= chars
    return found, text(result)


async def pages(
    client: Client, schemas: dict[str, dict[str, Any]], chars: int, tool: str, **arguments: Any
) -> AsyncIterator[tuple[dict[str, Any], str]]:
    """Every page of a paged result, following next_offset from 0."""
    offset = 0
    while True:
        found, drawn = await fetch(client, schemas, chars, tool, offset=offset, **arguments)
        assert found["offset"] == offset
        yield found, drawn
        if found["next_offset"] is None:
            return
        assert found["next_offset"] > offset
        assert f"offset={found['next_offset']}" in drawn
        offset = found["next_offset"]


@pytest.mark.parametrize("limit", [pytest.param(3000, marks=pytest.mark.slow), 40_000])
async def test_paging_backlinks_reaches_every_linking_page_once(
    busy_dir: Path, schemas: dict[str, dict[str, Any]], limit: int
) -> None:
    seen: list[str] = []
    calls = 0
    async with connect(busy_dir, limit) as client:
        async for found, drawn in pages(client, schemas, limit, "get_backlinks", slug="Hub"):
            calls += 1
            assert (found["total"], found["linking_pages"], found["links"]) == (LINKING,) * 3
            assert drawn.startswith(f"{LINKING} links to hub (Hub) from {LINKING} pages")
            seen += [row["slug"] for row in found["linked"]]
    assert calls > 1
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == LINKING
    assert set(seen) == {person(i) for i in range(LINKING)}


async def test_paging_backlinks_with_mentions_reaches_every_row_once(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    linked: list[str] = []
    mentions: list[str] = []
    async with connect(busy_dir, 2000, "2026-07-28") as client:
        async for found, _ in pages(
            client, schemas, 2000, "get_backlinks", slug="Topic", include_unlinked=True
        ):
            assert (found["total"], found["unlinked_total"]) == (TOPIC_LINKS, TOPIC_MENTIONS)
            if mentions:  # the links come first, the mentions after them
                assert not found["linked"]
            linked += [row["slug"] for row in found["linked"]]
            mentions += [row["slug"] for row in found["unlinked"]]
    assert linked == [f"topics/linker-{i:03d}" for i in range(TOPIC_LINKS)]
    assert mentions == [f"topics/mention-{i:03d}" for i in range(TOPIC_MENTIONS)]


async def test_an_offset_past_the_end_is_an_empty_page(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    async with connect(busy_dir, 40_000) as client:
        found, _ = await fetch(client, schemas, 40_000, "get_backlinks", slug="Hub", offset=10**6)
    assert found["linked"] == [] and found["next_offset"] is None and found["total"] == LINKING


@pytest.mark.slow  # seconds: a vault of thousands of pages
async def test_paging_title_matches_reaches_every_match_once(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    seen: list[str] = []
    async with connect(busy_dir, 2000) as client:
        async for found, drawn in pages(
            client, schemas, 2000, "search_titles", query="person", limit=100
        ):
            assert found["total"] == LINKING
            assert drawn.startswith(f"{LINKING} pages named like 'person'")
            seen += [match["slug"] for match in found["matches"]]
    assert seen == [person(i) for i in range(LINKING)]


async def test_paging_search_reaches_each_of_the_best_hits_once(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    state = engine.open_vault(busy_dir)
    try:
        best = [hit.slug for hit in engine.search(state, "met hub", 100).hits]
    finally:
        state.close()
    assert len(best) == 100
    seen: list[str] = []
    async with connect(busy_dir, 2000) as client:
        async for found, drawn in pages(
            client, schemas, 2000, "search", query="met hub", limit=100
        ):
            assert found["total"] == 100 and drawn.startswith("The best 100 pages for 'met hub'")
            seen += [hit["slug"] for hit in found["hits"]]
    assert seen == best


@pytest.mark.slow  # seconds: a vault of thousands of pages
async def test_paging_a_neighbourhood_shows_every_page_and_link_once(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    state = engine.open_vault(busy_dir)
    try:
        whole = engine.get_graph(state, "Hub", 1).neighbourhood
    finally:
        state.close()
    assert whole is not None and len(whole.nodes) == 1 + LINKING + MISSING
    nodes: list[str] = []
    edges: list[tuple[str, str]] = []
    async with connect(busy_dir, 3000) as client:
        async for found, drawn in pages(client, schemas, 3000, "get_graph", slug="Hub"):
            hood = found["neighbourhood"]
            assert (hood["node_count"], hood["edge_count"]) == (len(whole.nodes), len(whole.edges))
            assert drawn.startswith(f"Within 1 link of hub: {len(whole.nodes)} pages")
            nodes += [node["slug"] for node in hood["nodes"]]
            edges += [(edge["source"], edge["target"]) for edge in hood["edges"]]
            shown = set(nodes)  # a link shows once both its ends have
            assert all(a in shown and b in shown for a, b in edges)
    assert nodes == [node.slug for node in whole.nodes]
    assert sorted(edges) == sorted((e.source, e.target) for e in whole.edges)
    assert len(edges) == len(set(edges)) == LINKING + LINKING // CHAINED + MISSING


@pytest.mark.slow  # seconds: a vault of thousands of pages
async def test_paging_the_vault_shape_reaches_every_row_of_its_lists(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    state = engine.open_vault(busy_dir)
    try:
        whole = engine.get_graph(state, limit=10**6).shape
    finally:
        state.close()
    alone = ORPHANS + TOPIC_MENTIONS
    assert whole is not None and whole.orphan_count == alone
    lists: dict[str, list[Any]] = {"orphans": [], "unreferenced": [], "most_linked": []}
    lists["unresolved"] = []
    async with connect(busy_dir, 2000) as client:
        async for found, _ in pages(client, schemas, 2000, "get_graph"):
            shape = found["shape"]
            assert shape["orphan_count"] == alone
            assert shape["unresolved_count"] == MISSING
            assert shape["most_linked_count"] == len(whole.most_linked)
            for field in lists:
                lists[field] += shape[field]
    assert lists["orphans"] == whole.orphans
    assert lists["unreferenced"] == whole.unreferenced
    assert lists["most_linked"] == [row.model_dump() for row in whole.most_linked]
    assert lists["unresolved"] == [row.model_dump() for row in whole.unresolved]
    assert len(lists["unresolved"]) == MISSING


@pytest.mark.slow  # seconds: a vault of thousands of pages
async def test_paging_list_pages_keeps_the_whole_count(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    every = 1 + LINKING + ORPHANS + 1 + TOPIC_LINKS + TOPIC_MENTIONS
    seen: list[str] = []
    async with connect(busy_dir, 2000) as client:
        async for found, drawn in pages(client, schemas, 2000, "list_pages", limit=100):
            assert found["total"] == every and f" of {every}" in drawn
            seen += [row["slug"] for row in found["pages"]]
    assert seen == sorted(seen) and len(set(seen)) == len(seen) == every


async def test_read_page_counts_what_it_cannot_show(
    busy_dir: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    async with connect(busy_dir, 6000) as client:
        found, drawn = await fetch(client, schemas, 6000, "read_page", slug="Hub")
    assert found["parts"] == 1
    assert found["backlink_count"] == LINKING and len(found["backlinks"]) < LINKING
    assert found["link_count"] == MISSING and len(found["links"]) < MISSING
    assert f"backlinks ({LINKING}):" in drawn and f"links ({MISSING}):" in drawn
    assert "get_backlinks pages through every backlink" in found["note"]


@pytest.mark.slow  # seconds: a vault of thousands of pages
async def test_renaming_the_busy_page_answers_compactly(
    busy_dir: Path, tmp_path: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    root = tmp_path / "busy"
    shutil.copytree(busy_dir, root)
    async with connect(root, 40_000) as client:
        found, drawn = await fetch(
            client, schemas, 40_000, "rename_page", slug="Hub", new_name="Centre"
        )
        assert len(drawn) < 2000 and len(json.dumps(found)) < 3000
        assert (found["pages_rewritten"], found["links_rewritten"]) == (LINKING, LINKING)
        assert found["rewritten"] == [person(i) for i in range(20)]
        assert drawn.startswith("Renamed hub to centre (Centre.md in vault 'busy').\n")
        assert f"Rewrote {LINKING} links in {LINKING} pages; the first 20:" in drawn
        assert "get_backlinks of centre lists every page that links to it now." in drawn
        linking: list[str] = []
        async for page, _ in pages(client, schemas, 40_000, "get_backlinks", slug="Centre"):
            linking += [row["slug"] for row in page["linked"]]
    assert linking == [person(i) for i in range(LINKING)]
    assert all(
        "[[Centre]]" in (root / f"people/Person {i:04d}.md").read_text() for i in range(LINKING)
    )
