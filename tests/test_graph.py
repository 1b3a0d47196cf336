"""The link graph's helpers: keeping its title index in step, the shared attribute dict."""

from __future__ import annotations

import pytest

from lore_mcp.graph import FOLDED_CHANGES_KEPT, LinkGraph, Node
from lore_mcp.title_index import EXACT, PREFIX


def test_the_graph_keeps_its_title_index_in_step() -> None:
    graph = LinkGraph()
    for slug, title in (("a/alpha", "Alpha"), ("beta", "Beta")):
        graph.set_node(slug, title, placeholder=False)
    titles = graph.folded_titles()
    graph.set_node("alphabet", "Alphabet", placeholder=True)
    graph.set_node("beta", "Alpha Beta", placeholder=False)  # a new title
    graph.remove_node("a/alpha")
    assert graph.folded_titles() is titles  # kept, not built again
    assert titles.ranked("alpha", "alpha", 10) == [("alphabet", PREFIX), ("beta", PREFIX)]
    for i in range(FOLDED_CHANGES_KEPT):
        graph.set_node(f"n{i}", f"N {i}", placeholder=False)
    rebuilt = graph.folded_titles()
    assert rebuilt is not titles  # after many changes it is built afresh
    assert rebuilt.ranked("n1999", "n 1999", 5) == [("n1999", EXACT)]


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
