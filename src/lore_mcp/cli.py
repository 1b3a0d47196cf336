"""Command line entry points: `lore-mcp` runs the MCP server over one vault, on stdio or,
with `--http`, over Streamable HTTP behind a bearer token (see `lore_mcp.http`).

Logging goes to stderr only; stdout carries nothing but protocol messages. The MCP SDK
and the engine are imported only when a server actually starts, so `--help` and
argument errors are quick.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lore_mcp import __version__
from lore_mcp.errors import LoreError

if TYPE_CHECKING:
    from lore_mcp.http import HttpOptions

VAULT_ENV = "LORE_VAULT"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET_LOGGERS = ("markdown_it", "watchdog", "asyncio")


def main(argv: Sequence[str] | None = None) -> None:
    """`lore-mcp --vault PATH [--no-watch] [--log-level LEVEL] [--http ...]`: serve a vault."""
    parser = _parser()
    args = parser.parse_args(argv)
    vault = args.vault or os.environ.get(VAULT_ENV, "").strip()
    if not vault:
        parser.error(f"no vault given: pass --vault PATH or set {VAULT_ENV}")
    if not Path(vault).expanduser().is_dir():
        parser.error(f"the vault {vault!r} is not a folder")
    try:
        http = http_options(parser, args)
        serve(
            Path(vault),
            watch=not args.no_watch,
            log_level=args.log_level,
            http=http,
            read_only=args.read_only,
            max_result_chars=args.max_result_chars,
        )
    except LoreError as exc:
        print(f"lore-mcp: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None


def serve(
    vault: Path,
    watch: bool = True,
    log_level: str = "INFO",
    http: HttpOptions | None = None,
    *,
    read_only: bool = False,
    max_result_chars: int | None = None,
) -> None:
    """Serve `vault` over stdio until stdin closes, or with `http` over HTTP until SIGINT
    or SIGTERM. Raises `LoreError` when the vault cannot be opened or the port cannot be
    bound. With `read_only`, no write tools are offered. `lore serve` calls this too."""
    setup_logging(log_level)
    with _starting():
        from lore_mcp import budget, vault_ops
        from lore_mcp.server import build_server

        state = vault_ops.open_vault(vault, scan=False, read_only=read_only)
        logging.getLogger(__name__).info(
            "serving %s over %s (watch %s)",
            state.root,
            "stdio" if http is None else "HTTP",
            "on" if watch else "off",
        )
        limit = max_result_chars or budget.DEFAULT_MAX_RESULT_CHARS
        server = build_server(state, watch=watch, max_result_chars=limit, after_index=_settled)
    if http is None:
        from lore_mcp.stdio import run_stdio

        run_stdio(server)
    else:
        from lore_mcp.http import run_http

        run_http(server, http)


@contextmanager
def _starting() -> Iterator[None]:
    """Start-up without the cycle collector: importing the SDK builds a few hundred
    thousand objects and hardly any garbage cycles, yet set off full collections over
    all of them (two, about 70 ms, before a warm start's first answer). What start-up
    built lives as long as the server, so it is then frozen: later collections skip it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _settled() -> None:
    """After the first index pass: the graph and the slug sets it built live as long as
    the server, so they are frozen too. A full collection otherwise walks them all (at
    100k pages some 350 000 objects, 180-280 ms with the server stalled); the pass leaves
    no garbage cycles behind to be frozen with them."""
    gc.freeze()


def setup_logging(level: str = "INFO") -> None:
    """Log to stderr at `level` (DEBUG, INFO, WARNING or ERROR)."""
    name = level.upper()
    if name not in LOG_LEVELS:
        raise LoreError(f"Unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}.")
    logging.basicConfig(stream=sys.stderr, level=name, format=LOG_FORMAT)
    logging.getLogger().setLevel(name)
    for chatty in QUIET_LOGGERS:  # their DEBUG output is per token or per event
        logging.getLogger(chatty).setLevel(max(logging.INFO, logging.getLevelName(name)))


def lore_main(argv: Sequence[str] | None = None) -> None:
    """The `lore` command; its subcommands live in `lore_mcp.commands`."""
    commands = importlib.import_module("lore_mcp.commands")
    raise SystemExit(commands.main(argv))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lore-mcp",
        description="Serve a vault of Markdown pages joined by [[wiki links]] to an AI "
        "agent over MCP (stdio, or Streamable HTTP with --http).",
    )
    parser.add_argument(
        "--vault",
        metavar="PATH",
        help=f"the vault folder (default: ${VAULT_ENV})",
    )
    parser.add_argument(
        "--no-watch",
        action="store_true",
        help="do not watch the folder for edits made outside the server",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        help="how much to log to stderr (default: INFO)",
    )
    add_serving_arguments(parser)
    add_http_arguments(parser)
    parser.add_argument("--version", action="version", version=f"lore-mcp {__version__}")
    return parser


def add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    """--read-only and --max-result-chars; `lore serve` takes them too."""
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="offer no write tools (save, delete, rename); the vault is never modified",
    )
    parser.add_argument(
        "--max-result-chars",
        type=_result_chars,
        metavar="N",
        help="at most N characters in one tool result, as text and as JSON; a larger "
        "result is shrunk and says how to get the rest (default: 40000, about 10k tokens)",
    )


def _result_chars(text: str) -> int:
    from lore_mcp.budget import MIN_RESULT_CHARS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < MIN_RESULT_CHARS:
        raise argparse.ArgumentTypeError(f"{value} is below the minimum, {MIN_RESULT_CHARS}")
    return value


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    """--http and its options; `lore serve` takes them too."""
    group = parser.add_argument_group(
        "HTTP", "serve over Streamable HTTP instead of stdio; every request needs the token"
    )
    group.add_argument("--http", action="store_true", help="serve over HTTP at /mcp")
    group.add_argument("--host", help="the address to listen on (default: 127.0.0.1)")
    group.add_argument(
        "--port", type=int, help="the port to listen on (default: 8765; 0 picks a free one)"
    )
    group.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="read the bearer token from FILE (default: $LORE_MCP_TOKEN); 16+ characters",
    )
    group.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host that is not a loopback address (other machines can connect)",
    )


def http_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> HttpOptions | None:
    """The HTTP settings from the command line, or None to serve over stdio. Raises
    `LoreError` when there is no usable token or the host is refused."""
    given = [flag for flag in ("host", "port", "token_file") if getattr(args, flag) is not None]
    if not args.http:
        if given or args.allow_remote:
            parser.error("--host, --port, --token-file and --allow-remote need --http")
        return None
    from lore_mcp import http

    port = http.DEFAULT_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        parser.error(f"--port {port} is not a port number (0-65535)")
    return http.HttpOptions(
        token=http.load_token(args.token_file),
        host=args.host or http.DEFAULT_HOST,
        port=port,
        allow_remote=args.allow_remote,
    )
