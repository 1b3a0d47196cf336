"""The second door: the same MCP server over Streamable HTTP, behind a bearer token.

stdio trusts its parent process, which started the server and owns its pipes. Over HTTP
anyone who can reach the port could talk to it, so this door trusts only a token: every
request must carry `Authorization: Bearer <token>`, compared in constant time, or it is
answered 401 before it reaches the MCP app. There is no open mode, and a non-loopback
address needs `allow_remote` (and gets a warning in the log). The tools are the ones
`server.build_server` defines; this module only wraps that server's Starlette app and runs
it under uvicorn.

A token file may hold several tokens, one a line, each limited to some vaults or to
reading (`TOKEN label=NAME vaults=team,personal role=reader`; see `tokens`): what a
request may reach comes from the token it carries (the check, `bearer.BearerAuth`, leaves
the token's `Grant` in the request's ASGI scope, where the tools find it), never from the
request. A reader token's writes are refused; a token's vaults are the only ones any
argument or resource URI reaches.

Sessions are bounded: one idle for `session_timeout` seconds is closed (its id then
answers 404 and the client starts a new one), and while `max_sessions` are open a new
one is refused with 503. A closed or expired session is forgotten, and its memory with it.
Refused requests are logged a few a minute, one by one; a flood of them is counted in one
line a minute (`bearer.RefusalLog`), so it cannot fill the log.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import JSONRPCRequest, jsonrpc_message_adapter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lore_mcp import jsonrpc
from lore_mcp.bearer import BearerAuth, RefusalLog, respond
from lore_mcp.calls import Served
from lore_mcp.config import MAX_CONTENT_BYTES
from lore_mcp.errors import LoreError
from lore_mcp.server import LoreServer
from lore_mcp.tokens import Token, check_token

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
# A page is at most 1 MiB of UTF-8; JSON escaping can make its request several times that.
MAX_BODY_BYTES = 8 * MAX_CONTENT_BYTES
# How long a stop waits for open streams (a legacy client's GET stream never ends by itself).
SHUTDOWN_GRACE_SECONDS = 2
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
DEFAULT_SESSION_TIMEOUT = 30 * 60.0  # seconds a session may stay idle
DEFAULT_MAX_SESSIONS = 200  # an abandoned session holds some tens of kilobytes until then


@dataclass(frozen=True)
class HttpOptions:
    """Where to listen and the token every request must carry (or the tokens, each
    with its reach: `tokens`, when a token file lists several)."""

    token: str = field(repr=False)
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    session_timeout: float = DEFAULT_SESSION_TIMEOUT
    max_sessions: int = DEFAULT_MAX_SESSIONS
    tokens: tuple[Token, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        check_token(self.token, "the server's settings")
        if not 0 < self.session_timeout < float("inf") or self.max_sessions < 1:
            raise LoreError(
                "Sessions need a timeout above 0 seconds and room for at least one; "
                f"{self.session_timeout} s and {self.max_sessions} were asked for."
            )
        if not (self.allow_remote or is_loopback(self.host)):
            raise LoreError(
                f"{self.host!r} is not a loopback address, so other machines could reach "
                "the vault. Pass --allow-remote to serve it anyway, or use --host 127.0.0.1."
            )


# -- configuration --------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def announce(host: str, port: int, sessions: str = "") -> None:
    """Log where the server listens, and warn when that is beyond this machine."""
    log.info("listening on %s (bearer token required%s)", endpoint_url(host, port), sessions)
    if not is_loopback(host):
        log.warning(
            "serving on the non-loopback address %s: anyone who can reach it and holds the "
            "token can read and change the vault, and plain HTTP shows the token to anyone "
            "on the path; put a TLS proxy in front or use an SSH tunnel",
            host,
        )


def endpoint_url(host: str, port: int) -> str:
    return f"http://{_bracketed(host)}:{port}{MCP_PATH}"


def _bracketed(host: str) -> str:
    """An IPv6 address as it appears in a URL or a Host header."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


# -- the requests the SDK misreads ---------------------------------------------------------


class MisreadRequests:
    """Pure ASGI middleware for the one malformed body the SDK does not answer over HTTP:
    a request whose id is of no valid type (null, a boolean, an object), which it takes
    for a notification (202, no reply). That gets 400 and the -32600 error JSON-RPC
    prescribes; every other body reaches `app` as it came (the SDK answers what it
    cannot parse with 400 itself)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        body = b""
        while len(body) <= MAX_BODY_BYTES:  # a larger one the SDK refuses by its size
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        if reply := _misread(body):
            answer = jsonrpc.encode(reply)
            await respond(send, 400, answer, [(b"content-type", b"application/json")])
            return

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        await self.app(scope, replay, send)


def _misread(body: bytes) -> jsonrpc.Reply | None:
    """The error for a request the SDK would take for something else, if `body` is one."""
    if b'"id"' not in body or b'"method"' not in body:
        return None
    try:
        message = jsonrpc_message_adapter.validate_json(body, by_name=False)
    except Exception:  # the SDK answers this itself
        return None
    text = body.decode("utf-8", errors="replace")
    if isinstance(message, JSONRPCRequest) or not jsonrpc.is_request(text):
        return None
    replies = jsonrpc.replies(text, "it has an id and a method but is no valid request")
    return replies[0] if replies else None


# -- the app and the server -------------------------------------------------------------------


def http_app(
    server: MCPServer[Any],
    token: str | Sequence[Token],
    host: str = DEFAULT_HOST,
    *,
    session_timeout: float = DEFAULT_SESSION_TIMEOUT,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    refusals: RefusalLog | None = None,
) -> ASGIApp:
    """`server`'s Streamable HTTP app at /mcp, behind the bearer check, with its sessions
    bounded. Its lifespan runs the server's, so the vault opens and closes with the app.
    `token` is the one token, or the tokens with what each may reach; a token's vaults
    must be vaults the server holds."""
    if isinstance(server, LoreServer) and server.served and not isinstance(token, str):
        token = _within_reach(server.served, token)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=session_timeout,
        max_sessions=max_sessions,
        transport_security=transport_security(host),
        host=host,
    )
    return BearerAuth(MisreadRequests(app), token, refusals)


def _within_reach(served: Served, tokens: Sequence[Token]) -> list[Token]:
    """`tokens`, their vaults spelt as the server names them. A token for a vault the
    server does not hold is refused (a typo would lock it out)."""
    vaults = served.vaults
    known = {name.lower(): name for name in vaults.names}
    checked = []
    for given in tokens:
        token, reach = given, given.grant.vaults
        if reach is not None:
            if unknown := sorted(name for name in reach if name.lower() not in known):
                raise LoreError(
                    f"The token {token.grant.label!r} names vaults this server does not "
                    f"hold: {', '.join(unknown)} (it holds {', '.join(vaults.names)})."
                )
            spelt = frozenset(known[name.lower()] for name in reach)
            token = Token(token.secret, replace(token.grant, vaults=spelt))
        checked.append(token)
    return checked


def transport_security(host: str) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding guard (Host and Origin checks) on loopback. On another
    address the names clients use are unknown, so only the token guards the door."""
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = sorted({*LOOPBACK_NAMES, _bracketed(host)})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{name}:*" for name in names)],
        allowed_origins=[f"http://{name}{port}" for name in names for port in ("", ":*")],
    )


def run_http(server: MCPServer[Any], options: HttpOptions) -> None:
    """Serve `server` over HTTP until SIGINT or SIGTERM, then stop cleanly: open streams
    get `SHUTDOWN_GRACE_SECONDS`, the server's lifespan closes the vault, and this returns.

    uvicorn runs in a thread of its own, so the signals reach this thread, which asks it
    to stop (uvicorn takes signals itself only in the main thread, and re-raises them)."""
    sock = bind(options.host, options.port)
    refusals = RefusalLog()
    app = http_app(
        server,
        options.tokens or options.token,
        options.host,
        session_timeout=options.session_timeout,
        max_sessions=options.max_sessions,
        refusals=refusals,
    )
    sessions = (
        f"; at most {options.max_sessions} sessions, each closed after "
        f"{options.session_timeout:g} s idle"
    )
    announce(options.host, int(sock.getsockname()[1]), sessions)
    config = uvicorn_config(app, lifespan="on", timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS)
    web = uvicorn.Server(config)

    thread = threading.Thread(
        target=anyio.run, args=(partial(web.serve, sockets=[sock]),), name="lore-http"
    )
    stop = threading.Event()
    received: list[int] = []

    def on_signal(sig: int, _frame: object) -> None:
        received.append(sig)
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        thread.start()
        while thread.is_alive() and not stop.wait(0.2):
            refusals.flush()
        # Stop as uvicorn's own signal handler does: sse-starlette hooks handle_exit to
        # end open event streams (a client's GET stream), which otherwise last out the
        # grace period and are then cancelled, with an ERROR and a traceback.
        web.handle_exit(received[0] if received else signal.SIGTERM, None)
        thread.join()
        refusals.flush(stopping=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` (port 0: a free one) and listening, for uvicorn."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise LoreError(f"Cannot listen on {host!r}: {exc}. Check --host.") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listening now, so that a client that connects as soon as the address is
        # announced waits in the backlog for uvicorn rather than being refused.
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        raise LoreError(
            f"Cannot listen on {host}:{port}: {exc.strerror or exc}. Is another server "
            "using the port? Pick another with --port (0 picks a free one)."
        ) from None
    return sock


def uvicorn_config(app: ASGIApp, **options: Any) -> uvicorn.Config:
    """How lore's servers run uvicorn: no WebSocket, no logging setup or access log of
    its own (lore's logging is on stderr), no proxy headers trusted, no server header;
    `options` add to that (lifespan, graceful shutdown)."""
    return uvicorn.Config(
        app,
        ws="none",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        server_header=False,
        **options,
    )
