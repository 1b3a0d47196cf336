"""The link graph: nodes with their title and placeholder flag, and edges that end as
networkx would build them."""

from __future__ import annotations

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from lore_mcp.graph import LinkGraph, Node


def test_nodes_keep_their_title_and_flag() -> None:
    graph = LinkGraph()
    graph.set_node("a", "A", placeholder=False)
    graph.set_node("b", "B", placeholder=True)
    graph.add_edges([("a", "b"), ("a", "c")])  # "c" has no title yet: its key stands in
    assert graph.node("b") == Node("b", "B", True)
    assert graph.node("c") == Node("c", "c", False)
    assert graph.node("nowhere") is None
    assert (graph.title("a"), graph.title("nowhere")) == ("A", "nowhere")
    graph.set_node("b", "Bee", placeholder=False)  # promoted, renamed: its edges stay
    assert graph.node("b") == Node("b", "Bee", False)
    assert graph.linking_to("b") == ["a"]
    graph.remove_node("a")
    graph.remove_node("a")  # gone already: nothing happens
    assert sorted(n.key for n in graph.nodes()) == ["b", "c"]
    assert graph.edge_count() == 0


def test_orphans_and_most_linked() -> None:
    graph = LinkGraph()
    for slug in ("a", "b", "c", "lonely", "selfish"):
        graph.set_node(slug, slug.upper(), placeholder=False)
    graph.set_node("ghost", "Ghost", placeholder=True)
    graph.add_edges([("a", "b"), ("c", "b"), ("a", "ghost"), ("selfish", "selfish")])
    assert graph.orphans() == ["lonely", "selfish"]  # a link to itself does not count
    assert graph.unreferenced() == ["a", "c", "lonely", "selfish"]  # whatever they link to
    assert graph.most_linked(10, placeholders=False) == [("b", 2), ("selfish", 1)]
    assert graph.most_linked(1, placeholders=False) == [("b", 2)]
    assert graph.most_linked(10, placeholders=True) == [("ghost", 1)]


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
    """Adding edges and replacing a page's edges end where networkx's own calls would:
    the same nodes, edges, neighbours and degrees, whatever was there before and in
    whatever order the edges come (the index gives them grouped by source)."""
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
    assert {node.key for node in graph.nodes()} == set(expected.nodes)
    assert graph.edge_count() == expected.number_of_edges()
    for slug in expected.nodes:
        assert graph.linked_from(slug) == sorted(expected.successors(slug))
        assert graph.linking_to(slug) == sorted(expected.predecessors(slug))
        assert graph.in_degree(slug) == expected.in_degree(slug)
        assert graph.out_degree(slug) == expected.out_degree(slug)
        assert graph.neighbourhood(slug, 2)[1] == sorted(
            expected.subgraph(nx.ego_graph(expected, slug, 2, undirected=True)).edges()
        )
