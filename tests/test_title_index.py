"""The names behind search_titles (each page's slug, its last segment, path and title, in SQL),
against a look at every entry; and search_titles itself on real vaults."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write
from lore_mcp import vault_ops as ops
from lore_mcp.index import Index, PageRow, search_text
from lore_mcp.slugs import path_key, slug_from_path
from lore_mcp.vault_ops import AppState

_SLUG = st.text(alphabet="ab/-é記", min_size=1, max_size=6)
# A placeholder's title is its link's target as written, NUL included.
_TITLE = st.text(alphabet="aAb -é記\0", min_size=1, max_size=6)
_PART = st.text(alphabet="ab/-é 記\0", min_size=1, max_size=4)


def _keys(key: str, title: str) -> set[str]:
    slug = slug_from_path(key)
    return {slug, slug.rpartition("/")[2], path_key(key), title.lower()} - {""}


def _scan(entries: dict[str, str], matches: str, part: str, limit: int) -> list[str]:
    """What the names table must answer, from a look at every entry."""
    test = {
        "named": lambda key: key == part,
        "starting": lambda key: key.startswith(part),
        "containing": lambda key: part in key,
    }[matches]
    found = [key for key, title in entries.items() if any(map(test, _keys(key, title)))]
    return sorted(found, key=lambda key: (slug_from_path(key) or key, key))[:limit]


def _ask(index: Index, matches: str, part: str, limit: int) -> list[str]:
    table = index.pages
    ask = {
        "named": table.named,
        "starting": table.named_starting,
        "containing": table.named_containing,
    }[matches]
    return ask(part, limit)


@contextmanager
def _index(entries: dict[str, str]) -> Iterator[Index]:
    with tempfile.TemporaryDirectory() as folder:
        index = Index(Path(folder) / "lore.db")
        try:
            with index.write():
                index.put_pages(
                    [(PageRow(s, t, f"{s}.md"), search_text(t, (), "")) for s, t in entries.items()]
                )
            yield index
        finally:
            index.close()


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(_SLUG, _TITLE, max_size=14),
    st.sampled_from(["named", "starting", "containing"]),
    _PART,
    st.integers(min_value=1, max_value=6),
)
@pytest.mark.slow
def test_names_find_what_a_scan_finds(
    entries: dict[str, str], matches: str, part: str, limit: int
) -> None:
    with _index(entries) as index:
        assert _ask(index, matches, part, limit) == _scan(entries, matches, part, limit)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(_SLUG, _TITLE, max_size=10),
    st.lists(st.tuples(st.booleans(), _SLUG, _TITLE), max_size=12),
    _PART,
)
def test_names_follow_additions_changes_and_removals(
    entries: dict[str, str], changes: list[tuple[bool, str, str]], part: str
) -> None:
    with _index(entries) as index:
        for add, slug, title in changes:
            with index.write():
                if add:
                    index.put_pages(
                        [(PageRow(slug, title, f"{slug}.md"), search_text(title, (), ""))]
                    )
                    entries[slug] = title
                else:
                    index.delete_pages([slug])
                    entries.pop(slug, None)
        for matches in ("named", "starting", "containing"):
            for limit in (1, 3, 20):
                assert _ask(index, matches, part, limit) == _scan(entries, matches, part, limit)


def test_many_matches_give_the_first_by_slug() -> None:
    entries = {f"f{i % 7}/item-{i:04d}": f"item {i}" for i in range(3000)}
    with _index(entries) as index:
        for part in ("item", "item-0", "item 2"):
            assert _ask(index, "starting", part, 20) == _scan(entries, "starting", part, 20)
        for part in ("tem-29", "m 29", "f3/", "item\0"):
            assert _ask(index, "containing", part, 20) == _scan(entries, "containing", part, 20)


# -- search_titles ---------------------------------------------------------------------


def _titles(vault: AppState, query: str, limit: int = 20) -> list[tuple[str, str]]:
    return [(m.slug, m.match) for m in ops.search_titles(vault, query, limit).matches]


def test_search_titles_orders_exact_then_prefix_then_substring_each_by_slug(
    vault_dir: Path,
) -> None:
    for rel in (
        "z/Alpha.md",  # exact by its last segment
        "Alphabet.md",  # prefix of the slug
        "b/Alphanumeric.md",  # prefix of the last segment
        "c/My Alpha.md",  # substring
        "The Alpha Notes.md",  # substring of the title
        "Gamma.md",  # no match
    ):
        write(vault_dir, rel, "[[Alpha Centauri]]\n")  # a placeholder: prefix of its title
    state = ops.open_vault(vault_dir)
    try:
        assert _titles(state, "Alpha") == [
            ("z/alpha", "exact"),
            ("alpha-centauri", "prefix"),
            ("alphabet", "prefix"),
            ("b/alphanumeric", "prefix"),
            ("c/my-alpha", "substring"),
            ("the-alpha-notes", "substring"),
        ]
        assert _titles(state, "alpha", 2) == [("z/alpha", "exact"), ("alpha-centauri", "prefix")]
        assert _titles(state, "The Alpha Notes") == [("the-alpha-notes", "exact")]
        assert _titles(state, "GAMMA") == [("gamma", "exact")]
        assert ops.search_titles(state, "alpha centauri").matches[0].is_placeholder
        # Close spellings only when nothing else matched (was: to fill up to the limit).
        assert _titles(state, "gamna") == [("gamma", "fuzzy")]
        assert _titles(state, "zzzz") == []
        assert _titles(state, "alpha\0")[0] == ("z/alpha", "exact")  # NUL reaches no FTS query
    finally:
        state.close()


def _queries(vault: AppState) -> dict[str, list[tuple[str, str]]]:
    return {q: _titles(vault, q) for q in ("alpha", "beta", "al", "ph", "notes", "alpah", "gam")}


def test_search_titles_follows_saves_renames_and_deletes(vault_dir: Path) -> None:
    state = ops.open_vault(vault_dir)
    try:
        ops.save_page(state, "a/Alpha", "[[Alphabet]]")
        ops.save_page(state, "Beta", "x")
        assert _titles(state, "alpha") == [("a/alpha", "exact"), ("alphabet", "prefix")]
        ops.save_page(state, "Alphabet", "now a page")  # the placeholder promoted
        ops.rename_page(state, "Beta", "notes/Alpha Beta")  # a new title
        ops.delete_page(state, "a/Alpha")
        assert _titles(state, "alpha") == [
            ("alphabet", "prefix"),
            ("notes/alpha-beta", "prefix"),
        ]
        assert _titles(state, "beta") == [("notes/alpha-beta", "substring")]
        ops.save_page(state, "Gamma", "[[Alpha]] [[notes/Alpha Beta]]")  # a placeholder again
        live = _queries(state)
    finally:
        state.close()
    fresh = ops.open_vault(vault_dir)
    try:
        assert _queries(fresh) == live
    finally:
        fresh.close()
