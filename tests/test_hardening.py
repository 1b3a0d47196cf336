"""Bad input through the real tools (the SDK's in-memory client, both protocol eras):
every refusal is an isError result with a clear message, and nothing on disk or in the
index changes. Hostile content that is legal is saved and indexed like any other."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, call, ok, snapshot, text
from lore_mcp import vault_ops as engine
from lore_mcp.calls import INTERNAL_ERROR
from lore_mcp.config import MAX_CONTENT_BYTES
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState

pytestmark = pytest.mark.anyio

SEED_PAGES = {
    "Home.md": "Start at [[notes/Alpha]] and [[Beta]].\n",
    "notes/Alpha.md": "Alpha links [[Home]].\n",
    "Beta.md": "Beta.\n",
}


def connect(state: AppState, mode: str) -> Client:
    server = build_server(state)
    return Client(server, mode="legacy") if mode == "legacy" else Client(server)


def files(root: Path) -> dict[str, bytes]:
    """Every file under the root but the index: the bytes an agent could lose."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".lore" not in p.relative_to(root).parts
    }


@pytest.fixture(params=["legacy", pytest.param("2026-07-28", marks=pytest.mark.slow)])
def mode(request: pytest.FixtureRequest) -> str:
    """Both protocol eras meet the same checks; the default run takes the first only."""
    return str(request.param)


@pytest.fixture
async def served(vault_dir: Path, mode: str) -> AsyncIterator[tuple[Client, AppState]]:
    for rel, body in SEED_PAGES.items():
        write(vault_dir, rel, body)
    state = engine.open_vault(vault_dir)
    async with connect(state, mode) as client:
        yield client, state


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail cleanly; its message (never the generic crash one)."""
    result = await call(client, tool, **arguments)
    assert result.is_error is True, f"{tool}({arguments!r:.80}) did not fail"
    message = text(result)
    # The engine's refusals come under the SDK's prefix; arguments that fail the input
    # schema are told in a sentence of their own.
    assert message.startswith(
        (f"Error executing tool {tool}: ", f"{tool} was called with arguments it cannot take (")
    ), message
    assert INTERNAL_ERROR not in message and "pydantic" not in message
    return message


# -- bad names ---------------------------------------------------------------------------

TRAVERSAL = "leaves the vault"
ABSOLUTE = "absolute path"
HIDDEN = "hidden file or folder"
NO_LETTERS = "no letters or digits"
NO_NAME = "does not name a page"
NOT_ALLOWED = "Obsidian does not allow"
CONTROL = "holds a control character"
DEVICE = "Windows keeps the name"
BAD_NAMES: list[tuple[str, str]] = [
    ("../escape", TRAVERSAL),
    ("notes/../../escape", TRAVERSAL),
    ("..", TRAVERSAL),
    ("..\\escape", TRAVERSAL),
    ("notes\\..\\..\\escape", TRAVERSAL),
    ("%2e%2e/escape", TRAVERSAL),
    ("%2e%2e%2fescape", TRAVERSAL),
    ("%2E%2E%5Cescape", TRAVERSAL),
    ("..%2fescape", HIDDEN),
    ("\\\\server\\share\\x", ABSOLUTE),
    ("C:\\Windows\\win.ini", ABSOLUTE),
    ("c:/x", ABSOLUTE),
    ("//server/share/x", ABSOLUTE),
    (".lore/lore", HIDDEN),
    (".lore/trash/x", HIDDEN),
    (".git/config", HIDDEN),
    ("notes/.obsidian/x", HIDDEN),
    (".hidden", HIDDEN),
    ("   ", NO_NAME),
    ("./.", NO_NAME),
    ("a\x00b", "NUL"),
    ("", "at least 1 character"),
    ("bad\ud800name", "valid string"),
    ("\udcff", "valid string"),
    ("x" * 10_000, "at most 1000 characters"),
]
LONG_SEGMENT = "y" * 1000


def name_calls(name: str) -> list[tuple[str, dict[str, Any]]]:
    """Every way a name reaches a tool."""
    calls = [
        ("read_page", {"slug": name}),
        ("save_page", {"slug": name, "content": "x"}),
        ("delete_page", {"slug": name}),
        ("rename_page", {"slug": name, "new_name": "Fine Name"}),
        ("rename_page", {"slug": "Beta", "new_name": name}),
        ("get_backlinks", {"slug": name}),
    ]
    if name.strip():  # a blank centre or folder means "all", not an error
        calls += [("get_graph", {"slug": name}), ("list_pages", {"folder": name})]
    return calls


@pytest.mark.parametrize(("name", "reason"), BAD_NAMES, ids=lambda v: repr(v)[:30])
async def test_bad_names_are_refused_everywhere(
    served: tuple[Client, AppState], name: str, reason: str
) -> None:
    client, state = served
    before, index_before = files(state.root), snapshot(state)
    for tool, arguments in name_calls(name):
        message = await refused(client, tool, **arguments)
        assert reason in message, f"{tool}: {message}"
    assert files(state.root) == before
    assert snapshot(state) == index_before
    assert not (state.root.parent / "escape.md").exists()
    assert_matches_fresh(state)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (LONG_SEGMENT, "longer than 200 characters"),
        ("<.x", NOT_ALLOWED),
        ("\b.x", CONTROL),
        ("x\ny", CONTROL),  # it once made `xy.md`, which no later call could name
        ("notes/tab\there", CONTROL),
        ("CON", DEVICE),  # Windows device names, with any extension, in any case
        ("nul.txt", DEVICE),
        ("Aux.md", DEVICE),
        ("com1", DEVICE),
        ("LPT9.tar.gz", DEVICE),
        ("notes/prn/page", DEVICE),
        ("notes/<.x/page", NOT_ALLOWED),
        ("!!!", NO_LETTERS),  # an existing file may be so named; a new one may not
        ("---", NO_LETTERS),
        ("?*:<>|", NOT_ALLOWED),
        ("C# [draft] ^1", NOT_ALLOWED),
    ],
    ids=repr,
)
async def test_names_only_a_write_refuses(
    served: tuple[Client, AppState], name: str, reason: str
) -> None:
    """Reads look such names up (and find nothing); writes cannot make a new file of
    them, and say what a name needs."""

    client, state = served
    before = files(state.root)
    assert "No page named" in await refused(client, "read_page", slug=name)
    assert reason in await refused(client, "save_page", slug=name, content="x")
    assert reason in await refused(client, "rename_page", slug="Beta", new_name=name)
    assert files(state.root) == before
    assert_matches_fresh(state)


@pytest.mark.skipif(sys.platform == "win32", reason="Windows cannot hold these names")
async def test_existing_files_with_names_a_new_page_may_not_have(
    served: tuple[Client, AppState],
) -> None:
    """A file system may hold `CON.md` or a name with a line break: those are pages,
    read, changed, renamed and deleted by their exact names, in the very files."""
    client, state = served
    for rel in ("CON.md", "notes/nul.txt.md", "x\ny.md"):
        write(state.root, rel, f"{rel} links [[Beta]].\n")
    engine.resync(state)
    await ok(client, "save_page", slug="Home", content="[[CON]]\n", mode="append")
    assert (await ok(client, "read_page", slug="CON"))["path"] == "CON.md"
    read = await ok(client, "read_page", slug="x\ny")
    assert (read["path"], read["matched_by"]) == ("x\ny.md", "path")
    assert (await ok(client, "read_page", slug="notes/nul.txt"))["path"] == "notes/nul.txt.md"
    await ok(client, "save_page", slug="x\ny", content="more\n", mode="append")
    await ok(client, "save_page", slug="con", content="CON again\n")
    assert (state.root / "x\ny.md").read_text(encoding="utf-8") == "x\ny.md links [[Beta]].\nmore\n"
    assert (state.root / "CON.md").read_text(encoding="utf-8") == "CON again\n"
    renamed = await ok(client, "rename_page", slug="CON", new_name="Console")
    assert renamed["path"] == "Console.md"
    assert "[[Console]]" in (state.root / "Home.md").read_text(encoding="utf-8")
    assert DEVICE in await refused(client, "rename_page", slug="Console", new_name="con")
    deleted = await ok(client, "delete_page", slug="x\ny")
    assert deleted["path"] == "x\ny.md" and not (state.root / "x\ny.md").exists()
    assert sorted(files(state.root)) == [
        "Beta.md",
        "Console.md",
        "Home.md",
        "notes/Alpha.md",
        "notes/nul.txt.md",
    ]
    assert_matches_fresh(state)


async def test_names_holding_link_syntax(served: tuple[Client, AppState]) -> None:
    """`[ ] # ^ |` cannot stand in a [[link]]: a new name holding them is refused with
    one that can, and nothing is written."""
    client, state = served
    before = files(state.root)
    message = await refused(client, "save_page", slug="C# [draft] ^1", content="x")
    assert "such as 'C draft 1'" in message
    message = await refused(client, "rename_page", slug="Beta", new_name="0[")
    assert "such as '0'" in message
    assert files(state.root) == before
    renamed = await ok(client, "rename_page", slug="Beta", new_name="0")
    assert renamed["path"] == "0.md"
    assert "[[0]]" in (state.root / "Home.md").read_text(encoding="utf-8")
    assert_matches_fresh(state)


async def test_a_name_that_collides(served: tuple[Client, AppState]) -> None:
    client, state = served
    await ok(client, "save_page", slug="other/Alpha", content="second alpha\n")
    before = files(state.root)
    message = await refused(client, "save_page", slug="alpha", content="which one?")
    assert "notes/Alpha.md" in message and "other/Alpha.md" in message
    assert "notes/Alpha.md" in await refused(client, "delete_page", slug="Alpha")

    message = await refused(client, "rename_page", slug="Home", new_name="notes/Alpha")
    assert "already exists" in message
    assert files(state.root) == before


# -- bad content ---------------------------------------------------------------------------


async def test_content_over_the_limits(served: tuple[Client, AppState]) -> None:
    client, state = served
    before = files(state.root)
    ten_mb = "x" * (10 * 1024 * 1024 + 1)
    assert "at most 1048576 characters" in await refused(
        client, "save_page", slug="Beta", content=ten_mb
    )
    wide = "é" * (MAX_CONTENT_BYTES - 1)  # under the character bound, 2 MiB of UTF-8
    message = await refused(client, "save_page", slug="Beta", content=wide)
    assert f"limit is {MAX_CONTENT_BYTES:,} bytes" in message and "Split it" in message
    assert "NUL" in await refused(client, "save_page", slug="Beta", content="a\x00b")
    assert "valid string" in await refused(client, "save_page", slug="Beta", content="a\udc80")
    assert files(state.root) == before


async def test_content_at_the_limits_is_saved(served: tuple[Client, AppState]) -> None:
    client, state = served
    ascii_full = "x" * MAX_CONTENT_BYTES
    wide_full = "é" * (MAX_CONTENT_BYTES // 2)
    await ok(client, "save_page", slug="Full", content=ascii_full)
    await ok(client, "save_page", slug="Wide", content=wide_full)
    assert (state.root / "Full.md").stat().st_size == MAX_CONTENT_BYTES
    assert (state.root / "Wide.md").read_text(encoding="utf-8") == wide_full
    assert "at most" in await refused(client, "save_page", slug="Full", content=ascii_full + "x")
    assert "limit is" in await refused(client, "save_page", slug="Wide", content=wide_full + "é")
    assert_matches_fresh(state)


HOSTILE_CONTENT = [
    "[[" * 5000 + "deep" + "]]" * 10,
    "[[[[[[[[nested]]]]]]]] and [[[[ and ]]]] and [[ [[x]] ]]",
    "I am [[Me]], [[me|myself]], ![[Me]] and [[Me#Top]] and [[#Top]].",
    "[[" + "z" * 10_000 + "]]",
    "[[../../../etc/passwd]] [[/etc/passwd]] [[.lore/lore]] [[C:\\x]] [[%2e%2e/x]]",
    "[[]] [[|]] [[#]] [[^]] [[!]] [[ ]] [[.md]] [[|alias only]]",
    "```\n[[unclosed fence\n",
    "\ufeff[[after bom]]\r\n[[crlf]]\r\n\u2028[[line sep]]",
    'NEAR(a b) AND "unbalanced OR * ^ : ( )',
]


@pytest.mark.parametrize("content", HOSTILE_CONTENT, ids=lambda v: repr(v)[:30])
async def test_hostile_content_is_saved_and_indexed(
    served: tuple[Client, AppState], content: str
) -> None:
    client, state = served
    saved = await ok(client, "save_page", slug="Me", content=content)
    assert (state.root / saved["path"]).read_bytes() == content.encode("utf-8")
    page = await ok(client, "read_page", slug="Me")
    assert page["content"] == content
    await ok(client, "get_backlinks", slug="Me", include_unlinked=True)
    await ok(client, "get_graph", slug="Me", depth=3)
    await ok(client, "get_graph")
    assert (state.root.parent / "etc").exists() is False
    assert_matches_fresh(state)


async def test_a_page_linking_to_itself(served: tuple[Client, AppState]) -> None:
    client, state = served
    await ok(client, "save_page", slug="Me", content=HOSTILE_CONTENT[2])
    page = await ok(client, "read_page", slug="Me")
    assert [b["slug"] for b in page["backlinks"]] == ["me"]
    assert {link["slug"] for link in page["links"]} == {"me"}
    renamed = await ok(client, "rename_page", slug="Me", new_name="Myself")
    assert renamed["links_rewritten"] == 4
    text_after = (state.root / "Myself.md").read_text(encoding="utf-8")
    assert "[[Myself]]" in text_after and "[[#Top]]" in text_after
    assert_matches_fresh(state)


# -- queries --------------------------------------------------------------------------------

SAFE_QUERIES = [
    '"unbalanced',
    'a"b"c"',
    '""',
    "NOT",
    "AND OR NOT",
    "alpha NOT beta",
    "NEAR(alpha beta)",
    "*",
    "alpha*",
    "^alpha",
    "title:alpha",
    "body:*",
    "(alpha",
    ")",
    "-alpha",
    "+alpha",
    "{alpha beta}",
    "'",
    "\\",
    "a\x00b",
    "\x00",
    "%",
    "_",
    "[[alpha]]",
    "alpha" * 200,
    '記憶 OR "記',
]


async def test_queries_never_break_search(served: tuple[Client, AppState]) -> None:
    client, _ = served
    for query in SAFE_QUERIES:
        await ok(client, "search", query=query, limit=5)
        await ok(client, "search_titles", query=query, limit=5)
    # Operators are words (any word may match), and a stray quote is no phrase.
    for query, first in (
        ('"unbalanced alpha', "notes/alpha"),
        ("alpha OR", "notes/alpha"),
        ('alpha NOT "beta', "home"),  # the page with both words
    ):
        hits = (await ok(client, "search", query=query))["hits"]
        assert hits[0]["slug"] == first, query
    hits = (await ok(client, "search", query="(alpha)"))["hits"]
    assert hits[0]["slug"] == "notes/alpha"
    assert "at least 1 character" in await refused(client, "search", query="")
    assert "at most 1000 characters" in await refused(client, "search", query="q" * 1001)
    assert "at most 1000" in await refused(client, "search_titles", query="q" * 1001)
