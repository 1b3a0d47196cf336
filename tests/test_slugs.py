"""Slugs, titles and resolution rules as plain functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore_mcp.errors import InvalidNameError, UnsafePathError
from lore_mcp.slugs import (
    CLOSE_CUTOFF,
    Aliases,
    Key,
    SlugSet,
    file_path_for,
    name_key,
    resolve,
    slug_from_path,
    slugify,
    suffixes,
    target_key,
    title_from_path,
)


@pytest.mark.parametrize(
    ("segment", "slug"),
    [
        ("My Page", "my-page"),
        ("  under_score  ", "under-score"),
        ("a -- b", "a-b"),
        ("--edge--", "edge"),
        ("What? (draft) #2!", "what-(draft)-2!"),
        ("C++", "c++"),
        ("v1.1.0", "v1.1.0"),
        ("🚀 Launch", "🚀-launch"),
        ("Mr.", "mr"),
        ("Ünïcode Ω", "ünïcode-ω"),
        ("記憶の話", "記憶の話"),
        ("नमस्ते दुनिया", "नमस्ते-दुनिया"),
        ("!!!", ""),
        ("Tab\there~", "tab-here~"),
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
    pages = SlugSet(["foo", "a/bar", "b/bar", "a/b/bar", "x/long/only"])
    assert resolve(pages, Aliases(), Key("foo", False), "elsewhere") == ("foo", False)
    assert resolve(pages, Aliases(), Key("only", False), "elsewhere") == ("x/long/only", False)
    assert resolve(pages, Aliases(), Key("bar", False), "b/page") == ("b/bar", True)
    assert pages.matches(Key("bar", False)) == ["a/b/bar", "a/bar", "b/bar"]
    assert resolve(pages, Aliases(), Key("bar", False), "elsewhere") == ("a/bar", True)
    assert pages.matches(Key("b/bar", False)) == ["b/bar"]
    assert resolve(pages, Aliases(), Key("b/bar", False), "elsewhere") == ("b/bar", False)
    # No match: the link leads to its own path (a placeholder there).
    assert pages.matches(Key("bar", True)) == []
    assert resolve(pages, Aliases(), Key("bar", True), "elsewhere") == ("bar", False)
    assert pages.matches(Key("nothing", False)) == []
    assert resolve(pages, Aliases(), Key("a/nothing", False), "elsewhere") == ("a/nothing", False)


def test_close_names_follow_changes_before_and_after_the_first_lookup() -> None:
    index = SlugSet(["a/gardening", "b/gardening", "cooking"])
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
    """Names added and removed after the first lookup give the same close names as a
    set built afresh from what is left, whatever the order they came in."""
    index = SlugSet()
    index.close_names(word, 5)
    for adding, folder, name in changes:
        (index.add if adding else index.remove)(folder + name)
    fresh = SlugSet(sorted(index, reverse=True))
    for count in (1, 2, 50):
        assert index.close_names(word, count) == fresh.close_names(word, count)


def test_close_names_are_not_crowded_out_by_names_too_long_to_match() -> None:
    index = SlugSet([f"gardne-and-a-long-tail-{i}" for i in range(70)] + ["notes/garden"])
    assert _names(index.close_names("gardne", 3)) == ["garden"]


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
    st.lists(st.text(alphabet="abcdeé-", min_size=1, max_size=80), max_size=12),
    st.integers(min_value=1, max_value=5),
)
def test_close_names_rate_by_the_longest_common_subsequence(
    word: str, names: list[str], count: int
) -> None:
    """Rated 0-100 by twice the longest common subsequence over both lengths; at least
    CLOSE_CUTOFF alike; the closest first, ties by name, the same way every time."""
    similar = {(200 * _common_subsequence(word, n) / (len(word) + len(n)), n) for n in names}
    expected = sorted((p for p in similar if p[0] >= CLOSE_CUTOFF - 1e-9), reverse=True)[:count]
    found = SlugSet(names).close_names(word, count)
    assert [name for _, name in found] == [name for _, name in expected]
    assert [score for score, _ in found] == pytest.approx([score for score, _ in expected])


def test_close_names_forgive_a_typo_or_two() -> None:
    names = SlugSet(["gardening", "gardener", "garden-party", "cooking", "a/kitchen"])
    assert _names(names.close_names("gardnening", 2)) == ["gardening", "gardener"]
    assert _names(names.close_names("kitchne", 5)) == ["kitchen"]
    assert names.close_names("kitchen", 1) == [(100.0, "kitchen")]
    assert names.close_names("zzz", 5) == []


def test_names_accept_titles_paths_and_slugs() -> None:
    # A bare name may be found in any folder; a path names exactly one place.
    assert name_key("Acephale Pipeline") == Key("acephale-pipeline", False)
    assert name_key("acephale/acephale-pipeline.md") == Key("acephale/acephale-pipeline", True)
    assert name_key("./notes/x") == Key("notes/x", True)
    assert name_key("/x") == Key("x", True)
    assert name_key("Q: Why") == Key("q-why", False)  # a colon is a name, not a drive


@pytest.mark.parametrize(
    "name",
    [
        "../x",
        "a/../../x",
        "..\\x",
        "%2E%2E/x",
        "D:/x",
        "D:\\x",
        "\\\\srv\\x",
        ".hidden/x",
        "a/.git/x",
    ],
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
