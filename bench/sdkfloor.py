"""The SDK's own floor per call: a server with lore-mcp's tools that does no work.

    python bench/sdkfloor.py ANSWERS.json

It declares the nine tools with lore-mcp's exact signatures and output schemas (so the
SDK validates the same arguments and results, and the client checks the same schemas),
and answers each call with the next result recorded from the real server for that tool,
in order, with the same start-up and stdio transport as `lore-mcp`. No vault, no index:
what a call costs here is what the SDK (client, protocol, server dispatch, validation)
costs for a result of that size, and no server built on the SDK answers it faster.
Spawn to its first `read_page` answer is the start-up floor with lore-mcp's modules
imported.

ANSWERS.json maps a tool name to a list of `CallToolResult`s as JSON, in call order
(`bench.measure.session` records them). A call past the end of its list gets an error.
"""

from __future__ import annotations

import functools
import json
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script, this folder is first on the path
    sys.path.insert(0, str(ROOT))

from lore_mcp.cli import _starting  # noqa: E402

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

Answers = Mapping[str, Sequence[dict[str, Any]]]


def build(answers: Answers) -> MCPServer[Any]:
    """An MCPServer whose tools replay `answers`."""
    from mcp.server.mcpserver import MCPServer

    from lore_mcp import server

    tools = [
        server._tool(_replaying(fn, answers.get(fn.__name__, ())), hints)
        for fn, hints in server.TOOLS
    ]
    return MCPServer("lore-sdk-floor", tools=tools)


def _replaying(fn: Callable[..., Any], recorded: Sequence[dict[str, Any]]) -> Callable[..., Any]:
    """An async function with `fn`'s signature that returns the next recorded result."""
    from mcp.types import CallToolResult, TextContent

    queue = deque(CallToolResult.model_validate(answer) for answer in recorded)

    @functools.wraps(fn)
    async def replay(*args: Any, **kwargs: Any) -> CallToolResult:
        if queue:
            return queue.popleft()
        text = f"sdkfloor: no recorded answers of {fn.__name__} left"
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    return replay


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    answers = json.loads(Path(sys.argv[1]).read_text("utf-8"))
    with _starting():  # the same start-up as lore-mcp's (see `lore_mcp.cli.serve`)
        from lore_mcp.stdio import run_stdio

        floor = build(answers)
    run_stdio(floor)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
