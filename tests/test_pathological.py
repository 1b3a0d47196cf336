"""Hostile pages cost bounded work: a YAML alias bomb, pages of unclosed brackets and
code spans, a page of 200 000 links, and big files dropped into the vault.

The time bounds are the benchmark's (`bench/pathological.py`); here a hang fails the
test through a generous timeout, never through a measured time.
"""

from __future__ import annotations

import logging
import random
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, ok
from lore_mcp import frontmatter, links, markdown, vault_ops
from lore_mcp.config import MAX_PAGE_LINKS, PARSE_AHEAD_BYTES
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState, pagefile, sync


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A "billion laughs": each level a list of `width` aliases of the one before."""
    names = "abcdefghijklmnopqrstuvwxyz"[:levels]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['lol'] * width)}]"]
    for before, name in pairwise(names):
        lines.append(f"{name}: &{name} [{', '.join([f'*{before}'] * width)}]")
    return "---\n" + "\n".join(lines) + "\n---\n"


BOMB_BODY = "The body survives: see [[Target]] and the word xylophone.\n"


# -- the YAML bomb ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_yaml_bomb_page_is_read_with_its_body_and_reported(
    state: AppState, vault_dir: Path
) -> None:
    """Before, read_page expanded the aliases (no answer in minutes, gigabytes of memory)."""
    write(vault_dir, "Target.md", "the target\n")
    write(vault_dir, "Bomb.md", alias_bomb() + BOMB_BODY)
    vault_ops.resync(state)
    with anyio.fail_after(30):
        async with Client(build_server(state), mode="legacy") as client:
            page = await ok(client, "read_page", slug="Bomb")
            hits = await ok(client, "search", query="xylophone")
            backlinks = await ok(client, "get_backlinks", slug="Target")
    assert page["content"].endswith(BOMB_BODY)
    assert page["properties"] == {}
    assert [link["slug"] for link in page["links"]] == ["target"]
    assert [hit["slug"] for hit in hits["hits"]] == ["bomb"]
    assert [b["slug"] for b in backlinks["linked"]] == ["bomb"]
    report = vault_ops.open_vault(vault_dir)
    try:
        broken = vault_ops.doctor(report).broken_properties
    finally:
        report.close()
    assert [(b.path, "aliases" in b.reason) for b in broken] == [("Bomb.md", True)]


@pytest.mark.parametrize(
    ("yaml", "problem"),
    [
        (alias_bomb(), "aliases"),
        ("a: &x [1, *x]\n", "refers to a node that holds it"),
        ("r: &r 1\ns: *r\na:\n" + "".join("  " * i + "- \n" for i in range(1, 150)), "deeper"),
        ("a: " + "x" * (frontmatter.MAX_CHARS + 1) + "\n", "longer"),
        ("a: " + "1" * 5000 + "\n", "digits"),  # an int Python refuses to convert
    ],
)
def test_costly_or_odd_yaml_is_broken_frontmatter(yaml: str, problem: str) -> None:
    text = (yaml if yaml.startswith("---") else f"---\n{yaml}---\n") + "body\n"
    found = frontmatter.split(text)
    assert found.properties == {} and found.error is not None
    assert problem in found.error
    assert text[found.end :] == "body\n"


def test_aliases_within_the_budget_still_load() -> None:
    text = "---\nbase: &b {x: 1, y: [2, 3]}\none: *b\ntwo: *b\naliases: [A]\n---\n"
    found = frontmatter.split(text)
    assert found.error is None
    assert found.properties["two"] == {"x": 1, "y": [2, 3]} and found.aliases == ["A"]


# -- the link parser: the same answers, found in linear time ------------------------------

_DESTINATION_PIECES = st.sampled_from(
    ["(", ")", "\\", "\\(", "\\)", "\\ ", " ", "\n", "\t", "\x00", "\x7f", "<", ">", "a", "]("]
)


def _link_destination_by_hand(text: str, pos: int, end: int) -> int:
    """`markdown.link_destination` as it reads, kept apart from the index it now uses."""
    return markdown.link_destination(text, pos, end)


@settings(max_examples=150, deadline=None)
@given(st.lists(_DESTINATION_PIECES, max_size=60).map("".join), st.data())
def test_indexed_destinations_end_where_direct_reading_ends(text: str, data: st.DataObject) -> None:
    if not text:
        return
    indexed = markdown.Destinations(text)
    for pos in range(len(text)):
        end = data.draw(st.integers(pos + 1, len(text)))
        assert indexed.end(pos, end) == _link_destination_by_hand(text, pos, end)


def test_deep_destinations_fail_as_direct_reading_fails() -> None:
    for text in ("(" * 40 + "x", "(" * 32 + "x" + ")" * 32, "a(b)c\\(" * 20 + " "):
        assert markdown.Destinations(text).end(0, len(text)) == markdown.link_destination(
            text, 0, len(text)
        )


def _code_span_close_by_hand(text: str, at: int, end: int) -> int:
    """The code span's end as the parser found it before the index of runs: after the
    next run of exactly as many backticks as from `at` to its run's end."""

    def run_end(pos: int) -> int:
        while pos < end and text[pos] == "`":
            pos += 1
        return pos

    run = run_end(at)
    length, pos = run - at, run
    while (close := text.find("`", pos, end)) >= 0:
        pos = run_end(close)
        if pos - close == length:
            return pos
    return -1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "```", "a", "\n", " "]), max_size=40).map("".join))
def test_indexed_code_spans_close_where_direct_reading_closes(text: str) -> None:
    """The index of backtick runs, and the search a text's first code spans are closed by
    (`TextIndex` before it makes the index), close each span where reading by hand does."""
    runs = markdown.Backticks(text)
    for at in (i for i, char in enumerate(text) if char == "`"):
        for end in range(at + 1, len(text) + 1):
            if end < len(text) and text[end - 1 : end + 1] == "``":
                continue  # the scanner's ends are line ends: never inside a run
            expected = _code_span_close_by_hand(text, at, end)
            assert runs.closing(at, end) == expected
            assert markdown.TextIndex(text).code_span_end(at, end) == expected


_MARKDOWN_PIECES = st.sampled_from(
    [
        *("[a](", "[a](b)", "[x](<y z>)", "](", "(", ")", "[", "]", "[[", "]]", "![", "`"),
        *("``", "```\n", "\\", " ", "\n", "\n\n", "- ", "> ", "    ", "<b>", "#t", ".md"),
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_MARKDOWN_PIECES, max_size=30).map("".join), st.integers(0, 80))
def test_the_indexes_leave_the_links_of_random_markdown_as_they_were(
    piece: str, repeat: int
) -> None:
    """A page long enough for the destination index finds the links that the same
    text finds in short pieces, each read directly: the index changes no answer."""
    short = links.scan(piece).links
    padding = "[p](q.md)\n\n" * repeat  # enough destinations to take the index
    long = links.scan(padding + piece).links
    offset = len(padding)
    assert [(x.target, x.start + offset) for x in short] == [
        (x.target, x.start) for x in long if x.start >= offset
    ]


_STORMS = {
    "[a](": "[a](",
    "[a](x": "[a](x",
    "[[": "[[",
    "![": "![",
    "[\\n": "[\n",
    "backticks": "`",
    "[`": "[`",
}


@pytest.mark.slow
def test_pathological_pages_are_parsed_in_linear_time() -> None:
    """A megabyte of each storm, and a page of unclosed code spans of every length
    inside an unclosed label (which took minutes for 128 KB before the index of
    backtick runs), parsed in a child process; the timeout only stops a hang."""
    script = (
        "from lore_mcp.vault_ops.pagefile import parse\n"
        f"for piece in {list(_STORMS.values())!r}:\n"
        "    text = 'x ' + piece * (1024 * 1024 // len(piece)) + ' [[end]]'\n"
        "    assert parse('x.md', text.encode(), len(text), 0).links[-1].target == 'end'\n"
        "spans = '[' + ''.join('`' * k + 'a' for k in range(1, 1000)) + ' [[end]]'\n"
        "assert parse('x.md', spans.encode(), len(spans), 0).links[-1].target == 'end'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


# -- what one page may cost the index --------------------------------------------------------


def test_a_page_s_links_past_the_limit_are_left_out_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lore_mcp")
    for extra, logged in ((0, False), (3, True)):
        caplog.clear()
        text = "[[a]] " * MAX_PAGE_LINKS + "[[b]] " * extra
        parsed = pagefile.parse("Many.md", text.encode(), len(text), 0)
        assert [link.target for link in parsed.links] == ["a"] * MAX_PAGE_LINKS
        assert ("links after its 20000-th are not indexed" in caplog.text) is logged


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_page_of_200k_links_is_saved_with_its_first_links_indexed(
    state: AppState, vault_dir: Path
) -> None:
    """Before, an append of 200 000 links held the write lock for about 26 s; now the
    first `MAX_PAGE_LINKS` are indexed, the rest left out (and logged)."""
    write(vault_dir, "Many.md", "start\n")
    vault_ops.resync(state)
    async with Client(build_server(state), mode="legacy") as client:
        await ok(client, "save_page", slug="Many", content="[[a]]" * 200_000, mode="append")
        page = await ok(client, "read_page", slug="Many")
        assert len(state.index.links.from_page("Many.md")) == MAX_PAGE_LINKS
        assert [f.path for f in vault_ops.doctor(state).too_many_links] == ["Many.md"]
        assert_matches_fresh(state)
    assert page["content"].startswith("start\n")  # a long page is read in parts
    assert (vault_dir / "Many.md").read_text() == "start\n" + "[[a]]" * 200_000


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_megabyte_of_unclosed_links_is_saved_and_indexed(state: AppState) -> None:
    """Before, 1 MiB of `[a](` cost about 12 s in the write lock."""
    content = "[a](" * (1024 * 1024 // 4 - 8) + "[[Target]]"
    async with Client(build_server(state), mode="legacy") as client:
        with anyio.fail_after(60):
            saved = await ok(client, "save_page", slug="Storm", content=content)
            page = await ok(client, "read_page", slug="Storm")
        assert [link["target"] for link in saved["links"]] == ["Target"]
        assert page["hash"] == saved["hash"]
        assert_matches_fresh(state)


@pytest.mark.slow
def test_a_megabyte_of_unclosed_links_dropped_into_the_vault_is_indexed(
    state: AppState, vault_dir: Path
) -> None:
    write(vault_dir, "Storm.md", "[a](" * (1024 * 1024 // 4) + "\n\nthe end [[Target]]\n")
    report = vault_ops.apply_external_changes(state, ["Storm.md"])
    assert report.added == 1
    assert [link.target for link in state.index.links.from_page("Storm.md")] == ["Target"]


# -- big files are parsed before the write lock ----------------------------------------------


def _big_page(words: str) -> str:
    rng = random.Random(words)
    pieces = [*words.split() * 20, "[[Alpha]]", "[b](Beta.md)", "\n"]
    return " ".join(rng.choice(pieces) for _ in range(PARSE_AHEAD_BYTES // 4))


def test_a_big_file_parsed_ahead_is_indexed_as_a_fresh_index_would(
    state: AppState, vault_dir: Path
) -> None:
    write(vault_dir, "Big.md", _big_page("one two three"))
    ahead = sync.parse_ahead(vault_dir, ["Big.md", "Missing.md"], state.others)
    assert list(ahead.pages) == ["Big.md"]
    vault_ops.apply_external_changes(state, ["Big.md"])
    assert_matches_fresh(state)


def test_a_file_changed_after_it_was_parsed_ahead_is_parsed_again(
    state: AppState, vault_dir: Path
) -> None:
    write(vault_dir, "Big.md", _big_page("old words"))
    ahead = sync.parse_ahead(vault_dir, ["Big.md"], state.others)
    write(vault_dir, "Big.md", "[[Gamma]] " + _big_page("new words"))
    with state.lock, state.index.write():
        sync.sync(state, scope=["Big.md"], ahead=ahead)
    assert "Gamma" in {link.target for link in state.index.links.from_page("Big.md")}
    assert_matches_fresh(state)


def test_a_page_parsed_ahead_before_an_attachment_appeared_is_parsed_again(
    state: AppState, vault_dir: Path
) -> None:
    """`[[data.csv]]` is a page link until `data.csv` exists; then it is an attachment."""
    write(vault_dir, "Big.md", "[[data.csv]] " + _big_page("some words"))
    ahead = sync.parse_ahead(vault_dir, ["Big.md"], state.others)
    (vault_dir / "data.csv").write_text("a,b\n")
    vault_ops.apply_external_changes(state, ["data.csv"])
    with state.lock, state.index.write():
        sync.sync(state, scope=["Big.md"], ahead=ahead)
    assert "data.csv" not in {link.target for link in state.index.links.from_page("Big.md")}
    assert_matches_fresh(state)
