"""Command line entry points: `lore-mcp` runs the stdio MCP server over one vault.

Logging goes to stderr only; stdout carries nothing but protocol messages. The MCP SDK
and the engine are imported only when a server actually starts, so `--help` and
argument errors are quick.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from lore_mcp import __version__
from lore_mcp.errors import LoreError

VAULT_ENV = "LORE_VAULT"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET_LOGGERS = ("markdown_it", "watchdog", "asyncio")


def main(argv: Sequence[str] | None = None) -> None:
    """`lore-mcp --vault PATH [--no-watch] [--log-level LEVEL]`: serve a vault over stdio."""
    parser = _parser()
    args = parser.parse_args(argv)
    vault = args.vault or os.environ.get(VAULT_ENV, "").strip()
    if not vault:
        parser.error(f"no vault given: pass --vault PATH or set {VAULT_ENV}")
    if not Path(vault).expanduser().is_dir():
        parser.error(f"the vault {vault!r} is not a folder")
    try:
        serve(Path(vault), watch=not args.no_watch, log_level=args.log_level)
    except LoreError as exc:
        print(f"lore-mcp: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None


def serve(vault: Path, watch: bool = True, log_level: str = "INFO") -> None:
    """Serve `vault` over stdio until stdin closes. Raises `LoreError` when the vault
    cannot be opened. `lore serve` calls this too."""
    setup_logging(log_level)
    from lore_mcp import vault_ops
    from lore_mcp.server import build_server

    state = vault_ops.open_vault(vault, scan=False)
    logging.getLogger(__name__).info(
        "serving %s over stdio (watch %s)", state.root, "on" if watch else "off"
    )
    build_server(state, watch=watch).run("stdio")


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
        "agent over MCP (stdio).",
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
    parser.add_argument("--version", action="version", version=f"lore-mcp {__version__}")
    return parser
