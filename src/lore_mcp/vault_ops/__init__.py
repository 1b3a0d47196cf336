"""The engine: every operation on a vault. The MCP server, the `lore` command line, the
watcher and the tests all come through here, so the doors cannot drift apart, and each
of these operations heals a damaged index the same way (see `heal`).

The operations are in `api`, loaded the first time one is asked for: a reader process
of a large pass, which needs only `pagefile`, does not load the rest of the engine (the
graph, networkx, the history).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lore_mcp.vault_ops.api import *  # noqa: F403


def __getattr__(name: str) -> Any:
    # `from lore_mcp.vault_ops import sync` looks for the attribute before it imports the
    # module: a module's name is left to the import (loading `api` here, in the middle of
    # importing one of the modules it needs, would find that one half made).
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    api = importlib.import_module("lore_mcp.vault_ops.api")
    if name not in api.__all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(api, name)
    globals()[name] = value  # asked for once
    return value
