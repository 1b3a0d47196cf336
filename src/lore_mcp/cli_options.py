"""The command line's option types (a whole number in a range, a time such as 30m) and
the options more than one parser takes: `--vault`, `--config`, `--json` and `--log-level`,
taken before or after the command, and the server's (`lore serve`, `lore-mcp`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

from lore_mcp.config import LOG_LEVELS, MIN_RESULT_CHARS, VAULT_ENV


def number(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low} and {high}")
        return value

    parse.__name__ = "number"
    return parse


def _duration(text: str) -> float:
    """Seconds, written as 90, 90s, 30m or 2h."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text.lower())
    if match is None or float(match[1]) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time such as 90s, 30m or 2h")
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match[2]]


def common_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """--vault, --json and --log-level, taken before or after the command
    (`lore --vault V list`, `lore list --vault V`). On the commands their defaults are
    suppressed, so that they do not override what was given before the command."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--vault",
        metavar="[NAME=]PATH",
        action="append",
        default=default(None),
        help=f"the vault folder (default: ${VAULT_ENV}); serve: NAME=PATH, repeatable, "
        "names one of several vaults (the first is the default)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        default=default(None),
        help="the vaults listed in a TOML file (default: vaults.toml in the user's config "
        "folder, when there is no --vault)",
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print one JSON document"
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=default(None),
        help="log to stderr from this level (default: WARNING; INFO with --http)",
    )


def serving_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-watch", action="store_true", help="do not watch the folder for outside edits"
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="offer no write tools (save, delete, rename); no vault is ever modified",
    )
    parser.add_argument(
        "--read-only-vault",
        action="append",
        metavar="NAME",
        default=[],
        help="serve this vault read-only (writes to it are refused); repeatable",
    )
    parser.add_argument(
        "--max-result-chars",
        type=number(MIN_RESULT_CHARS, 2**31),
        metavar="N",
        help="at most N characters in one tool result, as text and as JSON; a larger "
        "result is shrunk and says how to get the rest (default: 40000, about 10k tokens)",
    )
    group = parser.add_argument_group(
        "HTTP", "serve over Streamable HTTP instead of stdio; every request needs the token"
    )
    group.add_argument("--http", action="store_true", help="serve over HTTP at /mcp")
    group.add_argument("--host", help="the address to listen on (default: 127.0.0.1)")
    group.add_argument(
        "--port",
        type=number(0, 65535),
        help="the port to listen on (default: 8765; 0 picks a free one)",
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
    group.add_argument(
        "--session-timeout",
        type=_duration,
        metavar="TIME",
        help="close a session idle this long, e.g. 90s, 30m, 2h (default: 30m)",
    )
    group.add_argument(
        "--max-sessions",
        type=number(1, 1_000_000),
        metavar="N",
        help="refuse new sessions (503) while N are open (default: 200)",
    )
