"""The bearer check of the HTTP door, as pure ASGI middleware in front of the MCP app.

A request reaches the app only with the header `Authorization: Bearer <token>` and a
token the server was started with (see `tokens`), compared in constant time by digest;
anything else is answered 401. A request let through carries its token's `Grant` in its
ASGI scope. Refusals are logged a few a minute, the rest counted (`RefusalLog`).
`respond` writes a whole response straight from ASGI, for this check and the web UI's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Receive, Scope, Send

from lore_mcp.errors import LoreError
from lore_mcp.tokens import TOKEN_ENV, Token, check_token
from lore_mcp.vaults import GRANT_SCOPE_KEY, Grant

# The HTTP door's logger, as `http.announce` writes to: its refusals are lines of its log.
log = logging.getLogger("lore_mcp.http")

REFUSALS_LOGGED = 5  # refused requests logged one by one per minute; the rest are counted
REFUSAL_WINDOW_SECONDS = 60.0


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


async def respond(
    send: Send, status: int, body: bytes = b"", headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """A whole response, straight from ASGI: its status and headers, its length, its body."""
    length = (b"content-length", str(len(body)).encode())
    await send({"type": "http.response.start", "status": status, "headers": [*headers, length]})
    await send({"type": "http.response.body", "body": body})
