"""The command line: `lore COMMAND` for people and scripts, and `lore-mcp`, which is
`lore serve`: the MCP server, on stdio or (with `--http`) over Streamable HTTP.

One parser serves both (it is built in `cli_parser`). `serve` runs here; every other
command runs in `commands`.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lore_mcp import commands
from lore_mcp.cli_parser import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    build_parser,
)
from lore_mcp.config import setup_logging
from lore_mcp.errors import LoreError, UsageError
from lore_mcp.vault_config import default_config_path, read_config, vault_specs
from lore_mcp.vaults import VaultSpec

if TYPE_CHECKING:
    from lore_mcp.http import HttpOptions

# Engine messages are written for the agent and name its tools; people get commands.
TOOL_COMMANDS = {
    "read_page": "lore read",
    "save_page": "lore save",
    "delete_page": "lore delete",
    "rename_page": "lore rename",
    "list_pages": "lore list",
    "search_titles": "lore titles",
    "get_backlinks": "lore backlinks",
    "get_graph": "lore graph",
}
_TOOL_NAME = re.compile(r"\b(" + "|".join(sorted(TOOL_COMMANDS, key=len, reverse=True)) + r")\b")


# -- arguments --------------------------------------------------------------------------


def _vault_given_once(argv: Sequence[str]) -> None:
    """Refuse two different `--vault` values to a command that works on one vault (the
    server takes several, `--vault NAME=PATH` each)."""
    if "serve" in argv or "vaults" in argv:
        return
    given = [
        argv[i + 1] if arg == "--vault" and i + 1 < len(argv) else arg.partition("=")[2]
        for i, arg in enumerate(argv)
        if arg == "--vault" or arg.startswith("--vault=")
    ]
    if len({str(Path(value)) for value in given}) > 1:
        raise UsageError(f"--vault was given twice ({given[0]!r} and {given[-1]!r}); give one")


def _vault_path(args: argparse.Namespace) -> Path:
    """The one vault a command other than `serve` works on: VAULT, else the first of
    the vaults given (see `_specs`); a bare --vault NAME picks one the config lists."""
    positional = getattr(args, "vault_arg", None)
    given = args.vault or []
    if positional and given and Path(positional) != Path(given[-1]):
        raise UsageError("give the vault once: as VAULT or as --vault, not both")
    if positional:
        raw = positional
    elif (picked := _configured(given, args.config)) is not None:
        raw = str(picked.root)
    else:
        raw = str(_specs(args, given[-1:])[0].root)
    if not Path(raw).expanduser().is_dir() and args.command != "init":
        missing = not Path(raw).expanduser().exists()
        raise UsageError(
            f"the vault {raw!r} "
            + (f"does not exist; `lore init {raw}` makes it" if missing else "is not a folder")
        )
    return Path(raw)


def _configured(given: list[str], config: Path | None) -> VaultSpec | None:
    """The vault a bare `--vault NAME` names in the config file, when it is no folder."""
    if len(given) != 1 or "=" in given[0] or Path(given[0]).expanduser().exists():
        return None
    found = config or default_config_path()
    if not found.is_file():
        return None
    named = {spec.name.lower(): spec for spec in read_config(found)}
    return named.get(given[0].lower())


def _specs(args: argparse.Namespace, given: Sequence[str] | None = None) -> list[VaultSpec]:
    """The vaults --vault, --config, $LORE_VAULT or the user's config file give."""
    read_only = ["*"] if getattr(args, "read_only", False) else []
    read_only += getattr(args, "read_only_vault", [])
    vaults = (args.vault or []) if given is None else given
    return vault_specs(vaults, args.config, read_only=read_only)


# -- running ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, *, serve_prog: str = "lore serve") -> int:
    """Run one `lore` command; returns the exit status."""
    name = serve_prog.split(maxsplit=1)[0]
    try:
        _vault_given_once(sys.argv[1:] if argv is None else argv)
        args = build_parser(serve_prog).parse_args(argv)
        if args.command == "serve":
            return _serve(args)
        if args.command == "vaults":
            commands.list_vaults(_specs(args), default_config_path(), as_json=args.json)
            return EXIT_OK
        if args.command == "ui":
            commands.run_ui(args, _vault_path(args))
            return EXIT_OK
        return EXIT_OK if commands.run(args, _vault_path(args)) else EXIT_FAILED
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except UsageError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LoreError as exc:
        print(f"{name}: {_for_people(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def lore_main() -> None:
    """The `lore` command."""
    raise SystemExit(main())


def mcp_main(argv: Sequence[str] | None = None) -> None:
    """The `lore-mcp` command: `lore serve` by another name."""
    args = sys.argv[1:] if argv is None else list(argv)
    raise SystemExit(main(["serve", *args], serve_prog="lore-mcp"))


def _for_people(message: str) -> str:
    """An engine message with its tool names replaced by the matching commands."""
    return _TOOL_NAME.sub(lambda m: f"`{TOOL_COMMANDS[m.group(1)]}`", message)


def _serve(args: argparse.Namespace) -> int:
    specs = _specs(args)
    default = specs[0].root
    if not default.expanduser().is_dir():  # the others fail only the calls that name them
        missing = not default.expanduser().exists()
        raise UsageError(
            f"the vault {str(default)!r} "
            + (f"does not exist; `lore init {default}` makes it" if missing else "is not a folder")
        )
    http = _http_options(args)
    setup_logging(args.log_level or ("INFO" if http else "WARNING"))
    from lore_mcp.server import build_server
    from lore_mcp.vaults import Vaults

    vaults = Vaults(specs, watch=not args.no_watch, readers=commands.readers())
    logging.getLogger(__name__).info(
        "serving %s over %s (watch %s)",
        ", ".join(f"{spec.name}={spec.root}" for spec in specs),
        "HTTP" if http else "stdio",
        "off" if args.no_watch else "on",
    )
    kwargs = {} if args.max_result_chars is None else {"max_result_chars": args.max_result_chars}
    server = build_server(vaults, watch=not args.no_watch, **kwargs)
    if http is None:
        from lore_mcp.server import run_stdio

        run_stdio(server, vaults)
    else:
        from lore_mcp.http import run_http

        run_http(server, http)
    return EXIT_OK


def _http_options(args: argparse.Namespace) -> HttpOptions | None:
    """The HTTP settings, or None to serve over stdio. Raises `LoreError` when there is
    no usable token or the host is refused."""
    flags = ("host", "port", "token_file", "session_timeout", "max_sessions")
    if not args.http:
        if any(getattr(args, flag) is not None for flag in flags) or args.allow_remote:
            raise UsageError(
                "--host, --port, --token-file, --allow-remote, --session-timeout and "
                "--max-sessions need --http"
            )
        return None
    from lore_mcp import http
    from lore_mcp.tokens import load_tokens

    tokens = load_tokens(args.token_file)
    return http.HttpOptions(
        token=tokens[0].secret,
        tokens=tokens,
        host=args.host or http.DEFAULT_HOST,
        port=http.DEFAULT_PORT if args.port is None else args.port,
        allow_remote=args.allow_remote,
        session_timeout=args.session_timeout or http.DEFAULT_SESSION_TIMEOUT,
        max_sessions=args.max_sessions or http.DEFAULT_MAX_SESSIONS,
    )


def _silence_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so exit does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
