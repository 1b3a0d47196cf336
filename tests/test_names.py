"""A page is its file: the cases of real vaults where names folded into slugs reached the
wrong file, each through the real tools, and properties over vaults full of near names."""

from __future__ import annotations

import io
import random
import sys
import tempfile
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, fails, ok
from lore_mcp import links, vault_ops
from lore_mcp.cli import main as lore
from lore_mcp.errors import LoreError
from lore_mcp.server import build_server
from lore_mcp.slugs import path_key
from test_obsidian import obsidian_resolve

pytestmark = pytest.mark.anyio


def files(root: Path) -> dict[str, bytes]:
    """Every file of the vault outside dot-folders, by path, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(".")
    }


@pytest.fixture
async def served(vault_dir: Path) -> AsyncIterator[tuple[Client, Path]]:
    write(vault_dir, "Languages/C.md", "the C language\n")
    write(vault_dir, "My Page.md", "my page\n")
    write(vault_dir, "Ideas Q1.md", "ideas\n")
    write(vault_dir, "People/rose-pine.md", "An author. See [[Rose Pine]].\n")
    write(vault_dir, "Themes/Rose Pine.md", "A theme. By [[rose-pine]].\n")
    write(vault_dir, "T/Red: X.md", "colon\n")
    write(vault_dir, "T/Red - X.md", "dash\n")
    write(vault_dir, "T/Links.md", "[[T/Red: X]] and [[Red - X]]\n")
    write(vault_dir, "People/Ada Lovelace.md", "---\naliases: [Ada]\n---\nThe first program.\n")
    write(vault_dir, "Notes.md", "About [[Ada]].\n")
    state = vault_ops.open_vault(vault_dir, scan=False)
    async with Client(build_server(state)) as client:
        yield client, vault_dir


async def test_a_save_by_a_near_name_overwrites_nothing(
    served: tuple[Client, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, root = served
    before = files(root)
    for name, page, new in [
        ("C#", "Languages/C", None),  # `#` is no file name: no new page either
        ("my_page", "My Page", "my_page.md"),
        ("Ideas: Q1?", "Ideas Q1", None),
    ]:
        message = await fails(client, "save_page", slug=name, content="overwritten?\n")
        assert "Nothing was written" in message and f"send {page!r}" in message, message
        if new:
            assert repr(new) in message  # what to send for a new page instead
    assert files(root) == before
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\n")))
    assert lore(["save", "C#", "--vault", str(root)]) == 1
    assert files(root) == before
    # the exact names write the pages meant
    assert (await ok(client, "save_page", slug="c", content="C\n"))["path"] == "Languages/C.md"
    made = await ok(client, "save_page", slug="my_page.md", content="new\n")
    assert (made["path"], made["created"]) == ("my_page.md", True)
    assert (root / "My Page.md").read_text() == "my page\n"


async def test_an_exact_title_reaches_its_own_file(served: tuple[Client, Path]) -> None:
    client, _ = served
    theme = await ok(client, "read_page", slug="Rose Pine")
    assert (theme["path"], theme["matched_by"]) == ("Themes/Rose Pine.md", "title")
    author = await ok(client, "read_page", slug="rose-pine")
    assert author["path"] == "People/rose-pine.md"
    [from_author] = author["links"]
    [from_theme] = theme["links"]
    assert (from_author["target"], from_author["slug"]) == ("Rose Pine", "themes/rose-pine")
    assert (from_theme["target"], from_theme["slug"]) == ("rose-pine", "people/rose-pine")
    assert not from_author["loose"] and not from_theme["loose"]


async def test_every_file_has_a_name_that_reaches_it(served: tuple[Client, Path]) -> None:
    client, root = served
    colon = await ok(client, "read_page", slug="T/Red: X.md")
    assert colon["content"] == "colon\n"
    await ok(client, "save_page", slug="T/Red: X.md", content="more\n", mode="append")
    assert (root / "T/Red: X.md").read_text() == "colon\nmore\n"
    assert (root / "T/Red - X.md").read_text() == "dash\n"
    links = (await ok(client, "read_page", slug="T/Links"))["links"]
    assert [link["slug"] for link in links] == ["T/Red: X.md", "T/Red - X.md"]
    listed = {p["slug"] for p in (await ok(client, "list_pages", folder="T"))["pages"]}
    assert listed == {"T/Red: X.md", "T/Red - X.md", "t/links"}
    for handle in listed:  # every handle a tool gives reads that one file
        page = await ok(client, "read_page", slug=handle)
        assert page["slug"] == handle


async def test_an_alias_finds_a_page_for_reading_but_never_takes_a_link(
    served: tuple[Client, Path],
) -> None:
    client, root = served
    notes = await ok(client, "read_page", slug="Notes")
    [link] = notes["links"]
    assert (link["slug"], link["exists"]) == ("ada", False)  # Obsidian shows it unresolved
    assert link["note"].endswith("write [[Ada Lovelace|Ada]]")
    read = await ok(client, "read_page", slug="Ada")
    assert (read["path"], read["matched_by"]) == ("People/Ada Lovelace.md", "alias")
    before = files(root)
    message = await fails(client, "save_page", slug="Ada", content="x\n", mode="append")
    assert "'People/Ada Lovelace'" in message and "an alias" in message
    assert files(root) == before
    saved = await ok(client, "save_page", slug="Notes", content="About [[Ada Lovelace|Ada]].\n")
    assert [(k["slug"], k["note"]) for k in saved["links"]] == [("people/ada-lovelace", None)]
    assert saved["placeholders_removed"] == ["ada"]


async def test_the_tie_break_is_obsidians(vault_dir: Path) -> None:
    write(vault_dir, "zzzz/Note.md", "far\n")
    write(vault_dir, "a/b/Note.md", "short path\n")
    write(vault_dir, "a/Note.md", "ancestor of the linker's folder\n")
    write(vault_dir, "a/b/c/Linker.md", "[[Note]] [[Title^abc]] [[Title#^abc]]\n")
    write(vault_dir, "zzzz/Linker.md", "[[Note]]\n")
    write(vault_dir, "Title.md", "t\n^abc\n")
    state = vault_ops.open_vault(vault_dir)
    try:
        deep = vault_ops.read_page(state, "a/b/c/Linker").links
        # an ancestor folder counts for nothing: the shortest path wins
        assert [(k.target, k.slug, k.exists) for k in deep] == [
            ("Note", "a/note", True),
            ("Title^abc", "titleabc", False),  # no `#`: not a block link, a page name
            ("Title", "title", True),
        ]
        [near] = vault_ops.read_page(state, "zzzz/Linker").links
        assert near.slug == "zzzz/note"  # the linking page's own folder
        assert_matches_fresh(state)
    finally:
        state.close()


def test_links_spelled_apart_lead_apart_in_one_pass(vault_dir: Path) -> None:
    """A first index resolves a target once for all the links that spell it alike: not
    for links that spell it otherwise (files only case tells apart), nor where the
    linking page's folder breaks a tie."""
    write(vault_dir, "Note.md", "upper\n")
    if (vault_dir / "note.md").exists():
        pytest.skip("this file system does not tell case apart")
    write(vault_dir, "note.md", "lower\n")
    write(vault_dir, "x/Topic.md", "in x\n")
    write(vault_dir, "y/Topic.md", "in y\n")
    for n in range(3):  # links to the same targets from several pages, in both folders
        write(vault_dir, f"x/From {n}.md", "[[Note]] [[note]] [[Topic]]\n")
        write(vault_dir, f"y/From {n}.md", "[[note]] [[Note]] [[Topic]]\n")
    state = vault_ops.open_vault(vault_dir)
    try:
        for n in range(3):
            for folder, order in (("x", ["Note", "note"]), ("y", ["note", "Note"])):
                found = vault_ops.read_page(state, f"{folder}/From {n}").links
                assert [(k.target, k.slug) for k in found] == [
                    *[(name, state.handle(f"{name}.md")) for name in order],
                    ("Topic", state.handle(f"{folder}/Topic.md")),
                ]
        assert_matches_fresh(state)
    finally:
        state.close()


async def test_renames_touch_only_what_they_change_and_undo(vault_dir: Path) -> None:
    write(vault_dir, "Sync/Security.md", "sync security\n")
    write(vault_dir, "Settings/Security.md", "settings security\n")
    write(vault_dir, "Settings.md", "See [[Security]] and [[Settings/Security]].\n")
    write(vault_dir, "Third.md", "[[Security]], [[Settings]], [t](notes/Target%20Topic.md)\n")
    write(vault_dir, "notes/Target Topic.md", "topic\n")
    before = files(vault_dir)
    state = vault_ops.open_vault(vault_dir)
    try:
        first = vault_ops.rename_page(state, "Settings", "Preferences")
        assert first.rewritten == ["third"]
        vault_ops.rename_page(state, "Preferences", "Settings")
        assert files(vault_dir) == before
        moved = vault_ops.rename_page(state, "target topic", "Target Subject")
        assert moved.path == "notes/Target Subject.md"
        third = (vault_dir / "Third.md").read_text()
        assert "[t](notes/Target%20Subject.md)" in third  # the new name as given
        vault_ops.rename_page(state, "Target Subject", "Target Topic")
        assert files(vault_dir) == before
        assert_matches_fresh(state)
    finally:
        state.close()


async def test_a_history_follows_a_rename(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(vault_dir, "Draft.md", "first\n")
    state = vault_ops.open_vault(vault_dir)
    try:
        vault_ops.save_page(state, "Draft", "second\n")
        vault_ops.rename_page(state, "Draft", "Final")
    finally:
        state.close()
    capsys.readouterr()
    assert lore(["history", "Final", "--vault", str(vault_dir)]) == 0
    assert "save_page" in capsys.readouterr().out


async def test_must_not_exist_yet(served: tuple[Client, Path]) -> None:
    client, root = served
    message = await fails(client, "save_page", slug="My Page", content="x\n", expected_hash="")
    assert "already exists" in message
    made = await ok(client, "save_page", slug="Fresh", content="x\n", expected_hash="")
    assert made["created"] and (root / "Fresh.md").read_text() == "x\n"


# -- vaults full of near names ---------------------------------------------------------------

_STEMS = [
    "My Page",
    "my page",
    "my-page",
    "my_page",
    "MY PAGE",
    "My  Page",
    "My Page.",
    "Café",
    unicodedata.normalize("NFD", "Café"),
    "C",
    "C++",
    "C#1",
    "Red: X",
    "Red - X",
    "Ünïcode Ω",
    "v1.1.0",
    "v1.10",
    "!!!",
    "---",
]
_FOLDERS = ["", "a/", "A/", "a/b/", "z/", "Notes/"]


def _near_vault(root: Path, seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    made: dict[str, str] = {}
    for _ in range(count):
        rel = rng.choice(_FOLDERS) + rng.choice(_STEMS) + ".md"
        if rel.lower() in {r.lower() for r in made}:
            continue  # one file per path on a file system that ignores case, too
        made[rel] = rel
        links = " ".join(f"[[{rng.choice(_STEMS)}]]" for _ in range(3))
        write(root, rel, f"{rel}\n{links}\n")
    return sorted(made)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=4, max_value=30))
@pytest.mark.slow
def test_every_file_is_read_and_appended_by_its_handle_and_path_alone(
    seed: int, count: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        root.mkdir()
        made = _near_vault(root, seed, count)
        state = vault_ops.open_vault(root)
        try:
            assert sorted(state.pages) == made  # two files are never one page
            for rel in made:
                handle = state.handle(rel)
                for name in (handle, rel, rel[:-3]):
                    assert vault_ops.read_page(state, name).path == rel, (name, rel)
                before = files(root)
                for name in (handle, rel):
                    vault_ops.save_page(state, name, "+\n", mode="append")
                after = files(root)
                assert {p for p in after if after[p] != before.get(p)} == {rel}
                assert after[rel] == before[rel] + b"+\n+\n"
            assert_matches_fresh(state)
        finally:
            state.close()


def _links_resolve_as_obsidian(root: Path) -> int:
    state = vault_ops.open_vault(root)
    try:
        pages = sorted(state.pages)
        checked = 0
        for rel in pages:
            found = {k.target: k for k in vault_ops.read_page(state, rel).links}
            for link in links.scan((root / rel).read_text()).links:
                if link.is_same_page or link.is_attachment:
                    continue
                expected = obsidian_resolve(link.target, rel, pages)
                ours = found[link.target]
                followed = ours.exists and not ours.loose
                assert followed == (expected is not None), (rel, link.target)
                if expected is not None:
                    assert ours.slug == state.handle(expected), (rel, link.target, expected)
                checked += 1
        return checked
    finally:
        state.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=10_000))
def test_links_in_a_vault_of_near_names_resolve_as_obsidian_resolves_them(seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        root.mkdir()
        _near_vault(root, seed, 30)
        assert _links_resolve_as_obsidian(root) > 0


def test_the_sample_vault_resolves_as_obsidian_does(brain_dir: Path) -> None:
    assert _links_resolve_as_obsidian(brain_dir) > 50


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=10_000), st.data())
def test_a_rename_and_its_inverse_leave_every_other_file_as_it_was(
    seed: int, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        root.mkdir()
        made = _near_vault(root, seed, 25)
        # A new name that only case or Unicode form tells from another page's path is
        # refused (Obsidian would take them for one), so twins cannot be renamed back.
        keys = [path_key(p) for p in made]
        made = [
            p
            for p, key in zip(made, keys, strict=True)
            if not set(p) & set("!:#") and "-.md" not in p and keys.count(key) == 1
        ]

        if not made:
            return
        rel = data.draw(st.sampled_from(made))
        before = files(root)
        state = vault_ops.open_vault(root)
        try:
            # Links that name the page otherwise than its file does ([[my page]] for
            # `My Page.md`) come back as the name the rename was given; no other changes.
            respelled = {rel} | {
                source
                for source in state.pages
                for link in vault_ops.read_page(state, source).links
                if link.slug == state.handle(rel)
                and link.target not in (rel[:-3], rel[:-3].rpartition("/")[2])
            }
            try:
                there = vault_ops.rename_page(state, rel, "Elsewhere/Renamed Page")
            except LoreError:
                return
            vault_ops.rename_page(state, there.path, rel[:-3] if "/" in rel else "/" + rel[:-3])
        finally:
            state.close()
        after = files(root)
        assert {p for p in before if before[p] != after.get(p)} <= respelled

        assert after.get(rel) is not None
