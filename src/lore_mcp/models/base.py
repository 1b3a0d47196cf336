"""The results' common ground: lean JSON schemas, and the fields of a result that may be
shrunk to fit the result size limit or shows one page of a longer list."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _lean(schema: dict[str, Any]) -> None:
    """Keep a result's JSON schema to what a client validates with: the types of the
    fields and how they nest, without titles, descriptions, defaults or the list of
    required fields (every result has them all; a client checks the types of what
    comes). Every session pays for the tools' output schemas in its context; the fields
    are explained in the tools' descriptions and the text the model reads."""
    for noise in ("title", "description", "required"):
        schema.pop(noise, None)

    for field in schema.get("properties", {}).values():
        for noise in ("title", "description", "default"):  # a default validates nothing
            field.pop(noise, None)
        either = field.get("anyOf")
        if (  # `X or null` as one type list, as JSON Schema allows: the same check, shorter
            isinstance(either, list)
            and len(either) == 2
            and {"type": "null"} in either
            and all(set(t) == {"type"} for t in either)
        ):
            del field["anyOf"]
            field["type"] = [t["type"] for t in either if t != {"type": "null"}] + ["null"]


class Lean(BaseModel):
    """A result model whose JSON schema is lean (see `_lean`)."""

    model_config = ConfigDict(json_schema_extra=_lean)


class Budgeted(Lean):
    """A tool result that may be shrunk to fit the server's result size limit."""

    truncated: bool = Field(
        default=False,
        description="Shrunk to fit the result size limit; the note says how to get the rest",
    )
    note: str | None = Field(
        default=None, description="What was left out to fit the size limit, and how to get it"
    )
    vault: str | None = Field(
        default=None, description="The vault it came from (tool results name it)"
    )


class Paged(Budgeted):
    """A result that shows one page of a longer list: call again with `next_offset` as
    `offset` for the next rows. Counts are of the whole list, not of the rows shown."""

    offset: int = Field(default=0, description="Rows skipped")
    next_offset: int | None = Field(
        default=None, description="The offset of the next rows; null: none left"
    )
