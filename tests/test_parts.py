"""read_page in exact parts: every part fits the limit, the first counts them, each lists
the links on its own lines, and joined they are the file; a replace save of them changes
no byte."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from pydantic import TypeAdapter

from conftest import write
from helpers import call, text
from lore_mcp import budget, parts, render
from lore_mcp import vault_ops as engine
from lore_mcp.models import PageView
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState

FANS = 300
LIMIT = 2000
_STR = TypeAdapter(str)


def json_length(text_: str) -> int:
    """Characters of `text_` as a JSON string holds it, quotes aside (pydantic's JSON)."""
    return len(_STR.dump_json(text_).decode()) - 2


def draw_page(view: PageView) -> str:
    return render.noted(render.page(view), view)


# -- where parts end --------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.text(st.characters(codec="utf-8"), max_size=120),
    st.integers(0, 120),
    st.integers(1, 60),
)
def test_json_end_measures_as_pydantic_does(text_: str, start: int, room: int) -> None:
    start = min(start, len(text_))
    end = parts.json_end(text_, start, room)
    assert start <= end <= len(text_)
    assert json_length(text_[start:end]) <= room
    if end < len(text_):
        assert json_length(text_[start : end + 1]) > room


WORDS = [
    "memory",
    "[[Fan 3]]",
    "[[Elsewhere]]",
    "記憶と索引",
    "数据库",
    "🙂",
    'a "quote"',
    "back\\slash",
    "tab\there",
    "\x01",
    "#tag",
    "```",
    "",
]
LINE_STARTS = ["", "", "", "## ", "# ", "- ", "    "]


@st.composite
def pages(draw: st.DrawFn, long_lines: int = 2500) -> str:
    """A page: short and very long lines, CJK, escapes, headings, CRLF or CR or mixed
    line breaks, maybe a byte-order mark, frontmatter, no final line break."""
    short = st.builds(
        lambda start, words: start + " ".join(words),
        st.sampled_from(LINE_STARTS),
        st.lists(st.sampled_from(WORDS), max_size=10),
    )
    wide = st.builds(
        lambda unit, length: (unit * length)[:length],
        st.sampled_from(["word ", "長", "x", "[[Fan 1]] ", '"\\']),
        st.integers(100, long_lines),
    )
    lines = draw(st.lists(st.one_of(short, short, wide), max_size=25))
    style = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed"]))
    breaks = st.sampled_from(["\n", "\r\n", "\r"]) if style == "mixed" else st.just(style)
    body = "".join(line + draw(breaks) for line in lines)
    if draw(st.booleans()):
        body = body.rstrip("\r\n")
    if draw(st.booleans()):
        body = "---\naliases: [Topic]\ntags: [a, b]\n---\n" + body
    return ("\ufeff" if draw(st.booleans()) else "") + body


@settings(max_examples=25, deadline=None)
@given(pages(long_lines=800), st.integers(64, 3000))
def test_reading_on_from_a_cut_gives_the_same_cuts(page: str, room: int) -> None:
    ends = parts.cuts(page, room)
    assert ends[-1] == len(page) and ends == sorted(set(ends))
    for i, at in enumerate(ends[:-1]):
        assert page[at - 1 : at + 1] != "\r\n"
        assert json_length(page[(ends[i - 1] if i else 0) : at]) <= room
        assert [at + end for end in parts.cuts(page[at:], room)] == ends[i + 1 :]


# -- reading a page part by part --------------------------------------------------------------


@pytest.fixture(scope="module")
def fans(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppState]:
    """A vault where many pages link to 'Subject' (its backlinks), indexed once."""
    root = tmp_path_factory.mktemp("fans")
    for i in range(FANS):
        write(root, f"fans/Fan number {i}.md", f"A fan of [[Subject]], number {i}.\n")
    state = engine.open_vault(root)
    yield state
    state.close()


def read_in_parts(read: Callable[[int, int], PageView]) -> list[PageView]:
    """Every part, following next_offset and next_column; each checked on the way."""
    found: list[PageView] = []
    at = (0, 0)
    while True:
        part = read(*at)
        assert part.parts >= 1 and (part.offset, part.column) == at
        assert all(at[0] < link.line <= part.last_line for link in part.links)
        found.append(part)
        if part.next_offset is None:
            break
        assert part.next_column is not None and part.truncated and part.note
        at = (part.next_offset, part.next_column)
    assert [p.parts for p in found] == list(range(len(found), 0, -1))
    return found


def reader(state: AppState, name: str, limit: int) -> Callable[[int, int], PageView]:
    """Reads a part of the page `name` as the server does, checking it fits `limit`."""

    def read(offset: int, column: int) -> PageView:
        view = engine.read_page(state, name, offset, column)
        part, drawn = budget.fit(view, draw_page, limit)
        assert len(drawn) <= limit and len(part.model_dump_json()) <= limit
        assert drawn == draw_page(part)
        return part

    return read


def check_round_trip(state: AppState, page: str, limit: int) -> list[PageView]:
    """Save `page`, read it in parts within `limit`, and save what the parts join to."""
    saved = engine.save_page(state, "Subject", page)
    found = read_in_parts(reader(state, "Subject", limit))
    joined = "".join(part.content for part in found)
    assert joined.encode("utf-8") == (state.root / saved.path).read_bytes()
    again = engine.save_page(state, "Subject", joined)
    assert again.unchanged and again.hash == saved.hash
    return found


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page=pages())
def test_random_pages_read_in_parts_are_the_file(fans: AppState, page: str) -> None:
    check_round_trip(fans, page, LIMIT)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page=pages(long_lines=30_000), limit=st.sampled_from([2000, 2500, 6000, 40_000]))
def test_many_random_pages_read_in_parts_are_the_file(
    fans: AppState, page: str, limit: int
) -> None:
    check_round_trip(fans, page, limit)


def test_every_sample_page_reads_back_exactly(brain: AppState) -> None:
    """At the smallest limit, each page of the sample vault reads back to the byte."""
    for path in sorted(brain.root.rglob("*.md")):
        name = "/" + path.relative_to(brain.root).as_posix()
        found = read_in_parts(reader(brain, name, LIMIT))
        assert "".join(part.content for part in found) == path.read_text("utf-8"), name


def test_the_text_comes_first(fans: AppState) -> None:
    """A long line and many backlinks: the text is whole at the default limit, the
    backlinks are cut and counted; at 2000 the line is read in parts."""
    line = "word " * 5_000 + "end\n"
    whole = check_round_trip(fans, line + "after\n", 28_000)
    assert len(whole) == 1 and whole[0].content == line + "after\n"
    assert whole[0].note and f"of {FANS} backlinks fit; get_backlinks" in whole[0].note
    found = check_round_trip(fans, line + "after\n", LIMIT)
    assert len(found) > 10 and all(p.content.endswith(" ") for p in found[:-2])


def test_each_part_lists_the_links_of_its_lines(fans: AppState) -> None:
    page = "".join(f"## Part {i}\n" + f"[[Topic {i}]] and words {'x' * 300}\n" for i in range(20))
    found = check_round_trip(fans, page, LIMIT)
    assert len(found) > 3
    listed = [link.target for part in found for link in part.links]
    assert listed == [f"Topic {i}" for i in range(20)]
    assert all(p.content.startswith("## Part") for p in found)


def test_an_offset_inside_a_part_reads_on_from_there(fans: AppState) -> None:
    engine.save_page(fans, "Subject", "one\r\ntwo\r\nthree")
    view = engine.read_page(fans, "Subject", 1, 2)
    assert (view.content, view.offset, view.column, view.total_lines) == ("o\r\nthree", 1, 2, 3)
    assert render.page(view).count("lines: 2 from column 3-3 of 3") == 1


# -- through the tools -------------------------------------------------------------------------


@pytest.fixture
async def small(tmp_path: Path) -> AsyncIterator[tuple[Client, AppState]]:
    for i in range(40):
        write(tmp_path, f"Fan {i} with a longer name.md", "[[Subject]]\n")
    state = engine.open_vault(tmp_path)
    async with Client(build_server(state, max_result_chars=LIMIT)) as client:
        yield client, state


@pytest.mark.anyio
async def test_parts_through_the_tools(small: tuple[Client, AppState]) -> None:
    client, _ = small
    page = "\ufeff# Subject\r\n\r\n" + "長い行 [[Fan 2 with a longer name]] " * 400 + "\r\nend"
    saved = await call(client, "save_page", slug="Subject", content=page)
    assert saved.is_error is False
    contents: list[str] = []
    arguments: dict[str, Any] = {"slug": "Subject"}
    while True:
        result = await call(client, "read_page", **arguments)
        part = result.structured_content
        assert result.is_error is False and isinstance(part, dict)
        assert len(text(result)) <= LIMIT
        if not contents:
            assert f"part 1 of {part['parts']}" in text(result)
            count = part["parts"]
        contents.append(part["content"])
        if part["next_offset"] is None:
            break
        assert f"Read on with offset={part['next_offset']}" in part["note"]
        arguments = {"slug": "Subject", "offset": part["next_offset"]}
        arguments["column"] = part["next_column"]
    assert len(contents) == count > 3
    assert "".join(contents) == page
    again = await call(client, "save_page", slug="Subject", content="".join(contents))
    assert isinstance(again.structured_content, dict) and again.structured_content["unchanged"]
    with anyio.fail_after(10):
        past = await client.call_tool("read_page", {"slug": "Subject", "column": 10_000})
    assert past.is_error is True and "column=10000 is past the end of line 1" in text(past)
