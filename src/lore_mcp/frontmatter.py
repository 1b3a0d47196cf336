"""Frontmatter: the YAML properties between `---` lines at the top of a page.

They are properties, not body text: `aliases` are further names of the page, `tags` are
indexed with the inline `#tags`. Broken YAML gives no properties (and a warning for the
doctor); the page's bytes are never touched. Pure functions, no I/O.

The YAML is a file's, so anyone's: its cost is bounded before it is loaded. YAML longer
than `MAX_CHARS` is not loaded. YAML with aliases has its events (PyYAML's public
`parse`) counted first, every alias as the nodes it stands for: YAML that would expand
to more than `MAX_NODES` values (a "billion laughs" of nested aliases, which a few
hundred bytes can hold), nests deeper than `MAX_DEPTH` or refers to a node from inside
itself is not loaded either. Such YAML is reported as broken, like YAML that does not
parse; the page's body is read as always.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

MAX_CHARS = 256 * 1024  # the YAML of one page's frontmatter
MAX_NODES = 100_000  # values it may stand for, aliases expanded
MAX_DEPTH = 100  # how deep its lists and mappings may nest

_OPENING = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)


# Safe YAML (libyaml's when there is one), dates and times kept as text, as Obsidian keeps them.
class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loading, with dates and times kept as the text they are written as."""


_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """Where the properties end in the text (0 when there are none), and what they say."""

    end: int = 0
    properties: dict[str, Any] = field(default_factory=dict)
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    error: str | None = None  # the YAML did not parse


def _bounds(text: str) -> tuple[int, int, int] | None:
    """Where the YAML starts and ends, and where the frontmatter ends."""
    opening = _OPENING.match(text)
    closing = None if opening is None else _CLOSING.search(text, opening.end())
    if opening is None or closing is None:
        return None
    return opening.end(), closing.start(), closing.end()


def extent(text: str) -> int:
    """Where the frontmatter ends (0 when the text opens with none)."""
    bounds = _bounds(text)
    return 0 if bounds is None else bounds[2]


def split(text: str) -> Frontmatter:
    """The frontmatter of a page's text, if it opens with one."""
    bounds = _bounds(text)
    if bounds is None:
        return Frontmatter()
    first, last, end = bounds
    source = text[first:last]
    try:
        too_costly = _cost_problem(source)
        if too_costly is not None:
            return Frontmatter(end, error=too_costly)
        loaded = yaml.load(source, Loader=_Loader) if source.strip() else {}
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: a huge int
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Frontmatter(end, error=problem)
    if not isinstance(loaded, dict):
        return Frontmatter(end, error="the properties are not a mapping of names to values")
    properties = {str(key): value for key, value in loaded.items()}
    tags = _strings(properties.get("tags", properties.get("tag")), split_on=" ,")
    return Frontmatter(
        end,
        properties,
        _strings(properties.get("aliases", properties.get("alias"))),
        [tag.lstrip("#") for tag in tags if tag.lstrip("#")],
    )


def _cost_problem(source: str) -> str | None:
    """Why loading the YAML `source` would cost too much, or None: read from its
    events, each alias counted as the size of the node it refers to."""
    if len(source) > MAX_CHARS:
        return f"the properties are longer than {MAX_CHARS} characters"
    if "*" not in source:  # no alias: the nodes are the text's own, which MAX_CHARS bounds
        return None
    sizes: dict[str, int] = {}  # an anchor's node: how many values it stands for
    open_nodes: list[tuple[str | None, int]] = [(None, 0)]  # (anchor, values so far)
    total = 0
    for event in yaml.parse(source, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes:
                return "an alias in the properties refers to a node that holds it"
            size = sizes[event.anchor]
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append((event.anchor, 1))
            if len(open_nodes) > MAX_DEPTH:
                return f"the properties nest deeper than {MAX_DEPTH} levels"
            continue
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = size
            anchor, inner = open_nodes.pop()
            open_nodes.append((anchor, inner + size))
            continue
        else:
            continue
        if isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
            sizes[event.anchor] = 1
        anchor, inner = open_nodes.pop()
        open_nodes.append((anchor, inner + size))
        total += size
        if total > MAX_NODES:
            return f"the properties stand for more than {MAX_NODES} values (YAML aliases)"
    return None


def _strings(value: Any, split_on: str = ",") -> list[str]:
    """A property that may be one string, a list of them, or a separated string."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    found: list[str] = []
    for item in items:
        if isinstance(item, str | int | float):
            text = str(item)
            parts = (
                re.split(f"[{re.escape(split_on)}]+", text)
                if not isinstance(value, list)
                else [text]
            )
            found += [part.strip() for part in parts if part.strip()]
    return list(dict.fromkeys(found))
