"""What agents ask of the graph and the listing: pages nothing links to, what changed
lately, backlinks one row per line, and a read_page header that counts what it lists
and cannot be taken for the page's frontmatter."""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest
from mcp import Client

from conftest import write
from helpers import ok, text
from lore_mcp import render
from lore_mcp import vault_ops as ops
from lore_mcp.models import GraphResult
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def aged(root: Path, rel: str, text: str, seconds_ago: int) -> None:
    """A page file last modified `seconds_ago` seconds ago."""
    path = write(root, rel, text)
    when = path.stat().st_mtime - seconds_ago
    os.utime(path, (when, when))


@pytest.fixture
def small(vault_dir: Path) -> AppState:
    aged(vault_dir, "Hub.md", "links [[Leaf]] and [[Ghost]]", 300)
    aged(vault_dir, "Leaf.md", "links back to [[Hub]]", 200)
    aged(vault_dir, "notes/Starter.md", "links [[Hub]] twice: [[Hub|the hub]]\nand [[Leaf]]", 100)
    aged(vault_dir, "Lonely.md", "nothing", 400)
    aged(vault_dir, "Selfish.md", "only [[Selfish]]", 500)
    return ops.open_vault(vault_dir)


def test_unreferenced_beside_orphans(small: AppState) -> None:
    try:
        shape = ops.get_graph(small).shape
        assert shape is not None
        assert (shape.orphans, shape.orphan_count) == (["lonely", "selfish"], 2)
        # Nothing links to them, whatever they link to (a link to itself does not count).
        assert shape.unreferenced == ["lonely", "notes/starter", "selfish"]
        assert shape.unreferenced_count == 3
        drawn = render.graph(GraphResult(shape=shape))
        assert "2 orphans, 3 unreferenced." in drawn
        assert "Unreferenced (no other page links to them): lonely, notes/starter, selfish" in drawn
    finally:
        small.close()


def test_list_pages_shows_and_sorts_by_modification_time(small: AppState) -> None:
    try:
        by_slug = ops.list_pages(small, include_placeholders=True)
        assert [p.slug for p in by_slug.pages] == [
            "ghost",
            "hub",
            "leaf",
            "lonely",
            "notes/starter",
            "selfish",
        ]
        assert by_slug.sort == "slug" and by_slug.pages[0].modified is None
        assert all(ISO_UTC.fullmatch(p.modified or "") for p in by_slug.pages[1:])
        newest = ops.list_pages(small, include_placeholders=True, sort="modified")
        assert [p.slug for p in newest.pages] == [
            "notes/starter",
            "leaf",
            "hub",
            "lonely",
            "selfish",
            "ghost",  # placeholders last: they have no file
        ]
        page = ops.list_pages(small, offset=1, limit=2, sort="modified")
        assert [p.slug for p in page.pages] == ["leaf", "hub"] and page.next_offset == 3
        ops.save_page(small, "Lonely", "written just now")
        assert ops.list_pages(small, limit=1, sort="modified").pages[0].slug == "lonely"
        assert "the latest modified first" in render.listing(newest)
    finally:
        small.close()


def test_backlinks_are_one_row_per_line(small: AppState) -> None:
    try:
        found = ops.get_backlinks(small, "Hub")
        assert [(b.slug, b.line, b.links) for b in found.linked] == [
            ("leaf", 1, 1),
            ("notes/starter", 1, 2),
        ]
        drawn = render.backlinks(found)
        assert drawn.startswith("3 links to hub (Hub) from 2 pages, on 2 lines:")
        assert "- notes/starter:1: links [[Hub]] twice: [[Hub|the hub]] (2 links)" in drawn
    finally:
        small.close()


@pytest.mark.anyio
async def test_the_read_page_header_is_tagged_and_counts_what_it_cuts(vault_dir: Path) -> None:
    write(vault_dir, "Target.md", "---\naliases: [T]\n---\n# Target\n")
    for i in range(300):
        write(vault_dir, f"refs/Ref {i:03}.md", f"see [[Target]] from a rather long page name {i}")
    server = build_server(ops.open_vault(vault_dir, scan=False), max_result_chars=4000)
    async with Client(server, mode="legacy") as client:
        with anyio.fail_after(30):
            result = await client.call_tool("read_page", {"slug": "Target"})
            drawn = text(result)
            data = await ok(client, "read_page", slug="Target")
    header, _, content = drawn.partition("</page-info>\n")
    assert header.startswith("<page-info>\ntitle: Target\n") and "---" not in header
    assert content.startswith("---\naliases: [T]\n---\n# Target\n")  # the file's own
    assert data["backlink_count"] == 300 and len(data["backlinks"]) < 300  # cut to fit
    assert "backlinks (300): refs/ref-000, " in header
    assert "... (275 more)" in header  # 25 named, the rest counted: 300 in all
