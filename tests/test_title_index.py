"""The title index behind search_titles and list_pages, against a look at every entry."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lore_mcp.title_index import EXACT, PREFIX, SUBSTRING, TitleIndex

_TEXT = st.text(alphabet="ab/-é 記\0", max_size=6)
_NAME = st.text(alphabet="ab/-é 記\0", min_size=1, max_size=4)


def _by_scan(entries: dict[str, str], wanted: str, text: str, limit: int) -> list[tuple[str, int]]:
    """What `TitleIndex.ranked` must return, from a look at every entry."""
    found = []
    for slug, title in entries.items():
        last = slug.rpartition("/")[2]
        if wanted in (slug, last) or text == title:
            found.append((EXACT, slug))
        elif last.startswith(wanted) or title.startswith(text) or slug.startswith(wanted):
            found.append((PREFIX, slug))
        elif wanted in slug or text in title:
            found.append((SUBSTRING, slug))
    return [(slug, kind) for kind, slug in sorted(found)[:limit]]


@settings(max_examples=800, deadline=None)
@given(
    st.dictionaries(_TEXT, _TEXT, max_size=14), _NAME, _NAME, st.integers(min_value=1, max_value=6)
)
def test_ranked_finds_what_a_scan_finds(
    entries: dict[str, str], wanted: str, text: str, limit: int
) -> None:
    index = TitleIndex(entries.items())
    assert index.ranked(wanted, text, limit) == _by_scan(entries, wanted, text, limit)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_TEXT, _TEXT, max_size=10),
    st.lists(st.tuples(st.booleans(), _TEXT, _TEXT), max_size=12),
    _NAME,
    _NAME,
)
def test_ranked_follows_additions_and_removals(
    entries: dict[str, str],
    changes: list[tuple[bool, str, str]],
    wanted: str,
    text: str,
) -> None:
    index = TitleIndex(entries.items())
    index.ranked(wanted, text, 100)  # the substring lookup is made, and must follow changes
    for add, slug, title in changes:
        if add:
            index.add(slug, title)
            entries[slug] = title
        else:
            index.remove(slug)
            entries.pop(slug, None)
    assert len(index) == len(entries)
    for limit in (1, 3, 20):
        assert index.ranked(wanted, text, limit) == _by_scan(entries, wanted, text, limit)


def test_ranked_orders_exact_then_prefix_then_substring_each_by_slug() -> None:
    entries = {
        "z/alpha": "alpha",  # exact by last segment
        "alphabet": "letters",  # prefix of the slug
        "b/alphanumeric": "x",  # prefix of the last segment
        "a/notes": "alpha notes",  # prefix of the title
        "c/my-alpha": "mine",  # substring
        "beta": "the alpha",  # substring of the title
        "gamma": "g",  # no match
    }
    index = TitleIndex(entries.items())
    assert index.ranked("alpha", "alpha", 10) == [
        ("z/alpha", EXACT),
        ("a/notes", PREFIX),
        ("alphabet", PREFIX),
        ("b/alphanumeric", PREFIX),
        ("beta", SUBSTRING),
        ("c/my-alpha", SUBSTRING),
    ]
    assert index.ranked("alpha", "alpha", 2) == [("z/alpha", EXACT), ("a/notes", PREFIX)]
    assert TitleIndex(()).ranked("a", "a", 5) == []


def test_ranked_takes_the_first_of_many_prefix_matches() -> None:
    entries = {f"f{i % 7}/item-{i:04d}": f"item {i}" for i in range(3000)}
    index = TitleIndex(entries.items())
    assert index.ranked("item", "item", 20) == _by_scan(entries, "item", "item", 20)
    assert index.ranked("item-0", "item 0", 20) == _by_scan(entries, "item-0", "item 0", 20)
    assert index.ranked("tem-29", "tem 29", 20) == _by_scan(entries, "tem-29", "tem 29", 20)
