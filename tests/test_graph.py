"""The title index behind search_titles: substring lookups over joined columns."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lore_mcp.graph import TitleIndex

_TEXT = st.text(alphabet="ab/-é 記\0", max_size=6)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), max_size=12), _TEXT, _TEXT)
def test_containing_finds_what_a_scan_finds(
    entries: list[tuple[str, str]], in_slug: str, in_title: str
) -> None:
    index = TitleIndex(tuple(entries))
    expected = [
        (slug, title)
        for slug, title in entries
        if (in_slug and "\0" not in in_slug and in_slug in slug)
        or (in_title and "\0" not in in_title and in_title in title)
    ]
    assert index.containing(in_slug, in_title) == expected


def test_containing_keeps_order_and_reports_each_entry_once() -> None:
    index = TitleIndex((("a/ab", "ab ab"), ("b", "x"), ("ab", "ab")))
    assert index.containing("ab", "ab") == [("a/ab", "ab ab"), ("ab", "ab")]
    assert index.containing("", "") == []
    assert TitleIndex(()).containing("a", "a") == []
