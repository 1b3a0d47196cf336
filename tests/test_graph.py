"""The link graph's helpers: keeping its title index in step, the shared attribute dict,
adding edges fast."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

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


slugs = st.sampled_from(["a", "b", "c/d", "c/e", "f", "g"])
edge_lists = st.lists(st.tuples(slugs, slugs), max_size=30)


@given(
    known=st.lists(slugs, unique=True),
    first=edge_lists,
    second=edge_lists,
    grouped=st.booleans(),
)
def test_adding_edges_gives_the_graph_networkx_would_build(
    known: list[str],
    first: list[tuple[str, str]],
    second: list[tuple[str, str]],
    grouped: bool,
) -> None:
    """The graph's own fast path for adding edges ends where `add_edges_from` would: the
    same nodes, edges, neighbours and degrees, whatever was there before and in whatever
    order the edges come (the index gives them grouped by source)."""
    if grouped:
        first = sorted(first)
    graph = LinkGraph()
    expected: nx.DiGraph[str] = nx.DiGraph()
    for slug in known:
        graph.set_node(slug, slug.upper(), placeholder=False)
        expected.add_node(slug)
    graph.add_edges(first)
    expected.add_edges_from(first)
    sources = {source for source, _ in second}
    graph.replace_out_edges(sources, second)
    expected.remove_edges_from([(s, t) for s in sources if s in expected for t in expected[s]])
    expected.add_edges_from(second)

    assert graph.edges() == set(expected.edges())
    assert {node.slug for node in graph.nodes()} == set(expected.nodes)
    assert graph.edge_count() == expected.number_of_edges()
    for slug in expected.nodes:
        assert graph.linked_from(slug) == sorted(expected.successors(slug))
        assert graph.linking_to(slug) == sorted(expected.predecessors(slug))
        assert graph.in_degree(slug) == expected.in_degree(slug)
        assert graph.out_degree(slug) == expected.out_degree(slug)
        assert graph.neighbourhood(slug, 2)[1] == sorted(
            expected.subgraph(nx.ego_graph(expected, slug, 2, undirected=True)).edges()
        )


def test_a_slug_is_held_once_however_many_links_name_it() -> None:
    graph = LinkGraph()
    graph.set_node("".join(["hu", "b"]), "Hub", placeholder=False)
    graph.add_edges([(f"page-{i}", "".join(["h", "ub"])) for i in range(3)])
    (hub,) = [slug for slug in graph._g if slug == "hub"]
    for page in graph.linking_to("hub"):
        (target,) = graph._g.successors(page)
        assert target is hub
