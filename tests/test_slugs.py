"""Slugs, titles and resolution rules as plain functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore_mcp.errors import InvalidNameError, UnsafePathError
from lore_mcp.slugs import (
    Key,
    SlugIndex,
    closest,
    file_path_for,
    name_key,
    slug_from_path,
    slugify,
    suffixes,
    target_key,
    title_from_path,
)
from lore_mcp.slugs import _comparable_lengths as comparable_lengths


@pytest.mark.parametrize(
    ("segment", "slug"),
    [
        ("My Page", "my-page"),
        ("  under_score  ", "under-score"),
        ("a -- b", "a-b"),
        ("--edge--", "edge"),
        ("What? (draft) #2!", "what-draft-2"),
        ("Ünïcode Ω", "ünïcode-ω"),
        ("記憶の話", "記憶の話"),
        ("नमस्ते दुनिया", "नमस्ते-दुनिया"),
        ("!!!", ""),
        ("Tab\there~", "tabhere"),
        ("x__y  z", "x-y-z"),
    ],
)
def test_slugify(segment: str, slug: str) -> None:
    assert slugify(segment) == slug


def test_slug_and_title_from_path() -> None:
    assert slug_from_path("notes/My Page.md") == "notes/my-page"
    assert slug_from_path("Ünïcode Ω.md") == "ünïcode-ω"
    assert slug_from_path("a/!!/b.md") == "a/b"
    assert title_from_path("notes/My Page.md") == "My Page"


def test_target_key_forms() -> None:
    assert target_key("Folder\\My Page.md") == Key("folder/my-page", exact=False)
    assert target_key("/Root Page") == Key("root-page", exact=True)
    assert target_key("./sib", "a/b/page") == Key("a/b/sib", exact=True)
    assert target_key("../up", "a/b/page") == Key("a/up", exact=True)
    assert target_key("../../../x", "a/page") is None
    assert target_key("   ") is None


def test_suffixes() -> None:
    assert suffixes("a/b/c") == ["a/b/c", "b/c", "c"]


def test_resolution_rules() -> None:
    index = SlugIndex(["foo", "a/bar", "b/bar", "a/b/bar", "x/long/only"])
    assert index.resolve(Key("foo", False)).slug == "foo"
    assert index.resolve(Key("only", False)).slug == "x/long/only"
    own = index.resolve(Key("bar", False), source_slug="b/page")
    assert own.slug == "b/bar" and own.ambiguous
    assert own.candidates == ("a/b/bar", "a/bar", "b/bar")
    shortest = index.resolve(Key("bar", False), source_slug="elsewhere")
    assert shortest.slug == "a/bar"
    assert index.resolve(Key("b/bar", False)).slug == "b/bar"
    assert index.resolve(Key("bar", True)).slug is None
    assert index.resolve(Key("nothing", False)).slug is None


def test_close_names_follow_changes_before_and_after_the_first_lookup() -> None:
    index = SlugIndex(["a/gardening", "b/gardening", "cooking"])
    assert _names(index.close_names("gardenin", 3)) == ["gardening"]
    index.add("c/gardener")
    index.remove("a/gardening")
    assert _names(index.close_names("gardenin", 3)) == ["gardening", "gardener"]
    index.remove("b/gardening")  # the last page of that name: the name goes
    index.add("cookery")
    assert _names(index.close_names("gardenin", 3)) == ["gardener"]
    assert _names(index.close_names("cookin", 3)) == ["cooking", "cookery"]
    assert index.named("gardening") == []


_SPELLINGS = ["garden", "gardens", "gardener", "gardening", "harden", "warden", "gard", "den"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(["", "a/", "b/"]), st.sampled_from(_SPELLINGS)),
        max_size=40,
    ),
    st.sampled_from(["gardn", "garden", "wardens", "gardenin", "hardening"]),
)
def test_close_names_kept_in_step_match_a_fresh_index(
    changes: list[tuple[bool, str, str]], word: str
) -> None:
    """Names added and removed after the trigram index was built give the same close
    names as an index built afresh from what is left (fewer names than the pool, so
    no tie decides who is rated)."""
    index = SlugIndex()
    index.close_names(word, 5)  # the trigram index now exists and is kept in step
    for adding, folder, name in changes:
        (index.add if adding else index.remove)(folder + name)
    fresh = SlugIndex(index)
    assert index.close_names(word, 50) == fresh.close_names(word, 50)


def test_close_names_are_not_crowded_out_by_names_too_long_to_match() -> None:
    # Seventy long names share six of the typo's seven trigrams, the right one three; a
    # name three times the typo's length can never be rated 0.6 alike, so only the
    # right one is weighed.
    index = SlugIndex([f"gardne-and-a-long-tail-{i}" for i in range(70)] + ["notes/garden"])
    assert _names(index.close_names("gardne", 3)) == ["garden"]


@pytest.mark.parametrize("cutoff", [0.3, 0.6, 0.75, 0.9, 1.0])
def test_comparable_lengths_are_exactly_the_lengths_that_can_reach_the_cutoff(
    cutoff: float,
) -> None:
    for size in range(81):
        reachable = [n for n in range(1, 8 * size + 2) if 2 * min(size, n) >= cutoff * (size + n)]
        shortest, longest = comparable_lengths(size, cutoff)
        assert list(range(shortest, longest + 1)) == reachable, size


def _names(rated: list[tuple[float, str]]) -> list[str]:
    assert rated == sorted(rated, reverse=True)
    return [name for _, name in rated]


def _common_subsequence(a: str, b: str) -> int:
    """The textbook dynamic-programming table, row by row."""
    above = [0] * (len(b) + 1)
    for letter in a:
        row = [0]
        for j, other in enumerate(b):
            row.append(above[j] + 1 if letter == other else max(above[j + 1], row[j]))
        above = row
    return above[-1]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="abcdeé-", max_size=80),
    st.lists(st.text(alphabet="abcdeé-", max_size=80), max_size=12),
    st.integers(min_value=1, max_value=5),
    st.sampled_from([0.0, 0.6, 0.9]),
)
def test_closest_rates_by_the_longest_common_subsequence(
    word: str, names: list[str], count: int, cutoff: float
) -> None:
    similar = [(2 * _common_subsequence(word, n) / (len(word) + len(n)), n) for n in names if n]
    expected = sorted((pair for pair in similar if pair[0] >= cutoff), reverse=True)[:count]
    assert closest(word, names, count, cutoff) == expected


def test_closest_forgives_a_typo_or_two() -> None:
    names = ["gardening", "gardener", "garden-party", "cooking", "kitchen"]
    assert _names(closest("gardnening", names, 2)) == ["gardening", "gardener"]
    assert _names(closest("kitchne", names, 5)) == ["kitchen"]
    assert closest("kitchen", names, 1) == [(1.0, "kitchen")]
    assert closest("zzz", names, 5) == []


def test_names_accept_titles_paths_and_slugs() -> None:
    assert name_key("Acephale Pipeline") == Key("acephale-pipeline", False)
    assert name_key("acephale/acephale-pipeline.md") == Key("acephale/acephale-pipeline", False)
    assert name_key("./notes/x") == Key("notes/x", False)


@pytest.mark.parametrize(
    "name", ["../x", "a/../../x", "/abs", "..\\x", "%2E%2E/x", "D:/x", ".hidden/x", "a/.git/x"]
)
def test_unsafe_names(name: str) -> None:
    with pytest.raises(UnsafePathError):
        name_key(name)


@pytest.mark.parametrize("name", ["", "   ", "***", "a\x00", "x" * 1001])
def test_invalid_names(name: str) -> None:
    with pytest.raises(InvalidNameError):
        name_key(name)


def test_file_path_keeps_spelling_and_drops_unportable_characters() -> None:
    assert file_path_for("notes/My Page") == "notes/My Page.md"
    assert file_path_for("What: a <test>?") == "What a test.md"
    assert file_path_for("Page.md") == "Page.md"
    with pytest.raises(InvalidNameError):
        file_path_for("ok/???/x")
    with pytest.raises(InvalidNameError):
        file_path_for("y" * 300)
