"""The whole link graph for other tools: `vault_ops.export_graph` and
`lore graph --format json|graphml|dot|mermaid`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

from lore_mcp import graph_formats
from lore_mcp import vault_ops as engine
from lore_mcp.cli import main
from lore_mcp.errors import InvalidArgumentError
from lore_mcp.vault_ops import AppState, ExportGraph, ExportNode


def _vault(state: AppState) -> None:
    engine.save_page(state, "Hub", "[[A]] [[B]] [[Ghost]]")
    engine.save_page(state, "A", "back to [[Hub]]")
    engine.save_page(state, "B", "see [[A]]")
    engine.save_page(state, "Alone", "nothing")


def test_the_whole_graph_has_every_node_and_edge(state: AppState) -> None:
    _vault(state)
    graph = engine.export_graph(state)
    by_slug = {node.slug: node for node in graph.nodes}
    assert set(by_slug) == {"hub", "a", "b", "ghost", "alone"}
    assert by_slug["ghost"].is_placeholder
    assert by_slug["alone"].unreferenced and not by_slug["a"].unreferenced
    assert by_slug["hub"].links_out == 3 and by_slug["a"].links_in == 2
    assert set(graph.edges) == {("hub", "a"), ("hub", "b"), ("hub", "ghost"), ("a", "hub"),
                                ("b", "a")}  # fmt: skip
    assert (graph.node_count, graph.edge_count, graph.cut) == (5, 5, False)


def test_a_cut_keeps_the_most_linked_and_counts_the_whole(state: AppState) -> None:
    _vault(state)
    graph = engine.export_graph(state, max_nodes=2)
    assert [node.slug for node in graph.nodes] == ["a", "hub"]
    assert set(graph.edges) == {("a", "hub"), ("hub", "a")}
    assert graph.node_count == 5 and graph.cut


def test_a_neighbourhood_keeps_its_centre_and_depths(state: AppState) -> None:
    _vault(state)
    graph = engine.export_graph(state, "B", depth=1)
    assert graph.center == "b"
    assert {node.slug: node.depth for node in graph.nodes} == {"b": 0, "a": 1, "hub": 1}
    deeper = engine.export_graph(state, "B", depth=2, max_nodes=1)
    assert [node.slug for node in deeper.nodes] == ["b"]
    with pytest.raises(InvalidArgumentError):
        engine.export_graph(state, "B", depth=4)


def test_graphml_reads_back_in_networkx(state: AppState, tmp_path: Path) -> None:
    _vault(state)
    path = tmp_path / "g.graphml"
    path.write_text(graph_formats.write(engine.export_graph(state), "graphml"), encoding="utf-8")
    read = nx.read_graphml(path)
    assert isinstance(read, nx.DiGraph)
    assert set(read.nodes) == {"hub", "a", "b", "ghost", "alone"}
    assert read.nodes["ghost"]["placeholder"] is True
    assert read.nodes["hub"]["title"] == "Hub"
    assert read.has_edge("b", "a") and not read.has_edge("a", "b")


def test_dot_and_mermaid_name_every_edge(state: AppState) -> None:
    engine.save_page(state, "Say Hi (now)", "[[Other]]")
    graph = engine.export_graph(state)
    dot = graph_formats.write(graph, "dot")
    assert dot.startswith("digraph lore {") and '"say-hi-(now)" -> "other";' in dot
    assert "style=dashed" in dot
    quoted = ExportGraph([ExportNode('a"b', 'A "B"', False, 0, 0)], [], 1, 0)
    assert 'label="A \\"B\\""' in graph_formats.write(quoted, "dot")
    mermaid = graph_formats.write(graph, "mermaid").splitlines()
    assert mermaid[0] == "flowchart LR"
    assert sum("-->" in line for line in mermaid) == 1
    assert not any("(" in line for line in mermaid[1:])


def test_lore_graph_format(brain_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vault", str(brain_dir), "graph", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["node_count"] == len(document["nodes"]) > 10
    assert len(document["edges"]) == document["edge_count"]
    assert main(["--vault", str(brain_dir), "graph", "Slugs", "--format", "graphml"]) == 0
    root = ET.fromstring(capsys.readouterr().out)
    assert root.tag.endswith("graphml")
    assert main(["--vault", str(brain_dir), "graph", "--format", "png"]) == 2


def test_a_cut_keeps_room_for_pages_nothing_links_to(state: AppState) -> None:
    for i in range(30):
        engine.save_page(state, f"P{i}", f"[[P{(i + 1) % 30}]] [[P{(i + 2) % 30}]]")
    engine.save_page(state, "Lonely", "[[P0]]")
    graph = engine.export_graph(state, max_nodes=10)
    kept = {node.slug for node in graph.nodes}
    assert len(kept) == 10 and "lonely" in kept
    assert {node.slug for node in graph.nodes if node.unreferenced} == {"lonely"}
