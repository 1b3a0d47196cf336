"""Result budgets: every tool result fits the limit, shrunk by its tool's policy."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult

from conftest import write
from helpers import text
from lore_mcp import budget, cli, render
from lore_mcp import vault_ops as engine
from lore_mcp.config import DEFAULT_MAX_RESULT_CHARS, MIN_RESULT_CHARS
from lore_mcp.errors import InvalidArgumentError
from lore_mcp.links import extract_links
from lore_mcp.markdown import headings, split_lines
from lore_mcp.models import Budgeted, PageView
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio

PEOPLE = 250
ORPHANS = 80
MISSING = 200


def long_page() -> str:
    sections = [
        f"## Section {i}\n\n"
        + "".join(
            f"Line {j} of section {i}: words about memory and [[topic {j}]].\n" for j in range(25)
        )
        for i in range(30)
    ]
    return "# Long Page\n\nIntro.\n\n" + "\n".join(sections)


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault large enough to push every tool over a small limit (indexed once)."""
    root = tmp_path_factory.mktemp("big")
    write(root, "Long Page.md", long_page())
    write(root, "Plain.md", "".join(f"plain line {i} {'x' * 50}\n" for i in range(1500)))
    write(root, "Wide.md", "word " * 12_000 + "\nafter the wide line\n")
    for i in range(PEOPLE):
        body = f"Met at the [[hub]]; talked about memory, item {i}. {'memory ' * 40}\n"
        write(root, f"people/Person number {i} who remembers the hub.md", body)
    write(root, "hub.md", "# Hub\n\n" + "".join(f"- [[Missing {i}]]\n" for i in range(MISSING)))
    for i in range(ORPHANS):
        write(root, f"orphans/Orphan page {i} with a rather long name.md", "alone\n")
    engine.open_vault(root).close()
    return root


def connect(root: Path, mode: str, limit: int) -> Client:
    server = build_server(engine.open_vault(root, scan=False), max_result_chars=limit)
    return Client(server, mode="legacy") if mode == "legacy" else Client(server)


@pytest.fixture
async def small(big_dir: Path, mode: str) -> AsyncIterator[Client]:
    """A client on the big vault with a 6000-character limit."""
    async with connect(big_dir, mode, 6000) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    with anyio.fail_after(20):
        result = await client.call_tool(tool, arguments)
    assert result.is_error is False, text(result)
    return result


def data(result: CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def assert_within(result: CallToolResult, limit: int) -> None:
    """Both what the model may read are within the limit: the text and the JSON."""
    assert len(text(result)) <= limit
    dumped = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    assert len(dumped) <= limit


def shrunk(result: CallToolResult) -> str:
    """The note of a result that must have been shrunk; it is in the text too."""
    found = data(result)
    assert found["truncated"] is True and found["note"]
    assert text(result).endswith(f"[{found['note']}]")
    return str(found["note"])


# -- lines and headings -------------------------------------------------------------------


@given(st.text(alphabet="ab#\r\n `~"))
def test_split_lines_round_trips(text_: str) -> None:
    lines = split_lines(text_)
    assert "".join(lines) == text_
    assert all(line.endswith(("\n", "\r")) for line in lines[:-1])


def test_line_numbers_agree_with_link_lines() -> None:
    page = "a [[one]]\r\nb\rc [[two]]\n\nd [[three]]"
    lines = split_lines(page)
    for link in extract_links(page):
        assert f"[[{link.target}]]" in lines[link.line - 1]


def test_headings_in_fences_are_not_headings() -> None:
    page = "# Top\ntext\n```\n# not\n```\n## Next\n~~~~\n# no\n~~~\n# still no\n~~~~\n#tag\n"
    assert [(h.level, h.title) for h in headings(page)] == [(1, "Top"), (2, "Next")]


# -- the policies, without a server -------------------------------------------------------


def page_text(view: PageView) -> str:
    return render.noted(render.page(view), view)


def fitted_page(root: Path, name: str, at: tuple[int, int], limit: int) -> PageView:
    state = engine.open_vault(root)
    try:
        view, text = budget.fit(engine.read_page(state, name, *at), page_text, limit)
    finally:
        state.close()
    assert budget.fits(view, page_text, limit)
    assert text == page_text(view)
    return view


def read_all(read: Callable[[tuple[int, int]], PageView]) -> list[PageView]:
    """Every part of a page, following next_offset and next_column."""
    parts = [read((0, 0))]
    while (next_offset := parts[-1].next_offset) is not None:
        at = (next_offset, parts[-1].next_column or 0)
        assert at > (parts[-1].offset, parts[-1].column)
        parts.append(read(at))
    return parts


def test_a_small_result_is_left_as_it_is(big_dir: Path) -> None:
    state = engine.open_vault(big_dir)
    try:
        view = engine.read_page(state, "orphans/orphan-page-1-with-a-rather-long-name")
    finally:
        state.close()
    fitted, text = budget.fit(view, page_text, 2000)
    assert fitted is view and text == page_text(view)
    assert view.truncated is False and view.note is None


@pytest.mark.slow
def test_a_page_without_headings_is_cut_at_line_breaks(big_dir: Path) -> None:
    parts = read_all(lambda at: fitted_page(big_dir, "Plain", at, 3000))
    assert len(parts) > 10
    assert all(p.content.endswith("\n") for p in parts)
    assert all(p.truncated and p.note for p in parts[:-1])
    assert "".join(p.content for p in parts) == (big_dir / "Plain.md").read_text()


def test_a_line_longer_than_the_limit_is_read_in_parts(big_dir: Path) -> None:
    parts = read_all(lambda at: fitted_page(big_dir, "Wide", at, 5000))
    first = parts[0]
    assert (first.next_offset, first.parts) == (0, len(parts)) and first.truncated
    assert first.next_column == len(first.content) and first.content.endswith("word ")
    assert first.note is not None and f"column={first.next_column}" in first.note
    assert "".join(p.content for p in parts) == (big_dir / "Wide.md").read_text()
    assert parts[-1].content.endswith("after the wide line\n")


def test_read_page_offset_slices_lines(big_dir: Path) -> None:
    state = engine.open_vault(big_dir)
    try:
        view = engine.read_page(state, "Plain", 1498)
        assert (view.offset, view.total_lines, view.next_offset) == (1498, 1500, None)
        assert view.content.startswith("plain line 1498 ") and view.content.count("\n") == 2
        assert len(view.links) == 0
        with pytest.raises(InvalidArgumentError, match="has 1500 lines"):
            engine.read_page(state, "Plain", 1500)
        with pytest.raises(InvalidArgumentError, match="column=70 is past the end of line 2"):
            engine.read_page(state, "Plain", 1, 70)
    finally:
        state.close()


def test_the_limit_has_a_floor(big_dir: Path) -> None:
    state = engine.open_vault(big_dir)
    try:
        with pytest.raises(InvalidArgumentError, match="at least 2000"):
            build_server(state, max_result_chars=500)
    finally:
        state.close()


def test_the_cli_default_is_the_budget_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.mcp_main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"default: {DEFAULT_MAX_RESULT_CHARS}" in help_text
    with pytest.raises(SystemExit) as exit_:
        cli.mcp_main(["--vault", ".", "--max-result-chars", "100"])
    assert exit_.value.code == 2
    assert f"100 is not between {MIN_RESULT_CHARS} and" in capsys.readouterr().err


# -- read_page through the server ------------------------------------------------------------


async def test_a_long_page_is_cut_at_headings_and_reads_on(small: Client) -> None:
    parts: list[dict[str, Any]] = []
    offset = 0
    while True:
        result = await call(small, "read_page", slug="Long Page", offset=offset)
        assert_within(result, 6000)
        part = data(result)
        parts.append(part)
        assert part["column"] == 0 and part["next_column"] in (0, None)
        first, last = part["offset"] + 1, part["next_offset"] or part["total_lines"]
        assert text(result).count(f"lines: {first}-{last} of {part['total_lines']}") == 1
        assert all(first <= link["line"] <= last for link in part["links"])
        if part["next_offset"] is None:
            break
        assert f"offset={part['next_offset']}" in shrunk(result)
        offset = part["next_offset"]
    assert len(parts) > 5 and parts[0]["parts"] == len(parts)
    assert all(p["content"].startswith("## Section") for p in parts[1:])
    assert "".join(p["content"] for p in parts) == long_page()


async def test_the_page_text_comes_before_its_backlinks(big_dir: Path, mode: str) -> None:
    async with connect(big_dir, mode, 6000) as client:
        result = await call(client, "read_page", slug="hub")
    assert_within(result, 6000)
    note = shrunk(result)
    assert f"of {PEOPLE} backlinks" in note and "get_backlinks" in note
    page = data(result)
    assert len(page["backlinks"]) < PEOPLE and page["next_offset"] is None
    assert page["content"] == (big_dir / "hub.md").read_text()


async def test_offset_past_the_end_is_an_error(small: Client) -> None:
    with anyio.fail_after(10):
        result = await small.call_tool("read_page", {"slug": "Wide", "offset": 5})
    assert result.is_error is True
    assert "offset=5 is past the end" in text(result) and "has 2 lines" in text(result)


# -- the other tools ----------------------------------------------------------------------


async def test_search_drops_snippets_from_the_tail_first(big_dir: Path, mode: str) -> None:
    async with connect(big_dir, mode, 25_000) as client:
        result = await call(client, "search", query="memory", limit=100)
    assert_within(result, 25_000)
    hits = data(result)["hits"]
    assert len(hits) == 100
    with_snippets = [bool(hit["snippet"]) for hit in hits]
    kept = with_snippets.count(True)
    assert 0 < kept < 100 and with_snippets == [True] * kept + [False] * (100 - kept)
    assert f"the snippets of the last {100 - kept} hits were left out" in shrunk(result)


async def test_search_then_drops_hits(small: Client) -> None:
    result = await call(small, "search", query="memory", limit=100)
    assert_within(result, 6000)
    hits = data(result)["hits"]
    assert 0 < len(hits) < 100 and not any(hit["snippet"] for hit in hits)
    assert f"only {len(hits)} of these 100 hits" in shrunk(result)
    assert data(result)["next_offset"] == len(hits) and data(result)["total"] == 100


async def test_list_pages_pages_on_from_where_it_was_cut(small: Client) -> None:
    seen: list[str] = []
    offset = 0
    while True:
        result = await call(small, "list_pages", offset=offset, limit=100)
        assert_within(result, 6000)
        listing = data(result)
        seen += [row["slug"] for row in listing["pages"]]
        if listing["next_offset"] is None:
            break
        if len(listing["pages"]) < 100:
            assert f"offset={listing['next_offset']}" in shrunk(result)
        assert listing["next_offset"] == offset + len(listing["pages"])
        offset = listing["next_offset"]
    assert len(seen) == len(set(seen)) == listing["total"] == PEOPLE + ORPHANS + 4
    assert seen == sorted(seen)


async def test_a_neighbourhood_keeps_the_nearest_pages(small: Client) -> None:
    result = await call(small, "get_graph", slug="hub", depth=2)
    assert_within(result, 6000)
    hood = data(result)["neighbourhood"]
    depths = [node["depth"] for node in hood["nodes"]]
    assert depths[0] == 0 and depths == sorted(depths)
    kept = {node["slug"] for node in hood["nodes"]}
    assert all(e["source"] in kept and e["target"] in kept for e in hood["edges"])
    note = shrunk(result)
    assert hood["node_count"] == PEOPLE + MISSING + 1
    assert f"only {len(kept)} of the {PEOPLE + MISSING + 1} pages" in note
    assert f"offset={len(kept)}" in note and data(result)["next_offset"] == len(kept)


async def test_the_vault_shape_shortens_its_lists(big_dir: Path, mode: str) -> None:
    async with connect(big_dir, mode, 2000) as client:
        result = await call(client, "get_graph")
    assert_within(result, 2000)
    shape = data(result)["shape"]
    assert shape["orphan_count"] >= ORPHANS and len(shape["orphans"]) < shape["orphan_count"]
    assert shape["placeholders"] >= MISSING
    assert f"offset={len(shape['orphans'])}" in shrunk(result)


async def test_backlinks_shorten_lines_and_drop_rows(small: Client) -> None:
    result = await call(small, "get_backlinks", slug="hub", include_unlinked=True)
    assert_within(result, 6000)
    found = data(result)
    assert 0 < len(found["linked"]) < PEOPLE
    assert all(len(row["text"]) <= budget.CLIPPED_LINE_CHARS + 2 for row in found["linked"])
    assert found["linked"][0]["text"].endswith(" …")
    assert found["total"] == found["linking_pages"] == PEOPLE
    assert f"of the {PEOPLE} rows" in shrunk(result)


async def test_title_matches_drop_from_the_tail(big_dir: Path, mode: str) -> None:
    async with connect(big_dir, mode, 2000) as client:
        result = await call(client, "search_titles", query="person number", limit=100)
    assert_within(result, 2000)
    assert "of the 100 matches asked for" in shrunk(result)


async def test_write_results_fit_and_the_write_is_whole(tmp_path: Path, mode: str) -> None:
    body = "".join(f"- [[Someday page number {i}]]\n" for i in range(300))
    async with connect(tmp_path, mode, 2000) as client:
        result = await call(client, "save_page", slug="Plans", content=body)
        assert_within(result, 2000)
        assert "of 300 links" in shrunk(result)
        assert (tmp_path / "Plans.md").read_text() == body
        renamed = await call(client, "rename_page", slug="Plans", new_name="Big Plans")
        assert_within(renamed, 2000)
        deleted = await call(client, "delete_page", slug="Big Plans")
    assert_within(deleted, 2000)
    assert "of 300 removed placeholders" in shrunk(deleted)


@pytest.mark.parametrize("limit", [2000, 9000])
async def test_every_read_tool_keeps_to_the_limit(big_dir: Path, mode: str, limit: int) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_page", {"slug": "Long Page"}),
        ("read_page", {"slug": "Wide"}),
        ("read_page", {"slug": "hub"}),
        ("read_page", {"slug": "Missing 3"}),
        ("search", {"query": "memory hub", "limit": 100}),
        ("search_titles", {"query": "orphan", "limit": 100}),
        ("list_pages", {"include_placeholders": True, "limit": 100}),
        ("get_backlinks", {"slug": "hub", "include_unlinked": True}),
        ("get_graph", {"slug": "people/person-number-7-who-remembers-the-hub", "depth": 3}),
        ("get_graph", {}),
    ]
    async with connect(big_dir, mode, limit) as client:
        for tool, arguments in calls:
            result = await call(client, tool, **arguments)
            assert_within(result, limit)
            assert Budgeted.model_fields.keys() <= data(result).keys()
