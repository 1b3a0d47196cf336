"""What the server answers beside the SDK's own handlers, through its middleware chain
(`MCPServer.middleware`):

- `initialize` and `server/discover` carry instructions built for this session from the
  vault's state now, not at start-up (an HTTP server lives for days); `initialize` also
  declares the `logging` capability.
- `logging/setLevel` (the handshake era; the 2026-07-28 protocol has no such method)
  sets the client's threshold: from then on the server's log records at or above it
  reach the client as `notifications/message`, through `ClientLog`.
- `resources/list` lists the vault's pages, a page of them at a time, with a cursor.

The vault-specific parts come in as functions, so this module knows the protocol only.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# The protocol's levels (syslog's) and the logging levels they stand for.
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 10,
    "emergency": logging.CRITICAL + 20,
}
MAX_LISTENERS = 64  # sessions that asked for log messages; the oldest is dropped after

Instructions = Callable[[Any], str]  # (the lifespan's state) -> the instructions now
# (the lifespan's state, the cursor or None) -> resources on the wire, the next cursor
Resources = Callable[[Any, str | None], Awaitable[tuple[list[dict[str, Any]], str | None]]]


@dataclass
class _Listener:
    session: ServerSession
    threshold: int
    loop: asyncio.AbstractEventLoop


class ClientLog(logging.Handler):
    """A logging handler that sends each record to the sessions whose threshold it
    meets, as a `notifications/message`. Records come from any thread; each is sent on
    the event loop of the session that asked. Only records the server's loggers let
    through get here: `--log-level` (WARNING by default) still decides what is made."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self._listeners: dict[str, _Listener] = {}
        self._guard = threading.Lock()
        self._sending: set[asyncio.Task[None]] = set()

    def listen(self, key: str, session: ServerSession, threshold: int) -> None:
        """From now on, send `session` (one per `key`: a stdio process or an HTTP
        session) the records at `threshold` or above."""
        listener = _Listener(session, threshold, asyncio.get_running_loop())
        with self._guard:
            self._listeners.pop(key, None)
            self._listeners[key] = listener
            while len(self._listeners) > MAX_LISTENERS:
                del self._listeners[next(iter(self._listeners))]

    def emit(self, record: logging.LogRecord) -> None:
        with self._guard:
            listeners = [
                (k, v) for k, v in self._listeners.items() if record.levelno >= v.threshold
            ]
        if not listeners:
            return
        params = LoggingMessageNotificationParams(
            level=_level_name(record.levelno), logger=record.name, data=record.getMessage()
        )
        for key, listener in listeners:
            try:
                listener.loop.call_soon_threadsafe(self._send, key, listener, params)
            except RuntimeError:  # its event loop has closed: the session is over
                self._forget(key, listener)

    def _send(
        self, key: str, listener: _Listener, params: LoggingMessageNotificationParams
    ) -> None:
        async def send() -> None:
            try:
                await listener.session.send_notification(LoggingMessageNotification(params=params))
            except Exception:  # the session has gone; logging it would come back here
                self._forget(key, listener)

        task = listener.loop.create_task(send())
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def _forget(self, key: str, listener: _Listener) -> None:
        with self._guard:
            if self._listeners.get(key) is listener:
                del self._listeners[key]

    def close(self) -> None:
        """Stop sending: forget every session and cancel what is still on its way."""
        with self._guard:
            self._listeners.clear()
        for task in list(self._sending):
            task.cancel()
        super().close()


def _level_name(levelno: int) -> Any:
    """The protocol level a logging level falls in."""
    name = "debug"
    for level, number in LEVELS.items():
        if levelno >= number:
            name = level
    return name


class Answers:
    """The middleware: `initialize`, `server/discover`, `logging/setLevel` and
    `resources/list`, as the module's docstring says."""

    def __init__(self, instructions: Instructions, resources: Resources, log: ClientLog) -> None:
        self._instructions = instructions
        self._resources = resources
        self._log = log

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        handshake = ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        if ctx.method == "logging/setLevel" and handshake:
            return self._set_level(ctx)
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        if ctx.method in ("initialize", "server/discover"):
            result = result | {"instructions": self._instructions(ctx.lifespan_context)}
        if ctx.method == "initialize":
            capabilities = dict(result.get("capabilities") or {})
            result["capabilities"] = capabilities | {"logging": {}}
        if ctx.method == "resources/list":
            cursor = (ctx.params or {}).get("cursor")
            pages, next_cursor = await self._resources(ctx.lifespan_context, cursor)
            result = result | {"resources": [*pages, *result.get("resources", [])]}
            if next_cursor is not None:
                result["nextCursor"] = next_cursor
        return result

    def _set_level(self, ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        level = (ctx.params or {}).get("level")
        if level not in LEVELS:
            raise MCPError(
                INVALID_PARAMS, f"Unknown log level {level!r}; one of: {', '.join(LEVELS)}"
            )
        self._log.listen(_session_key(ctx), ctx.session, LEVELS[level])
        return {}


def _session_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The HTTP session the request came in (its Mcp-Session-Id), or the stdio one."""
    headers: Mapping[str, str] | None = getattr(ctx.request, "headers", None)
    return (headers or {}).get("mcp-session-id", "") or "stdio"
