"""What stands before every request of the web UI: the token, the host and, for a
change, the origin.

The UI listens on the loopback address, but any web page the user opens could send
requests there. So nothing answers without the token the URL was printed with: the
first visit brings it as `?token=`, which is swapped for a cookie (HttpOnly,
SameSite=Strict, named with the port) and a redirect to the same address without it;
later requests carry the cookie, or the token in the `X-Lore-Token` header. The token is
compared as the HTTP door compares its bearer token (`lore_mcp.bearer.same_token`). The
`Host` must be a loopback name, so a DNS-rebound name reaches nothing. A request that
changes the vault (any method but GET and HEAD) must also come from the UI's own pages:
its `Origin` must be the address it was sent to (or, without one, `Sec-Fetch-Site` must
say `same-origin`). Everything refused gets 403 and touches nothing.
"""

from __future__ import annotations

import logging
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send

from lore_mcp.bearer import respond, same_token, token_digest
from lore_mcp.http import is_loopback

log = logging.getLogger(__name__)

COOKIE = "lore_ui_token"  # and the port: browsers keep one cookie jar for all ports of a host
HEADER = b"x-lore-token"
SAFE_METHODS = frozenset({"GET", "HEAD"})


class Guard:
    """Pure ASGI middleware: a request reaches `app` only with the token, a loopback
    `Host` and, unless it only reads, its own origin."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._digest = token_digest(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if not _loopback_host(host):
            await _refuse(send, "this address is not served (the UI answers on loopback only)")
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if scope["method"] in SAFE_METHODS and self._matches(query.get("token", "")):
            await _enter(scope, send, query)
            return
        if not self._matches(_cookie(headers, host) or headers.get(HEADER.decode(), "")):
            await _refuse(send, "open the address `lore ui` printed, with its token")
            return
        if scope["method"] not in SAFE_METHODS and not _same_origin(headers, host):
            await _refuse(send, "a change must come from the UI's own pages")
            return
        await self.app(scope, receive, send)

    def _matches(self, given: str) -> bool:
        return bool(given) and same_token(given.encode("utf-8", "surrogateescape"), self._digest)


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


def _loopback_host(host: str) -> bool:
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else ""
    else:
        name = host.split(":", 1)[0]
    return bool(name) and is_loopback(name)


def cookie_name(host: str) -> str:
    """The cookie of the UI at `host`: one per port, so that two UIs on one machine do
    not overwrite each other's."""
    port = host.rpartition(":")[2] if not host.endswith("]") else ""
    return f"{COOKIE}_{port}" if port.isdigit() else COOKIE


def _cookie(headers: dict[str, str], host: str) -> str:
    jar = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header is no token
        return ""
    morsel = jar.get(cookie_name(host))
    return "" if morsel is None else morsel.value


def _same_origin(headers: dict[str, str], host: str) -> bool:
    origin = headers.get("origin")
    if origin is not None:
        return origin == f"http://{host}"
    return headers.get("sec-fetch-site") == "same-origin"


async def _enter(scope: Scope, send: Send, query: dict[str, str]) -> None:
    """The token from the URL becomes a cookie; the browser goes on without it in the
    address bar (and so in its history)."""
    token = query.pop("token")
    rest = urlencode(query)
    location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
    host = _headers(scope).get("host", "")
    cookie = f"{cookie_name(host)}={token}; HttpOnly; SameSite=Strict; Path=/"
    headers = [
        (b"location", location.encode("utf-8")),
        (b"set-cookie", cookie.encode("latin-1")),
        (b"cache-control", b"no-store"),
    ]
    await respond(send, 303, headers=headers)


async def _refuse(send: Send, why: str) -> None:
    log.info("refused a request: %s", why)
    body = f"403 Forbidden: {why}.\n".encode()
    await respond(send, 403, body, [(b"content-type", b"text/plain; charset=utf-8")])
