"""Random tool calls with random arguments (good, hostile and of the wrong type) through
the SDK's in-memory client: the server never crashes, every failure is a clean isError
result that changes nothing, and afterwards the index equals a fresh index of the files."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import TextContent

from conftest import write
from helpers import assert_matches_fresh, snapshot
from lore_mcp import vault_ops as engine
from lore_mcp.calls import INTERNAL_ERROR
from lore_mcp.server import build_server

SEED_PAGES = {
    "Alpha.md": "[[Beta]] and [[notes/Gamma]] and [[Missing]].\n",
    "notes/Gamma.md": "Gamma links [[Alpha|back]].\n",
    "Beta.md": "Beta mentions Alpha.\n",
}
GOOD_NAMES = [
    "Alpha",
    "alpha.md",
    "Beta",
    "notes/Gamma",
    "gamma",
    "Missing",
    "notes/Alpha",
    "Delta Page",
    "x/Delta Page",
    "Ünïcode Ω",
    "deep/notes/Gamma",
]
HOSTILE_NAMES = [
    "../x",
    "..\\x",
    "%2e%2e/x",
    "/abs",
    "C:\\x",
    ".lore/x",
    ".git/x",
    "",
    "   ",
    "!!!",
    "a\x00b",
    "bad\ud800",
    "x" * 1001,
    "y" * 300,
]
TARGETS = ["Alpha", "beta", "notes/Gamma", "Gamma#Head", "Beta|alias", "Missing", "../Alpha"]

names = st.one_of(st.sampled_from(GOOD_NAMES), st.sampled_from(HOSTILE_NAMES), st.text(max_size=12))
contents = st.one_of(
    st.lists(st.sampled_from(TARGETS), max_size=4).map(
        lambda ts: "".join(f"See [[{t}]].\n" for t in ts)
    ),
    st.text(max_size=40),
    st.sampled_from(["", "a\x00b", "x\udc80", "[[" * 50, "`[[Alpha]]`"]),
)
queries = st.one_of(
    st.text(max_size=20), st.sampled_from(['"unbalanced', "NOT", "a*", "NEAR(", "", "q" * 1001])
)
wrong = st.one_of(
    st.integers(),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
limits = st.integers(-1, 120)

TOOLS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "read_page": {"slug": names, "offset": st.integers(-1, 3), "column": st.integers(-1, 12)},
    "save_page": {
        "slug": names,
        "content": contents,
        "mode": st.sampled_from(["replace", "append", "prepend", "edit", "section", "bogus"]),
        "old_text": st.one_of(st.none(), st.none(), st.sampled_from(["Beta", "[[", "", "e"])),
        "heading": st.one_of(st.none(), st.none(), st.sampled_from(["Head", "## Head", "#"])),
    },
    "delete_page": {"slug": names},
    "rename_page": {"slug": names, "new_name": names},
    "list_pages": {
        "folder": st.one_of(st.just(""), names),
        "include_placeholders": st.booleans(),
        "offset": st.integers(-2, 5),
        "limit": limits,
    },
    "search": {"query": queries, "limit": limits},
    "search_titles": {"query": queries, "limit": limits},
    "get_backlinks": {"slug": names, "include_unlinked": st.booleans()},
    "get_graph": {"slug": st.one_of(st.none(), names), "depth": st.integers(0, 4)},
    "no_such_tool": {},
}


@st.composite
def tool_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(sorted(TOOLS)))
    fields = TOOLS[tool]
    arguments = {key: draw(value) for key, value in fields.items() if draw(st.integers(0, 5))}
    twist = draw(st.sampled_from(["none", "none", "wrong type", "extra"]))
    if twist == "wrong type" and fields:
        arguments[draw(st.sampled_from(sorted(fields)))] = draw(wrong)
    elif twist == "extra":
        arguments[draw(st.text(min_size=1, max_size=8))] = draw(wrong)
    return tool, arguments


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".lore" not in p.relative_to(root).parts
    }


async def drive(root: Path, modern: bool, steps: list[tuple[str, dict[str, Any]]]) -> None:
    state = engine.open_vault(root, scan=False)
    server = build_server(state)
    async with Client(server) if modern else Client(server, mode="legacy") as client:
        for tool, arguments in steps:
            before, index_before = files(root), snapshot(state)
            with anyio.fail_after(20):
                result = await client.call_tool(tool, arguments)
            if result.is_error:
                block = result.content[0]
                assert isinstance(block, TextContent) and block.text
                assert INTERNAL_ERROR not in block.text, (tool, arguments)
                assert files(root) == before, f"a failed {tool} changed the files"
                assert snapshot(state) == index_before, f"a failed {tool} changed the index"
            else:
                assert isinstance(result.structured_content, dict)
        assert_matches_fresh(state)
        listing = await client.call_tool("list_pages", {})
        assert listing.is_error is False


def run(modern: bool, steps: list[tuple[str, dict[str, Any]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in SEED_PAGES.items():
            write(root, rel, text)
        anyio.run(drive, root, modern, steps)


FUZZ = settings(
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CALLS = {"modern": st.booleans(), "steps": st.lists(tool_call(), min_size=1, max_size=12)}


@settings(FUZZ, max_examples=10)
@given(**CALLS)
@pytest.mark.slow
def test_random_tool_calls_never_crash(
    modern: bool, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    run(modern, steps)


@pytest.mark.slow
@settings(FUZZ, max_examples=80)
@given(**CALLS)
def test_many_random_tool_calls_never_crash(
    modern: bool, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    run(modern, steps)
