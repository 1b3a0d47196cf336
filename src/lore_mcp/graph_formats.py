"""The link graph written for other tools: JSON, GraphML, Graphviz DOT and Mermaid.

Each takes an `ExportGraph` (the whole vault or a neighbourhood, see
`vault_ops.export`) and returns text. Nodes are named by the slug tools show; titles
and kinds go along as attributes, so a drawing can label and colour them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Literal

from lore_mcp.graph import graphml
from lore_mcp.vault_ops import ExportGraph

Format = Literal["json", "graphml", "dot", "mermaid"]
FORMATS: tuple[Format, ...] = ("json", "graphml", "dot", "mermaid")


def as_json(graph: ExportGraph) -> str:
    """`{"nodes": [...], "edges": [{"source", "target"}], ...}` as one document."""
    document = {
        "center": graph.center,
        "depth": graph.depth,
        "node_count": graph.node_count,
        "edge_count": graph.edge_count,
        "nodes": [
            {
                "slug": node.slug,
                "title": node.title,
                "is_placeholder": node.is_placeholder,
                "links_in": node.links_in,
                "links_out": node.links_out,
                **({} if node.depth is None else {"depth": node.depth}),
            }
            for node in graph.nodes
        ],
        "edges": [{"source": a, "target": b} for a, b in graph.edges],
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def as_graphml(graph: ExportGraph) -> str:
    return graphml(
        (
            (
                node.slug,
                {
                    "title": node.title,
                    "placeholder": node.is_placeholder,
                    "links_in": node.links_in,
                    "links_out": node.links_out,
                },
            )
            for node in graph.nodes
        ),
        graph.edges,
    )


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def as_dot(graph: ExportGraph) -> str:
    """A Graphviz digraph; placeholders are dashed."""
    lines = ["digraph lore {"]
    for node in graph.nodes:
        style = ", style=dashed" if node.is_placeholder else ""
        lines.append(f"  {_dot_string(node.slug)} [label={_dot_string(node.title)}{style}];")
    lines.extend(f"  {_dot_string(a)} -> {_dot_string(b)};" for a, b in graph.edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


_MERMAID_UNSAFE = re.compile(r'["\[\]{}()<>|#;`]')


def as_mermaid(graph: ExportGraph) -> str:
    """A Mermaid flowchart: nodes get short ids (`n0`, `n1`, ...) since slugs may hold
    characters Mermaid reserves; labels are the titles, placeholders in dashed boxes."""
    ids = {node.slug: f"n{i}" for i, node in enumerate(graph.nodes)}
    lines = ["flowchart LR"]
    for node in graph.nodes:
        label = _MERMAID_UNSAFE.sub(" ", node.title).strip() or node.slug
        lines.append(f'  {ids[node.slug]}["{label}"]')
        if node.is_placeholder:
            lines.append(f"  class {ids[node.slug]} placeholder")
    lines.extend(f"  {ids[a]} --> {ids[b]}" for a, b in graph.edges)
    lines.append("  classDef placeholder stroke-dasharray: 4 4")
    return "\n".join(lines) + "\n"


WRITERS: dict[Format, Callable[[ExportGraph], str]] = {
    "json": as_json,
    "graphml": as_graphml,
    "dot": as_dot,
    "mermaid": as_mermaid,
}


def write(graph: ExportGraph, fmt: Format) -> str:
    return WRITERS[fmt](graph)
