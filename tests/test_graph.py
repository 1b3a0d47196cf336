"""The link graph's helpers: the title index behind search_titles, the shared attribute dict."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore_mcp.graph import LinkGraph, Node, TitleIndex

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


def test_the_shared_attribute_dict_refuses_writes() -> None:
    graph = LinkGraph()
    graph.set_node("a", "A", placeholder=False)
    graph.set_node("b", "B", placeholder=True)
    graph.add_edges([("a", "b")])
    with pytest.raises(TypeError):
        graph._g.add_edge("a", "b", weight=2)
    with pytest.raises(TypeError):
        graph._g.nodes["a"]["title"] = "x"
    assert graph.node("b") == Node("b", "B", True)
