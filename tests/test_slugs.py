"""Slugs, titles, names and Obsidian's resolution rules as plain functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore_mcp.errors import InvalidNameError, UnsafePathError
from lore_mcp.pagesets import CLOSE_CUTOFF, PageSet, Resolution, resolve
from lore_mcp.slugs import (
    Key,
    new_file_path,
    parse_name,
    slug_from_path,
    slugify,
    slugify_each,
    suffixes,
    target_key,
    title_from_path,
)


def name_key(name: str) -> Key:
    return parse_name(name).key


def file_path_for(name: str) -> str:
    return new_file_path(parse_name(name))


class _Titles(PageSet):
    """A page set answering close names by title, as the old slug set did."""

    def close_names(self, word: str, count: int) -> list[tuple[float, str]]:
        return self.close_titles(word, count)

    def named(self, title: str) -> list[str]:
        return self.with_slug_title(title)


def _pages(slugs: list[str]) -> _Titles:
    return _Titles(f"{slug}.md" for slug in slugs)


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


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=12))
def test_slugify_takes_a_shorter_way_for_ascii_to_the_same_slug(segment: str) -> None:
    assert slugify(segment) == slugify_each(segment)


def test_slug_and_title_from_path() -> None:
    assert slug_from_path("notes/My Page.md") == "notes/my-page"
    assert slug_from_path("Ünïcode Ω.md") == "ünïcode-ω"
    assert slug_from_path("a/!!/b.md") == "a/b"
    assert title_from_path("notes/My Page.md") == "My Page"


def test_target_key_forms() -> None:
    assert target_key("Folder\\My Page.md") == Key("folder/my page", False, "folder/my-page")
    assert target_key("/Root Page") == Key("root page", True, "root-page")
    assert target_key("./sib", "a/b/page.md") == Key("a/b/sib", True, "a/b/sib")
    assert target_key("../Up", "a/b/page.md") == Key("a/up", True, "a/up")
    assert target_key("../../../x", "a/page.md") is None
    assert target_key("   ") is None
    assert target_key("Q: Why?") == Key("q: why?", False, "q-why")
    assert target_key("x.md.md") == Key("x", False, "x")  # never a page's own path


def test_suffixes() -> None:
    assert suffixes("a/b/c") == ["a/b/c", "b/c", "c"]


def test_resolution_rules() -> None:
    pages = PageSet(
        ["foo.md", "a/bar.md", "b/bar.md", "a/b/bar.md", "x/long/only.md", "My Page.md"]
    )

    def where(target: str, source: str | None = "elsewhere.md") -> Resolution:
        key = target_key(target, source)
        assert key is not None
        return resolve(pages, key, source)

    assert where("foo") == Resolution("foo.md")
    assert where("FOO") == Resolution("foo.md")  # case is ignored
    assert where("only") == Resolution("x/long/only.md")
    assert where("bar", "b/page.md") == Resolution("b/bar.md", ambiguous=True)  # its own folder
    assert where("bar", "a/b/c/page.md") == Resolution("a/bar.md", ambiguous=True)  # shortest
    assert pages.ending("bar") == ["a/b/bar.md", "a/bar.md", "b/bar.md"]
    assert where("b/bar") == Resolution("b/bar.md")  # the exact path wins over a/b/bar.md
    assert where("/bar") == Resolution("bar", placeholder=True)  # rooted: no such file
    assert where("a/nothing") == Resolution("a/nothing", placeholder=True)
    assert where("my_page") == Resolution("My Page.md", loose=True)  # only its slug form finds it


def test_the_shortest_path_breaks_a_tie_not_the_fewest_folders() -> None:
    pages = PageSet(["zzzz/Note.md", "a/b/Note.md"])
    key = target_key("Note")
    assert key is not None
    assert resolve(pages, key, "top.md") == Resolution("a/b/Note.md", ambiguous=True)


def test_handles_are_slugs_where_no_other_file_shares_them() -> None:
    pages = PageSet(["notes/My Page.md", "My Page.md", "my-page.md", "C.md", "C++.md"])
    assert pages.handle("notes/My Page.md") == "notes/my-page"
    assert pages.handle("My Page.md") == "My Page.md"
    assert pages.handle("my-page.md") == "my-page.md"
    assert (pages.handle("C.md"), pages.handle("C++.md")) == ("c", "c++")


def test_close_names_follow_changes_before_and_after_the_first_lookup() -> None:
    index = _pages(["a/gardening", "b/gardening", "cooking"])
    assert _names(index.close_names("gardenin", 3)) == ["gardening"]
    index.add("c/gardener.md")
    index.remove("a/gardening.md")
    assert _names(index.close_names("gardenin", 3)) == ["gardening", "gardener"]
    index.remove("b/gardening.md")  # the last page of that name: the name goes
    index.add("cookery.md")
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
    index = _Titles()
    index.close_names(word, 5)
    for adding, folder, name in changes:
        (index.add if adding else index.remove)(f"{folder}{name}.md")
    fresh = _Titles(sorted(index, reverse=True))
    for count in (1, 2, 50):
        assert index.close_names(word, count) == fresh.close_names(word, count)


def test_close_names_are_not_crowded_out_by_names_too_long_to_match() -> None:
    index = _pages([f"gardne-and-a-long-tail-{i}" for i in range(70)] + ["notes/garden"])
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
    names = [n for n in names if slugify(n) == n]  # close names are slugs' last segments
    similar = {(score, n) for score, n in similar if n in names}
    found = _pages(names).close_names(word, count)

    expected = sorted((p for p in similar if p[0] >= CLOSE_CUTOFF - 1e-9), reverse=True)[:count]
    assert [name for _, name in found] == [name for _, name in expected]
    assert [score for score, _ in found] == pytest.approx([score for score, _ in expected])


def test_close_names_forgive_a_typo_or_two() -> None:
    names = _pages(["gardening", "gardener", "garden-party", "cooking", "a/kitchen"])
    assert _names(names.close_names("gardnening", 2)) == ["gardening", "gardener"]
    assert _names(names.close_names("kitchne", 5)) == ["kitchen"]
    assert names.close_names("kitchen", 1) == [(100.0, "kitchen")]
    assert names.close_names("zzz", 5) == []


def test_names_accept_titles_paths_and_slugs() -> None:
    # A bare name may be found in any folder; a path names exactly one place.
    assert name_key("Acephale Pipeline") == Key("acephale pipeline", False, "acephale-pipeline")
    assert name_key("acephale/acephale-pipeline.md") == Key(
        "acephale/acephale-pipeline", True, "acephale/acephale-pipeline"
    )
    assert name_key("./notes/x") == Key("notes/x", True, "notes/x")
    assert name_key("/x") == Key("x", True, "x")
    assert name_key("Q: Why") == Key("q: why", False, "q-why")  # a colon is a name, not a drive
    assert parse_name("!!!").text == "!!!"  # an existing file may have any name


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


@pytest.mark.parametrize("name", ["", "   ", "./.", "a\x00", "x" * 1001])
def test_invalid_names(name: str) -> None:
    with pytest.raises(InvalidNameError):
        name_key(name)


def test_a_new_file_keeps_the_spelling_and_refuses_what_obsidian_refuses() -> None:
    assert file_path_for("notes/My Page") == "notes/My Page.md"
    assert file_path_for("Page.md") == "Page.md"
    assert file_path_for("C++ (draft) v1.1.0") == "C++ (draft) v1.1.0.md"
    for bad, suggestion in [("What: a <test>?", "What a test"), ("C#", "C"), ("x|y", "xy")]:
        with pytest.raises(InvalidNameError, match=f"such as '{suggestion}'"):
            file_path_for(bad)
    for bad in ["ok/???/x", "y" * 300, "!!!", "a/---"]:
        with pytest.raises(InvalidNameError):
            file_path_for(bad)


def test_a_new_name_holds_up_on_every_file_system() -> None:
    """No control characters and no Windows device names (any case, any extension) in
    any part; the error suggests the name with that part changed."""
    cases = [
        ("x\ny", "such as 'x y'"),
        ("a/tab\there/b", "such as 'a/tab here/b'"),
        ("\b.x", "such as 'x'"),
        ("CON", "such as 'CON page'"),
        ("nul.txt", "such as 'nul page.txt'"),
        ("notes/Aux", "such as 'notes/Aux page'"),
        ("com1/x", "such as 'com1 page/x'"),
        ("LPT¹", "such as 'LPT¹ page'"),
        ("prn .tar.gz", "such as 'prn page .tar.gz'"),
    ]
    for bad, suggestion in cases:
        with pytest.raises(InvalidNameError, match=f"{suggestion}"):
            file_path_for(bad)
    for fine in ("CONSOLE", "com10", "nul page", "Auxiliary.txt", "lptx", "notes/con-fig"):
        assert file_path_for(fine) == f"{fine}.md"
