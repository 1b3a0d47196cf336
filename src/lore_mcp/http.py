"""The second door: the same MCP server over Streamable HTTP, behind a bearer token.

stdio trusts its parent process, which started the server and owns its pipes. Over HTTP
anyone who can reach the port could talk to it, so this door trusts only a token: every
request must carry `Authorization: Bearer <token>`, compared in constant time, or it is
answered 401 before it reaches the MCP app. There is no open mode, and a non-loopback
address needs `allow_remote` (and gets a warning in the log). The tools are the ones
`server.build_server` defines; this module only wraps that server's Starlette app and runs
it under uvicorn.

A token file may hold several tokens, one a line, each limited to some vaults or to
reading (`TOKEN label=NAME vaults=team,personal role=reader`): what a request may reach
comes from the token it carries (the check leaves the token's `Grant` in the request's
ASGI scope, where the tools find it), never from the request. A reader token's writes
are refused; a token's vaults are the only ones any argument or resource URI reaches.

Sessions are bounded: one idle for `session_timeout` seconds is closed (its id then
answers 404 and the client starts a new one), and while `max_sessions` are open a new
one is refused with 503. A closed or expired session is forgotten, and its memory with it.
Refused requests are logged a few a minute, one by one; a flood of them is counted in one
line a minute (`RefusalLog`), so it cannot fill the log.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import JSONRPCRequest, jsonrpc_message_adapter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lore_mcp import jsonrpc
from lore_mcp.calls import Served
from lore_mcp.config import MAX_CONTENT_BYTES
from lore_mcp.errors import LoreError
from lore_mcp.server import LoreServer
from lore_mcp.vaults import EVERYTHING, GRANT_SCOPE_KEY, Grant, Role, check_name

log = logging.getLogger(__name__)

TOKEN_ENV = "LORE_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
# A page is at most 1 MiB of UTF-8; JSON escaping can make its request several times that.
MAX_BODY_BYTES = 8 * MAX_CONTENT_BYTES
# How long a stop waits for open streams (a legacy client's GET stream never ends by itself).
SHUTDOWN_GRACE_SECONDS = 2
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
DEFAULT_SESSION_TIMEOUT = 30 * 60.0  # seconds a session may stay idle
DEFAULT_MAX_SESSIONS = 200  # an abandoned session holds some tens of kilobytes until then
REFUSALS_LOGGED = 5  # refused requests logged one by one per minute; the rest are counted
REFUSAL_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class Token:
    """A bearer token and what it may reach."""

    secret: str = field(repr=False)
    grant: Grant = EVERYTHING


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


def load_token(token_file: Path | None, environ: Mapping[str, str] = os.environ) -> str:
    """The bearer token: from `token_file` when given (its first), else from
    $LORE_MCP_TOKEN. Raises `LoreError` when there is none or it is unfit; HTTP never
    runs without one."""
    return load_tokens(token_file, environ)[0].secret


def load_tokens(
    token_file: Path | None, environ: Mapping[str, str] = os.environ
) -> tuple[Token, ...]:
    """The bearer tokens and their reach: the lines of `token_file` when given (see
    `parse_tokens`), else $LORE_MCP_TOKEN, which reaches everything."""
    if token_file is not None:
        return parse_tokens(_read_token_file(token_file), f"the token file {token_file}")
    raw = environ.get(TOKEN_ENV, "")
    if not raw.strip():
        raise LoreError(
            f"HTTP serving needs a bearer token and none is configured. Set {TOKEN_ENV} or "
            f"pass --token-file FILE (at least {MIN_TOKEN_CHARS} characters; make one with "
            f"{MAKE_TOKEN}). There is no open mode."
        )
    return (Token(check_token(raw.strip(), f"${TOKEN_ENV}"), Grant(label="token")),)


ROLES = ("reader", "writer")


def parse_tokens(text: str, source: str) -> tuple[Token, ...]:
    """One token a line, `TOKEN [label=NAME] [vaults=a,b] [role=reader|writer]`; blank
    lines and `#` comments are skipped. A token without `vaults` reaches every vault,
    without `role` it writes; its label (for the audit log) is `label`, else `token`
    for a file of one token and `line-N` for the token on line N of several."""
    lines = [
        (number, line.split())
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    tokens = []
    for number, (secret, *settings) in lines:
        where = f"{source}, line {number}"
        options: dict[str, str] = {}
        for setting in settings:
            key, equals, value = setting.partition("=")
            if not equals or key not in ("label", "vaults", "role") or not value:
                raise LoreError(
                    f"In {where}: {setting!r} is not label=NAME, vaults=NAME,NAME or "
                    "role=reader|writer."
                )
            options[key] = value
        if options.get("role", "writer") not in ROLES:
            raise LoreError(f"In {where}: the role is reader or writer, not {options['role']!r}.")
        try:
            vaults = options.get("vaults")
            reach = None if vaults is None else frozenset(map(check_name, vaults.split(",")))
        except LoreError as exc:
            raise LoreError(f"In {where}: {exc}") from None
        label = options.get("label") or ("token" if len(lines) == 1 else f"line-{number}")
        role: Role = "reader" if options.get("role") == "reader" else "writer"
        tokens.append(Token(check_token(secret, where), Grant(label, reach, role)))
    if not tokens:
        raise LoreError(f"{source} holds no token; write one a line ({MAKE_TOKEN}).")
    if len({t.secret for t in tokens}) < len(tokens) or len({t.grant.label for t in tokens}) < len(
        tokens
    ):
        raise LoreError(f"{source} lists a token or a label twice; give each its own.")
    return tuple(tokens)


def check_token(token: str, source: str) -> str:
    """`token` if it is long enough and sendable in a header, else a `LoreError`."""
    if len(token) < MIN_TOKEN_CHARS:
        raise LoreError(
            f"The token from {source} has {len(token)} characters; at least "
            f"{MIN_TOKEN_CHARS} are needed. Make one with {MAKE_TOKEN}."
        )
    if not all("!" <= ch <= "~" for ch in token):
        raise LoreError(
            f"The token from {source} holds spaces or non-ASCII characters, which an "
            f"Authorization header cannot carry. Make one with {MAKE_TOKEN}."
        )
    return token


def _read_token_file(path: Path) -> str:
    """The token in the file, which only its owner (and the owner's group, to read) may
    read or change: a token others can read is no secret, one they can write lets them
    pick it."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise LoreError(f"Cannot read the token file {path}: {exc}.") from None
    if os.name == "posix" and mode & (stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH):
        who = "readable by every user" if mode & stat.S_IROTH else "writable by other users"
        raise LoreError(
            f"The token file {path} is {who} (mode {stat.S_IMODE(mode):04o}): anyone who "
            f"can change it can choose the token. Run `chmod 600 {path}` and start again."
        )
    if not text:
        raise LoreError(
            f"The token file {path} is empty; write a token of at least "
            f"{MIN_TOKEN_CHARS} characters into it ({MAKE_TOKEN})."
        )
    return text


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


# -- the bearer check -------------------------------------------------------------------------


class RefusalLog:
    """The log lines of refused requests, bounded so that a flood of them cannot fill the
    log: the first `REFUSALS_LOGGED` of each minute one by one, then, when the minute is
    over (or the server stops: `flush`), one line saying how many more there were.
    Thread-safe: requests are refused in the server's thread, `flush` is called from
    the one that runs it. `clock` gives seconds (injected by tests)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since = clock()
        self._logged = 0
        self._held = 0

    def refused(self, method: str, path: str, client: str) -> None:
        with self._lock:
            self._roll()
            if self._logged >= REFUSALS_LOGGED:
                self._held += 1
                return
            self._logged += 1
        log.warning("refused %s %s from %s: no valid bearer token", method, path, client)

    def flush(self, *, stopping: bool = False) -> None:
        """Log the count of the refusals not logged, once their minute is over (or now,
        when `stopping`)."""
        with self._lock:
            self._roll(stopping)

    def _roll(self, now: bool = False) -> None:
        if not now and self._clock() - self._since < REFUSAL_WINDOW_SECONDS:
            return
        if self._held:
            log.warning(
                "%d more refused requests in the last minute (no valid bearer token), "
                "not logged one by one",
                self._held,
            )
        self._since, self._logged, self._held = self._clock(), 0, 0


class BearerAuth:
    """Pure ASGI middleware: an HTTP request reaches `app` only with a right bearer token.

    Everything else (no header, another scheme, a wrong or malformed token, the header
    twice) gets 401 with `WWW-Authenticate: Bearer` and never touches the app. Refusals
    are logged as `refusals` bounds them. A request let through carries its token's
    `Grant` in its scope (`vaults.GRANT_SCOPE_KEY`), and the token's label as the SDK's
    authenticated user, so that a session answers only the token that opened it."""

    def __init__(
        self, app: ASGIApp, token: str | Sequence[Token], refusals: RefusalLog | None = None
    ) -> None:
        self.app = app
        self.refusals = refusals or RefusalLog()
        tokens = [Token(token)] if isinstance(token, str) else list(token)
        if not tokens:
            raise LoreError("HTTP serving needs at least one bearer token.")
        # Digests of equal length, so the comparison does not even reveal the token's length.
        self._tokens = [
            (_digest(check_token(t.secret, "the server's settings").encode("ascii")), t.grant)
            for t in tokens
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        grant = self._authorised(scope["headers"]) if kind == "http" else None
        if kind == "lifespan":
            await self.app(scope, receive, send)
        elif grant is not None:
            scope[GRANT_SCOPE_KEY] = grant
            label = grant.label or "token"
            scope["user"] = AuthenticatedUser(
                AccessToken(token=label, client_id=label, scopes=[grant.role])
            )
            await self.app(scope, receive, send)
        elif kind == "http":
            await self._refuse(scope, send)
        else:  # a websocket (uvicorn runs with ws="none"): nothing here speaks it
            await send({"type": "websocket.close", "code": 1008})

    def _authorised(self, headers: Iterable[tuple[bytes, bytes]]) -> Grant | None:
        values = [value for name, value in headers if name == b"authorization"]
        if len(values) != 1:
            return None
        scheme, space, credential = values[0].partition(b" ")
        if scheme.lower() != b"bearer" or not space:
            return None
        digest = _digest(credential)
        found = None
        for known, grant in self._tokens:  # every one compared, whichever matches
            if hmac.compare_digest(digest, known) and found is None:
                found = grant
        return found

    async def _refuse(self, scope: Scope, send: Send) -> None:
        client = scope.get("client") or ("?", 0)
        self.refusals.refused(scope["method"], scope["path"], str(client[0]))
        body = json.dumps(
            {
                "error": "invalid_token",
                "error_description": "This lore-mcp server needs the header "
                "'Authorization: Bearer <token>' with the token it was started with "
                f"(${TOKEN_ENV} or --token-file).",
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b'Bearer realm="lore-mcp"'),
        ]
        await respond(send, 401, body, headers)


def _digest(secret: bytes) -> bytes:
    return hashlib.sha256(secret).digest()


def token_digest(token: str) -> bytes:
    """What a token is checked against: its digest, so that `same_token` compares values
    of one length and does not even reveal the token's."""
    return _digest(check_token(token, "the server's settings").encode("ascii"))


def same_token(given: bytes, digest: bytes) -> bool:
    """Whether `given` is the token of `digest`, compared in constant time."""
    return hmac.compare_digest(_digest(given), digest)


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


async def respond(
    send: Send, status: int, body: bytes = b"", headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """A whole response, straight from ASGI: its status and headers, its length, its body."""
    length = (b"content-length", str(len(body)).encode())
    await send({"type": "http.response.start", "status": status, "headers": [*headers, length]})
    await send({"type": "http.response.body", "body": body})
