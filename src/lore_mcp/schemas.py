"""What `tools/list` shows of the tools: their arguments' types, limits and
descriptions, and the lean form of the schemas pydantic makes of them (`lean` for
input, `inlined` for output). Every session pays for `tools/list` in its context.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from lore_mcp.config import MAX_CONTENT_BYTES, MAX_NAME_CHARS, MAX_QUERY_CHARS
from lore_mcp.edits import Mode


def lean(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema as `tools/list` shows it: without the titles pydantic gives
    the arguments and their model (the names say it), and an optional `X or null` as X
    with its limits (leaving it out is how to send none). The tool still takes null."""
    properties = {name: _lean_argument(value) for name, value in schema["properties"].items()}
    return {key: value for key, value in schema.items() if key != "title"} | {
        "properties": properties
    }


def _lean_argument(schema: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in schema.items() if key != "title"}
    either = kept.get("anyOf")
    if (
        kept.get("default", ...) is None
        and isinstance(either, list)
        and len(either) == 2
        and {"type": "null"} in either
    ):
        (other,) = (t for t in either if t != {"type": "null"})
        if isinstance(other.get("type"), str) and not {"anyOf", "$ref", "enum"} & set(other):
            del kept["anyOf"], kept["default"]
            kept |= other
    return kept


Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="Page slug, title or path ('concepts/links', 'Links')",
    ),
]
NewName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The new title (same folder), or 'folder/New Title' to move it",
    ),
]
# Characters here; the engine checks the real limit, 1 MiB of UTF-8 bytes.
Content = Annotated[
    str | None,
    Field(
        max_length=MAX_CONTENT_BYTES,
        description="The Markdown (at most 1 MiB): the page, the text to add, old_text's "
        "replacement or the section's body; none to restore",
    ),
]
SaveMode = Annotated[
    Literal[Mode, "restore"],
    Field(description="See the description"),
]
OldText = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_CONTENT_BYTES,
        description="edit: the text to replace; it must occur once",
    ),
]
Heading = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="section: its heading ('## Decisions' or 'Decisions')",
    ),
]
Folder = Annotated[
    str, Field(max_length=MAX_NAME_CHARS, description="Only pages under this folder")
]
Centre = Annotated[
    str | None,
    Field(max_length=MAX_NAME_CHARS, description="Centre page; leave out for the vault's shape"),
]
Depth = Annotated[int, Field(ge=1, le=3, description="How many links from the centre (1-3)")]
Offset = Annotated[int, Field(ge=0, description="Rows to skip: 0, or next_offset")]
LineOffset = Annotated[int, Field(ge=0, description="Lines to skip: 0, or next_offset to read on")]
Column = Annotated[
    int, Field(ge=0, description="Then characters of that line to skip: next_column")
]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
ExpectedHash = Annotated[
    str | None,
    Field(
        max_length=80,
        description="Fail, changing nothing, unless the page's hash is still this; '' "
        "means it must not exist",
    ),
]
ReadVersion = Annotated[
    int | None,
    Field(ge=1, description="A kept version to read (1 the newest)"),
]
RestoreVersion = Annotated[
    int | None,
    Field(ge=1, description="restore: the kept version (default 1, the newest)"),
]


def limit_of(what: str) -> Any:
    return Field(ge=1, le=100, description=f"At most this many {what}")


def inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema with each definition used once written in its place: the same
    schema, without the `$defs` entry and the `$ref` that only point at each other."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    uses: dict[str, int] = {}

    def count(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_DEFS):
                uses[ref.removeprefix(_DEFS)] = uses.get(ref.removeprefix(_DEFS), 0) + 1
            for value in node.values():
                count(value)
        elif isinstance(node, list):
            for value in node:
                count(value)

    count(schema)
    once = {name for name in definitions if uses.get(name) == 1}

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.removeprefix(_DEFS) in once and len(node) == 1:
                return rewrite(definitions[ref.removeprefix(_DEFS)])
            return {key: rewrite(value) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [rewrite(value) for value in node]
        return node

    result: dict[str, Any] = rewrite(schema)
    kept = {name: rewrite(body) for name, body in definitions.items() if name not in once}
    return ({"$defs": kept} if kept else {}) | result


_DEFS = "#/$defs/"
