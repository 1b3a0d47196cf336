"""The SDK's own floor per call: a server with lore-mcp's tools that does no work.

    python bench/sdkfloor.py ANSWERS.json

It declares the nine tools with lore-mcp's exact signatures and output schemas (so the
SDK validates the same arguments and results, and the client checks the same schemas),
and answers each call with the next result recorded from the real server for that tool,
in order. It starts as `lore-mcp` does (the same modules imported, the same logging, a
`LoreServer` with the same tools and resource template) and serves through the same
function, `lore_mcp.server.run_stdio` (the SDK's stdio transport, stopped by SIGTERM as
lore-mcp is). No vault, no index, no background index pass:
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
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script, this folder is first on the path
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from lore_mcp.vault_ops import AppState

Answers = Mapping[str, Sequence[dict[str, Any]]]
NAME = "lore-sdk-floor"


class _NoVault:
    """What `run_stdio` needs of a vault: the event set once the server has let go of it
    (here, when the lifespan ends, as the real server's closes its vault)."""

    def __init__(self) -> None:
        self.closed = threading.Event()


def build(answers: Answers, stand_in: _NoVault | None = None) -> MCPServer[Any]:
    """A server whose tools replay `answers`, built as `lore_mcp.server.build_server`
    builds lore-mcp's: a `LoreServer` with the same tools, hints and resource template.
    Its lifespan does nothing but set `stand_in.closed` at the end."""
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError

    from lore_mcp import __version__, instructions, resources, server, tools

    floor = server.LoreServer(
        NAME,
        title=NAME,
        version=__version__,
        instructions=f"This is the memory vault {NAME!r} (replayed answers). {instructions.GUIDE}",
        lifespan=_lifespan(stand_in or _NoVault()),
    )
    for tool in tools.TOOLS:
        replay = _replaying(tool.fn, answers.get(tool.fn.__name__, ()))
        floor.add_tool(replay, title=tool.title, annotations=tool.hints)

    def page(slug: str) -> str:
        raise ResourceNotFoundError(f"sdkfloor: no page {slug!r}")

    floor.resource(
        resources.PAGE_TEMPLATE, name="page", title="A vault page", mime_type="text/markdown"
    )(page)
    return floor


def _lifespan(stand_in: _NoVault) -> Callable[[Any], Any]:
    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            stand_in.closed.set()

    return lifespan


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
    # As `lore-mcp` starts (`lore_mcp.cli._serve`): its modules, its logging, the server
    # built, then served by the same function; only opening the vault is left out.
    import lore_mcp.cli  # noqa: F401  (what `python -m lore_mcp` imports first)
    from lore_mcp.config import setup_logging

    setup_logging("WARNING")
    from lore_mcp.server import run_stdio

    stand_in = _NoVault()
    floor = build(answers, stand_in)
    run_stdio(floor, cast("AppState", stand_in))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
