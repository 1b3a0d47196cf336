"""The engine end to end: real files, real SQLite, the live graph."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from conftest import write
from helpers import assert_matches_fresh, fresh_snapshot, page_slugs, placeholder_slugs, snapshot
from lore_mcp import vault_ops as ops
from lore_mcp.errors import (
    AmbiguousNameError,
    ContentTooLargeError,
    InvalidArgumentError,
    InvalidNameError,
    LooseNameError,
    LoreError,
    PageExistsError,
    PageNotFoundError,
    UnsafePathError,
    VaultError,
)
from lore_mcp.vault_ops import AppState, apply
from lore_mcp.vault_ops.pagefile import Seen, read_page_file

# -- opening and indexing ------------------------------------------------------------


def test_brain_indexes_with_one_placeholder(brain: AppState) -> None:
    shape = ops.get_graph(brain).shape
    assert shape is not None
    assert shape.pages == 18
    assert [u.slug for u in shape.unresolved] == ["roadmap"]
    assert shape.placeholders == 1
    assert_matches_fresh(brain)


def test_code_is_not_linked(brain: AppState) -> None:
    page = ops.read_page(brain, "Link Syntax")
    targets = {link.target for link in page.links}
    assert "not-a-link" not in targets
    assert "also-not-a-link" not in targets
    assert "not-a-link" not in placeholder_slugs(brain)


def test_bare_name_resolves_into_folder(brain: AppState) -> None:
    page = ops.read_page(brain, "Index")
    slugs = {link.target: link.slug for link in page.links}
    assert slugs["Slugs"] == "concepts/slugs"
    habits = {link.target: link.slug for link in ops.read_page(brain, "Agent Habits").links}
    assert habits["tools/Search Tools"] == "tools/search-tools"
    started = {link.target: link.slug for link in ops.read_page(brain, "Getting Started").links}
    assert started["Index.md"] == "index"
    escaped = [link for link in page.links if link.target == "Search Tools"]
    assert escaped and all(link.slug == "tools/search-tools" for link in escaped)


def test_reopen_is_incremental_and_never_writes_pages(brain_dir: Path) -> None:
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in brain_dir.rglob("*.md")}
    first = ops.open_vault(brain_dir)
    first.close()
    again = ops.open_vault(brain_dir, scan=False)
    report = ops.index_vault(again)
    assert (report.added, report.updated, report.removed) == (0, 0, 0)
    assert report.unchanged == 18
    write(brain_dir, "concepts/Slugs.md", "Now links to [[Fresh Idea]].\n")
    (brain_dir / "Open Questions.md").unlink()
    write(brain_dir, "New.md", "[[Index]]\n")
    report = ops.index_vault(again)
    assert (report.added, report.updated, report.removed) == (1, 1, 1)
    assert "fresh-idea" in placeholder_slugs(again)
    assert_matches_fresh(again)
    again.close()
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in before if p.exists()}
    assert all(after[p] == before[p] for p in after if p.name not in ("Slugs.md",))


def test_a_first_index_in_batches_matches_one_in_a_single_batch(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index of more pages than one batch holds (links to pages in later
    batches, placeholders, folders) ends as one that takes all pages at once, and as
    one that loads the graph afresh from the index instead of updating it in place."""
    count = apply.BATCH + 100
    for i in range(count):
        links = f"[[Page {i * 7 % count}]] [[Missing {i % 13}]] [[f{i % 3}/Page {i // 2}]]"
        write(vault_dir, f"f{i % 7}/Page {i}.md", f"# Page {i}\n\n{links}\n")
    state = ops.open_vault(vault_dir)
    try:
        assert ops.read_page(state, "Missing 3").is_placeholder
        in_batches = snapshot(state)
    finally:
        state.close()
    # The pass leaves nothing in the vault but its own folder.
    assert sorted(p.name for p in vault_dir.iterdir()) == [".lore", *(f"f{i}" for i in range(7))]
    assert sum(1 for p in vault_dir.rglob("*.md") if ".lore" not in p.parts) == count
    monkeypatch.setattr(apply, "BATCH", count + 1)  # this time, one batch
    assert fresh_snapshot(vault_dir) == in_batches
    monkeypatch.setattr(apply, "RELOAD_OVER", 0)  # the graph loaded afresh from the index
    assert fresh_snapshot(vault_dir) == in_batches


def test_touched_but_unchanged_file_is_not_reparsed(state: AppState, vault_dir: Path) -> None:
    path = write(vault_dir, "a.md", "[[b]]\n")
    ops.index_vault(state)
    os.utime(path, ns=(1, 1))
    report = ops.index_vault(state)
    assert (report.updated, report.unchanged) == (0, 1)


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VaultError, match="does not exist"):
        ops.open_vault(tmp_path / "nope")


def test_dot_folders_and_symlinks_out_are_not_pages(vault_dir: Path, tmp_path: Path) -> None:
    write(vault_dir, ".obsidian/config.md", "x")
    write(vault_dir, "real.md", "x")
    outside = write(tmp_path, "outside.md", "secret")
    (vault_dir / "link.md").symlink_to(outside)
    st = ops.open_vault(vault_dir)
    assert sorted(page_slugs(st)) == ["real"]
    st.close()


def test_invalid_utf8_is_indexed_as_far_as_it_decodes(vault_dir: Path) -> None:
    raw = b"caf\xe9 menu [[Other]]\n"
    (vault_dir / "bad.md").write_bytes(raw)
    st = ops.open_vault(vault_dir)
    page = ops.read_page(st, "bad")
    assert "menu" in page.content
    assert [link.slug for link in page.links] == ["other"]
    assert (vault_dir / "bad.md").read_bytes() == raw
    row = st.index.pages.get("bad.md")
    assert row is not None and row.bad_utf8
    st.close()


def test_files_sharing_a_slug_are_two_pages(vault_dir: Path) -> None:
    write(vault_dir, "My Page.md", "upper")
    write(vault_dir, "my-page.md", "lower")
    write(vault_dir, "Other.md", "[[My Page]] [[my-page]]")
    st = ops.open_vault(vault_dir)
    try:
        assert sorted(st.pages) == ["My Page.md", "Other.md", "my-page.md"]
        # neither has the slug as its handle: each is named by its path
        assert sorted(page_slugs(st)) == ["My Page.md", "my-page.md", "other"]
        assert ops.read_page(st, "My Page").content == "upper"
        assert ops.read_page(st, "my-page").content == "lower"  # its exact path
        assert [link.slug for link in ops.read_page(st, "Other").links] == [
            "My Page.md",
            "my-page.md",
        ]
        ops.save_page(st, "my-page.md", "lower, edited")
        assert (vault_dir / "My Page.md").read_text() == "upper"
        assert (vault_dir / "my-page.md").read_text() == "lower, edited"
        assert_matches_fresh(st)
    finally:
        st.close()


def test_a_new_file_beside_one_of_the_same_slug_changes_nothing_of_it(vault_dir: Path) -> None:
    write(vault_dir, "My Page.md", "old")
    write(vault_dir, "Other.md", "[[My Page]]")
    ops.open_vault(vault_dir).close()
    write(vault_dir, "MY PAGE.md", "new")
    st = ops.open_vault(vault_dir, scan=False)
    try:
        report = ops.index_vault(st)
        assert (report.added, report.updated, report.removed, report.unchanged) == (1, 0, 0, 2)
        assert report.skipped == []
        assert ops.read_page(st, "My Page").content == "old"  # the exact case wins
        assert ops.read_page(st, "MY PAGE").content == "new"
        assert_matches_fresh(st)
        st.close()
        (vault_dir / "MY PAGE.md").unlink()
        st = ops.open_vault(vault_dir, scan=False)
        report = ops.index_vault(st)
        assert (report.added, report.removed, report.unchanged) == (0, 1, 2)
        assert ops.read_page(st, "my-page").content == "old"  # its slug is its own again
        assert_matches_fresh(st)
    finally:
        st.close()


def test_deleting_a_page_leaves_the_page_of_the_same_slug(vault_dir: Path) -> None:
    write(vault_dir, "My Page.md", "upper")
    write(vault_dir, "my-page.md", "lower")
    write(vault_dir, "Other.md", "[[My Page]]")
    st = ops.open_vault(vault_dir)
    try:
        deleted = ops.delete_page(st, "My Page")
        assert deleted.path == "My Page.md"
        assert (vault_dir / "my-page.md").read_text() == "lower"
        # Obsidian leaves [[My Page]] unresolved now; only its slug form still finds a page
        [link] = ops.read_page(st, "Other").links
        assert (link.slug, link.loose) == ("my-page", True)
        assert link.note is not None and "[[my-page]]" in link.note
        assert (deleted.became_placeholder, deleted.placeholders_created) == (False, [])
        page = ops.read_page(st, "my-page")
        assert (page.path, page.content) == ("my-page.md", "lower")
        assert_matches_fresh(st)
    finally:
        st.close()


def test_renaming_a_page_leaves_the_page_of_the_same_slug(vault_dir: Path) -> None:
    write(vault_dir, "My Page.md", "upper")
    write(vault_dir, "my-page.md", "lower")
    st = ops.open_vault(vault_dir)
    try:
        ops.rename_page(st, "My Page.md", "Moved Page")
        assert ops.read_page(st, "moved-page").content == "upper"
        assert ops.read_page(st, "my-page").path == "my-page.md"
        assert_matches_fresh(st)
    finally:
        st.close()


# -- save -----------------------------------------------------------------------------


def test_save_creates_file_with_the_name_as_typed(state: AppState, vault_dir: Path) -> None:
    result = ops.save_page(state, "notes/My Page", "# Hi\nSee [[Other Page]].\n")
    assert (result.slug, result.path, result.created) == ("notes/my-page", "notes/My Page.md", True)
    assert (vault_dir / "notes/My Page.md").read_text() == "# Hi\nSee [[Other Page]].\n"
    assert result.placeholders_created == ["other-page"]
    assert [(link.target, link.exists) for link in result.links] == [("Other Page", False)]
    assert_matches_fresh(state)


def test_save_overwrites_by_any_exact_name(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "notes/My Page", "one")
    for name in ("My Page", "notes/my-page", "notes/My Page.md", "NOTES/MY PAGE", "/notes/My Page"):
        result = ops.save_page(state, name, f"two {name}")
        assert (result.slug, result.created) == ("notes/my-page", False)
    assert (vault_dir / "notes/My Page.md").read_text() == "two /notes/My Page"
    for loose in ("my-page", "my_page"):  # only the slug form matches: refused
        with pytest.raises(LooseNameError, match="notes/My Page"):
            ops.save_page(state, loose, "three")
    # a path names exactly one place: a new file beside the page of the same slug
    assert ops.save_page(state, "notes/my_page", "three").created
    assert (vault_dir / "notes/My Page.md").read_text() == "two /notes/My Page"
    pages = sorted(p.name for p in vault_dir.rglob("*.md") if ".lore" not in p.parts)
    assert pages == ["My Page.md", "my_page.md"]


def test_save_same_content_is_a_no_op(state: AppState) -> None:
    ops.save_page(state, "a", "same")
    again = ops.save_page(state, "a", "same")
    assert again.unchanged and not again.created


def test_placeholder_promotion_names_file_from_link_text(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "source", "A [[Trailing Slash]] link.\n")
    assert "trailing-slash" in placeholder_slugs(state)
    result = ops.save_page(state, "trailing-slash", "now real")
    assert result.promoted and result.path == "Trailing Slash.md"
    assert (vault_dir / "Trailing Slash.md").is_file()
    assert "trailing-slash" not in placeholder_slugs(state)
    assert ops.read_page(state, "source").links[0].exists
    assert_matches_fresh(state)


def test_new_page_captures_placeholder_links(state: AppState) -> None:
    ops.save_page(state, "a", "[[foo]] and [[foo#Part|the foo]]")
    assert "foo" in placeholder_slugs(state)
    ops.save_page(state, "projects/foo", "found")
    assert "foo" not in placeholder_slugs(state)
    assert [link.slug for link in ops.read_page(state, "a").links] == ["projects/foo"] * 2
    assert_matches_fresh(state)


def test_placeholder_goes_when_last_link_goes(state: AppState) -> None:
    ops.save_page(state, "a", "[[ghost]]")
    ops.save_page(state, "b", "[[ghost]]")
    assert ops.save_page(state, "a", "none").placeholders_removed == []
    assert ops.save_page(state, "b", "none").placeholders_removed == ["ghost"]
    assert "ghost" not in placeholder_slugs(state)
    assert_matches_fresh(state)


def test_placeholder_title_is_the_first_written_link(state: AppState) -> None:
    ops.save_page(state, "b", "[[future PLAN]]")
    ops.save_page(state, "a", "[[Future Plan]]")
    page = ops.read_page(state, "future-plan")
    assert page.is_placeholder and page.title == "Future Plan"
    assert [b.slug for b in page.backlinks] == ["a", "b"]


def test_ambiguous_write_is_refused(state: AppState) -> None:
    ops.save_page(state, "a/x", "one")
    ops.save_page(state, "b/x", "two")
    with pytest.raises(AmbiguousNameError) as err:
        ops.save_page(state, "x", "three")
    assert err.value.candidates == ["a/x.md", "b/x.md"]
    with pytest.raises(AmbiguousNameError):
        ops.delete_page(state, "x")
    with pytest.raises(AmbiguousNameError):
        ops.rename_page(state, "x", "y")
    read = ops.read_page(state, "x")
    assert read.slug == "a/x" and read.alternatives == ["b/x.md"]


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("../escape", UnsafePathError),
        ("notes/../../escape", UnsafePathError),
        ("//server/share/x", UnsafePathError),
        ("..\\escape", UnsafePathError),
        ("%2e%2e/escape", UnsafePathError),
        ("C:\\Windows\\x", UnsafePathError),
        (".lore/lore", UnsafePathError),
        (".git/config", UnsafePathError),
        ("", InvalidNameError),
        ("?!*", InvalidNameError),
        ("a\x00b", InvalidNameError),
        ("bad\ud800", InvalidNameError),
        ("x" * 10_000, InvalidNameError),
    ],
)
def test_bad_names_change_nothing(
    state: AppState, vault_dir: Path, name: str, error: type[LoreError]
) -> None:
    with pytest.raises(error):
        ops.save_page(state, name, "content")
    assert [p for p in vault_dir.rglob("*") if ".lore" not in p.parts] == []


def test_bad_content_is_refused(state: AppState) -> None:
    with pytest.raises(ContentTooLargeError):
        ops.save_page(state, "big", "x" * (state.max_content_bytes + 1))
    with pytest.raises(InvalidArgumentError):
        ops.save_page(state, "nul", "a\x00b")
    with pytest.raises(InvalidArgumentError):
        ops.save_page(state, "sur", "a\udc80b")
    assert len(state.pages) == 0


def test_self_link_and_nested_brackets(state: AppState) -> None:
    ops.save_page(state, "me", "I am [[me]] and [[[[[[deep]] and [[[[")
    page = ops.read_page(state, "me")
    assert [b.slug for b in page.backlinks] == ["me"]
    assert_matches_fresh(state)


# -- delete ---------------------------------------------------------------------------


def test_delete_moves_to_trash_and_leaves_placeholder(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "target", "body")
    ops.save_page(state, "linker", "[[target]]")
    result = ops.delete_page(state, "target")
    assert result.became_placeholder and not (vault_dir / "target.md").exists()
    assert (vault_dir / result.history_path).read_text() == "body"
    assert ops.read_page(state, "target").is_placeholder
    assert_matches_fresh(state)
    ops.delete_page(state, "linker")
    assert "target" not in placeholder_slugs(state)
    with pytest.raises(PageNotFoundError):
        ops.read_page(state, "target")
    assert_matches_fresh(state)


def test_delete_placeholder_or_unknown_fails(state: AppState) -> None:
    ops.save_page(state, "a", "[[ghost]]")
    with pytest.raises(LoreError, match="placeholder"):
        ops.delete_page(state, "ghost")
    with pytest.raises(PageNotFoundError):
        ops.delete_page(state, "nothing")


def test_delete_reresolves_ambiguous_links(state: AppState) -> None:
    ops.save_page(state, "a/x", "one")
    ops.save_page(state, "b/x", "two")
    ops.save_page(state, "a/page", "[[x]]")
    assert ops.read_page(state, "a/page").links[0].slug == "a/x"
    ops.delete_page(state, "a/x")
    assert ops.read_page(state, "a/page").links[0].slug == "b/x"
    assert_matches_fresh(state)


# -- rename ---------------------------------------------------------------------------


def test_rename_rewrites_exactly_the_links_to_it(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "notes/Old Name", "# Top\n^blk\n")
    text = (
        "See [[Old Name]], [[old name|alias]], [[Old Name#Top]], [[Old Name#^blk]],\n"
        "![[notes/Old Name]] and [[Other]].\n"
        "`[[Old Name]]` in code\n"
        "```\n[[Old Name]]\n```\n"
        "| a | [[Old Name\\|cell]] |\n|---|---|\n| b | c |\n"
    )
    ops.save_page(state, "linker", text)
    result = ops.rename_page(state, "Old Name", "New Name")
    assert (result.slug, result.path) == ("notes/new-name", "notes/New Name.md")
    assert result.rewritten == ["linker"] and result.links_rewritten == 6
    expected = (
        "See [[New Name]], [[New Name|alias]], [[New Name#Top]], [[New Name#^blk]],\n"
        "![[notes/New Name]] and [[Other]].\n"
        "`[[Old Name]]` in code\n"
        "```\n[[Old Name]]\n```\n"
        "| a | [[New Name\\|cell]] |\n|---|---|\n| b | c |\n"
    )
    assert (vault_dir / "linker.md").read_text() == expected
    assert not (vault_dir / "notes/Old Name.md").exists()
    assert_matches_fresh(state)


def test_rename_keeps_links_that_still_resolve(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "a/Thing", "x")
    original = "Link [[Thing]] and [[a/Thing]].\n"
    ops.save_page(state, "linker", original)
    result = ops.rename_page(state, "Thing", "b/Thing")
    assert result.slug == "b/thing"
    assert (vault_dir / "linker.md").read_text() == "Link [[Thing]] and [[b/Thing]].\n"
    assert result.links_rewritten == 1
    assert_matches_fresh(state)


def test_rename_writes_shortest_unique_form(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "x/Target", "t")
    ops.save_page(state, "y/Other", "o")
    ops.save_page(state, "linker", "[[Target]]")
    ops.rename_page(state, "Target", "y/Other Two")
    assert (vault_dir / "linker.md").read_text() == "[[Other Two]]"
    ops.save_page(state, "z/Other Two Copy", "c")
    ops.save_page(state, "q/Other Three", "c")
    ops.rename_page(state, "y/Other Two", "w/Other Three")
    assert (vault_dir / "linker.md").read_text() == "[[w/Other Three]]"
    assert_matches_fresh(state)


def test_rename_onto_existing_page_fails(state: AppState) -> None:
    ops.save_page(state, "a", "1")
    ops.save_page(state, "b", "2")
    with pytest.raises(PageExistsError):
        ops.rename_page(state, "a", "B")
    assert sorted(page_slugs(state)) == ["a", "b"]


def test_rename_self_links_and_case_change(state: AppState, vault_dir: Path) -> None:
    ops.save_page(state, "loop", "[[loop]]")
    ops.rename_page(state, "loop", "Loop")
    assert (vault_dir / "Loop.md").read_text() == "[[loop]]"
    ops.rename_page(state, "loop", "Circle")
    # a rewritten link takes the new name as it was given
    assert (vault_dir / "Circle.md").read_text() == "[[Circle]]"
    assert_matches_fresh(state)


def test_rename_into_a_placeholder_slug_promotes(state: AppState) -> None:
    ops.save_page(state, "a", "[[Wanted]]")
    ops.save_page(state, "draft", "text")
    ops.rename_page(state, "draft", "Wanted")
    assert "wanted" in page_slugs(state) and "wanted" not in placeholder_slugs(state)
    assert ops.read_page(state, "a").links[0].exists
    assert_matches_fresh(state)


# -- reading --------------------------------------------------------------------------


def test_unknown_name_suggests_close_slugs(brain: AppState) -> None:
    with pytest.raises(PageNotFoundError) as err:
        ops.read_page(brain, "Link Resolutoin")
    assert "concepts/link-resolution" in err.value.suggestions
    assert "concepts/link-resolution" in str(err.value)


def test_read_placeholder(brain: AppState) -> None:
    page = ops.read_page(brain, "Roadmap")
    assert page.is_placeholder and page.content == "" and page.path is None
    assert {b.slug for b in page.backlinks} == {"open-questions", "concepts/placeholders"}


def test_list_pages_paging_and_folders(brain: AppState) -> None:
    first = ops.list_pages(brain, limit=5)
    assert first.total == 18 and len(first.pages) == 5 and first.next_offset == 5
    everything = ops.list_pages(brain, include_placeholders=True, limit=100)
    assert everything.total == 19 and everything.next_offset is None
    slugs = [p.slug for p in everything.pages]
    assert slugs == sorted(slugs)
    tools = ops.list_pages(brain, folder="tools")
    assert tools.pages and all(p.slug.startswith("tools/") for p in tools.pages)


def test_list_pages_follows_saves_deletes_and_renames(brain: AppState) -> None:
    def listed(**options: Any) -> list[tuple[str, bool]]:
        listing = ops.list_pages(brain, limit=100, **options)
        assert listing.total == len(listing.pages)
        return [(p.slug, p.is_placeholder) for p in listing.pages]

    before = listed(include_placeholders=True)  # the listing exists; now change the vault
    ops.save_page(brain, "tools/Alpha Tool", "Links [[tools/Beta Idea]].")
    ops.delete_page(brain, "tools/alpha-tool")
    ops.save_page(brain, "tools/Gamma", "[[tools/Delta]]")
    ops.rename_page(brain, "tools/gamma", "tools/Epsilon")
    after = listed(include_placeholders=True)
    assert after == sorted([*before, ("tools/delta", True), ("tools/epsilon", False)])
    in_tools = [slug for slug, ph in after if slug.startswith("tools/") and not ph]
    assert listed(folder="tools") == [(slug, False) for slug in in_tools]
    assert [slug for slug, _ in listed()] == sorted(page_slugs(brain))


def test_search_ranks_titles_and_finds_cjk(brain: AppState) -> None:
    hits = ops.search(brain, "placeholders").hits
    assert hits[0].slug == "concepts/placeholders"
    assert "**" in hits[0].snippet
    assert "concepts/persistence" in {h.slug for h in ops.search(brain, "記憶").hits}
    assert "concepts/persistence" in {h.slug for h in ops.search(brain, "消え").hits}
    assert ops.search(brain, "placehol").hits, "the last term matches as a prefix"


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "AND",
        "OR NOT",
        "NEAR(a b)",
        "title:x",
        "a*",
        "^start",
        "(((",
        "-",
        "'",
        '""',
        "a AND OR b",
        "\x00",
        "*",
        "col:",
        "{x}",
        "[[x]]",
    ],
)
def test_search_never_raises_on_fts_syntax(brain: AppState, query: str) -> None:
    ops.search(brain, query)


def test_search_titles_order(brain: AppState) -> None:
    found = ops.search_titles(brain, "Slugs").matches
    assert found[0].slug == "concepts/slugs" and found[0].match == "exact"
    assert ops.search_titles(brain, "slug").matches[0].match == "prefix"
    partial = ops.search_titles(brain, "resol").matches
    assert partial[0].slug == "concepts/link-resolution"
    assert partial[0].match in ("prefix", "substring")
    fuzzy = ops.search_titles(brain, "persistance").matches
    assert fuzzy and fuzzy[0].slug == "concepts/persistence" and fuzzy[0].match == "fuzzy"
    roadmap = ops.search_titles(brain, "roadmap").matches
    assert roadmap[0].is_placeholder


def test_backlinks_with_lines_and_unlinked_mentions(state: AppState) -> None:
    ops.save_page(state, "Graph", "the page")
    ops.save_page(state, "a", "intro\nsee [[Graph]] here\n")
    ops.save_page(state, "b", "The graph is big.\n`graph` in code\nparagraphs only\n")
    result = ops.get_backlinks(state, "graph", include_unlinked=True)
    assert [(b.slug, b.line, b.text) for b in result.linked] == [("a", 2, "see [[Graph]] here")]
    assert result.unlinked is not None
    assert [(b.slug, b.line) for b in result.unlinked] == [("b", 1)]
    assert ops.get_backlinks(state, "graph").unlinked is None


def test_graph_neighbourhood(state: AppState) -> None:
    ops.save_page(state, "a", "[[b]]")
    ops.save_page(state, "b", "[[c]]")
    ops.save_page(state, "c", "end")
    one = ops.get_graph(state, "a", depth=1).neighbourhood
    assert one is not None and [n.slug for n in one.nodes] == ["a", "b"]
    two = ops.get_graph(state, "a", depth=2).neighbourhood
    assert two is not None
    assert [(e.source, e.target) for e in two.edges] == [("a", "b"), ("b", "c")]
    with pytest.raises(InvalidArgumentError):
        ops.get_graph(state, "a", depth=4)


def test_read_only_state_refuses_writes(vault_dir: Path) -> None:
    write(vault_dir, "a.md", "x")
    st = ops.open_vault(vault_dir, read_only=True)
    assert ops.read_page(st, "a").content == "x"
    with pytest.raises(VaultError, match="read-only"):
        ops.save_page(st, "a", "y")
    st.close()


def test_a_reader_busy_elsewhere_leaves_the_next_chunks_to_this_process(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the workers have not read the next chunk, this process reads the first
    chunk none was given rather than wait; the pages still come in order, as one
    process reads them."""
    from lore_mcp.vault_ops import readers

    monkeypatch.setattr(readers, "READ_CHUNK", 3)
    monkeypatch.setattr(readers, "AHEAD_CHUNKS", 2)
    rels = [f"f{i % 4}/Page {i:02}.md" for i in range(40)]
    for i, rel in enumerate(rels):
        write(vault_dir, rel, f"# Page {i}\n\n[[Page {(i + 1) % 40:02}]] #tag{i % 3}\n")
    released = threading.Event()  # the one worker is busy until this process reads
    here: list[str] = []
    original = readers._read_chunk

    def reading(root: Path, chunk: Any, others: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            here.extend(rel for rel, _ in chunk)
            released.set()
        return original(root, chunk, others)

    monkeypatch.setattr(readers, "_read_chunk", reading)
    chunks: list[list[tuple[str, Seen | None]]] = [
        [(rel, None) for rel in rels[i : i + 3]] for i in range(0, len(rels), 3)
    ]
    with ThreadPoolExecutor(1) as pool:
        pool.submit(released.wait, 10)  # (were it never set, the test would fail, not hang)
        found = list(readers._shared(pool, 1, chunks, vault_dir, None))
    assert here and set(here) < set(rels)  # this process read some chunks, the worker the rest
    assert [rel for rel, _ in found] == rels
    alone = [read_page_file(vault_dir, rel, None) for rel in rels]
    assert [page for _, page in found] == alone


@pytest.mark.slow
def test_a_pass_read_by_worker_processes_equals_one_read_here(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lore_mcp.vault_ops import readers

    monkeypatch.setattr(readers, "READER_PASS_FILES", 500)  # workers from 500 files, not 20,000
    monkeypatch.setattr(readers, "READ_CHUNK", 10)  # many chunks, few ahead: this process
    monkeypatch.setattr(readers, "AHEAD_CHUNKS", 1)  # reads some while the worker starts
    count = 550
    for i in range(count):
        links = f"[[Page {i * 7 % count}]] [[Missing {i % 13}]] [[f{i % 3}/Page {i // 2}]]"
        write(vault_dir, f"f{i % 7}/Page {i}.md", f"# Page {i}\n\n{links}\n")
    opened = ops.open_vault(vault_dir, readers=1)
    try:
        assert ops.read_page(opened, "Missing 3").is_placeholder
        assert snapshot(opened) == fresh_snapshot(vault_dir)  # the fresh one reads here
    finally:
        opened.close()
