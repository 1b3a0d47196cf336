"""The web UI as one Starlette app, and `serve`, which runs it on the loopback address.

`build_app` takes an opened `AppState`, so any door that opened a vault can show it.
Every asset (templates, script, style) is in this package: the UI works offline. The
app answers nothing without its token (see `guard`), and its pages may run only its
own script and load only its own images (a Content-Security-Policy on every answer).
"""

from __future__ import annotations

import logging
import secrets
import sys
import threading
import webbrowser
from collections.abc import Callable

import uvicorn
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lore_mcp import __version__
from lore_mcp import vault_ops as engine
from lore_mcp.http import DEFAULT_HOST, bind, uvicorn_config
from lore_mcp.ui import markup
from lore_mcp.ui.guard import Guard
from lore_mcp.ui.routes import ROUTES, Ui
from lore_mcp.ui.views import Attachments

log = logging.getLogger(__name__)

DEFAULT_PORT = 8766
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


class _Headers:
    """Pure ASGI middleware adding the security headers to every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    (b"content-security-policy", POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    # not no-referrer: under it a form's Origin is "null", and the guard
                    # takes a change only from the UI's own origin
                    (b"referrer-policy", b"same-origin"),
                    (b"cache-control", b"no-store"),
                ]
            await send(message)

        await self.app(scope, receive, sending)


def templates() -> Jinja2Templates:
    env = Environment(
        loader=PackageLoader("lore_mcp.ui", "templates"),
        autoescape=select_autoescape(("html",)),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals |= {"page_url": markup.page_url, "version": __version__}
    return Jinja2Templates(env=env)


def build_app(vault: engine.AppState, token: str, *, read_only: bool = False) -> Starlette:
    """The UI of the opened `vault`, answering only requests that carry `token`;
    `read_only` refuses every change (the vault may also be opened read-only)."""
    app = Starlette(
        routes=[
            *ROUTES,
            Mount("/static", StaticFiles(packages=[("lore_mcp.ui", "static")]), name="static"),
        ],
        middleware=[Middleware(Guard, token=token), Middleware(_Headers)],
    )
    app.state.ui = Ui(
        vault, templates(), Attachments(vault.root, vault.ignores), read_only or vault.read_only
    )
    return app


def new_token() -> str:
    return secrets.token_urlsafe(32)


def serve(
    vault: engine.AppState,
    *,
    port: int = DEFAULT_PORT,
    read_only: bool = False,
    open_browser: bool = False,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the UI on 127.0.0.1 until Ctrl-C; the address with its token goes to
    `announce` (stdout by default), and with `open_browser` to the browser."""
    token = new_token()
    sock = bind(DEFAULT_HOST, port)
    url = f"http://{DEFAULT_HOST}:{sock.getsockname()[1]}/?token={token}"
    (announce or _print)(url)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, (url,)).start()
    config = uvicorn_config(build_app(vault, token, read_only=read_only), lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


def _print(url: str) -> None:
    print(f"lore ui: open {url}", flush=True)
    print("lore ui: Ctrl-C stops it", file=sys.stderr, flush=True)


class Background:
    """The UI served from a thread on a free loopback port, for as long as the `with`
    lasts (the browser tests and the benchmark); `url` is its address, token included."""

    def __init__(self, vault: engine.AppState, *, read_only: bool = False) -> None:
        self.token = new_token()
        self._sock = bind(DEFAULT_HOST, 0)
        self.base = f"http://{DEFAULT_HOST}:{self._sock.getsockname()[1]}"
        self.url = f"{self.base}/?token={self.token}"
        config = uvicorn_config(build_app(vault, self.token, read_only=read_only), lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="lore-ui"
        )

    def __enter__(self) -> Background:
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the UI server stopped before it started")
            self._thread.join(0.01)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.should_exit = True
        self._thread.join()
        self._sock.close()
