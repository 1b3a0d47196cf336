"""The command line: `lore COMMAND` for people and scripts, and `lore-mcp`, which is
`lore serve`: the MCP server, on stdio or (with `--http`) over Streamable HTTP.

One parser serves both. `serve` runs here; every other command runs in `commands`.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from lore_mcp import __version__, commands, display_doctor
from lore_mcp.config import LOG_LEVELS, MIN_RESULT_CHARS, VAULT_ENV, setup_logging
from lore_mcp.errors import LoreError, UsageError
from lore_mcp.vault_config import default_config_path, read_config, vault_specs
from lore_mcp.vaults import VaultSpec

if TYPE_CHECKING:
    from lore_mcp.http import HttpOptions

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141
MAX_LIMIT = 1000
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

EPILOG = f"""\
The vault is --vault PATH, else --config FILE, else the {VAULT_ENV} environment variable,
else the first vault of the user's vaults.toml (`lore vaults` says where it is looked for);
a vault that file lists is also --vault NAME. `lore serve` takes --vault NAME=PATH more than
once: several vaults behind one server, the first the default.
Output: tables on a terminal, plain text when piped, one JSON document with --json.

exit status:
  0  success (doctor: no errors)
  1  the operation failed (the message is on stderr), or doctor found errors
  2  usage error: bad arguments, or no vault given
"""

DOCTOR_HELP = """\
Check the vault's health: the verdict and the counts first, then each kind of finding
(the first 20 of each; --all lists every one; --json gives them all).

errors (exit status 1):
  invalid UTF-8         files indexed only as far as they decode
  unindexed files       page files that could not be indexed at all
warnings (exit status 0, or 1 with --strict):
  unresolved links      links to placeholders, with the page and line they are written on
  ambiguous links       links that matched several pages, what they resolved to, the candidates
  loose links           links Obsidian will not follow (a slug form, a bare alias): what to write
  orphans               pages with no links in or out
  broken properties     frontmatter that does not parse, or would cost too much (YAML aliases)
  too many links        pages whose links after the first 20000 are not indexed
"""


# -- arguments --------------------------------------------------------------------------


def _number(low: int, high: int) -> Callable[[str], int]:
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


class _Parser(argparse.ArgumentParser):
    """argparse, with a suggestion for a misspelt option (`--vualt`: did you mean
    `--vault`?), and, for `lore-mcp`, the server's usage line on errors (`speaks_for`)."""

    speaks_for: argparse.ArgumentParser | None = None
    usages: list[str] = []  # noqa: RUF012  # the commands' usage lines: the options known

    def error(self, message: str) -> NoReturn:
        shown = self.speaks_for or self
        message += _suggestion(message, [shown.format_usage(), *self.usages])
        shown.print_usage(sys.stderr)
        shown.exit(EXIT_USAGE, f"{shown.prog}: error: {message}\n")


def _suggestion(message: str, usages: list[str]) -> str:
    """ " (did you mean X?)" for a misspelt option or command in an argparse error; the
    options known are those the usage lines show."""
    if "unrecognized arguments" in message:
        words = re.findall(r"(?<![\w-])(--?[\w-]+)", message.partition(":")[2])
        known = sorted({o for usage in usages for o in re.findall(r"(?<![\w-])(--[\w-]+)", usage)})
    elif choice := re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message):
        words, known = [choice[1]], re.findall(r"'([^']*)'", choice[2])
    else:
        return ""
    for word in words:
        close = difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.6)
        if close:
            return f" (did you mean {close[0]}?)"
    return ""


def build_parser(serve_prog: str = "lore serve") -> argparse.ArgumentParser:
    """`lore` and its commands. `serve_prog` names the server's usage line (`lore-mcp`
    when it is started by that name)."""
    parser = _Parser(
        prog="lore",
        description="A wiki vault of Markdown pages joined by [[wiki links]], from the shell.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"lore {__version__}")
    _common_options(parser, suppress=False)
    common = _Parser(add_help=False)
    _common_options(common, suppress=True)
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    def command(
        name: str, summary: str, description: str | None = None, prog: str | None = None
    ) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            parents=[common],
            help=summary,
            description=description or summary,
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            prog=prog,
        )

    limit = _number(1, MAX_LIMIT)
    p = command("index", "build or update the index, then summarise the vault")
    p.add_argument("vault_arg", nargs="?", metavar="VAULT", help="the vault (or --vault)")
    p = command("read", "print a page's file, byte for byte")
    p.add_argument("name")
    p.add_argument(
        "--version",
        type=_number(1, 2**31),
        help="print kept version N instead (1: the newest; see lore history)",
    )
    p = command("search", "full-text search, best first")
    p.add_argument("query")
    p.add_argument("--limit", type=limit, default=10, help="at most N hits (default 10)")
    p = command("titles", "find pages by title or slug")
    p.add_argument("query")
    p.add_argument("--limit", type=limit, default=20, help="at most N matches (default 20)")
    p = command("backlinks", "the lines in other pages that link to a page")
    p.add_argument("name")
    p.add_argument("--unlinked", action="store_true", help="also plain-text mentions")
    _listing_commands(command, limit)
    _page_writes(command)
    p = command("rename", "rename or move a page and rewrite the links to it")
    p.add_argument("name")
    p.add_argument("new_name", metavar="NEW", help="a new title, or folder/New Title")
    command("delete", "delete a page (its last version stays in the history)").add_argument("name")
    _history_commands(command)
    p = command("doctor", "check the vault's health", DOCTOR_HELP)
    p.add_argument("--strict", action="store_true", help="warnings count as errors")
    p.add_argument(
        "--all",
        action="store_true",
        help=f"list every finding (default: the first {display_doctor.ROWS} of each kind)",
    )
    p = command("log", "the audit log: every save, delete and rename, oldest first")
    p.add_argument(
        "--since",
        help="only writes since then: 30m, 1h, 2d, 1w, today, yesterday, or an ISO date or time",
    )
    p.add_argument("--slug", help="only writes that touched this page")
    p.add_argument("--limit", type=_number(1, 2**31), help="only the last N writes")
    p = command(
        "serve",
        "the MCP server on stdio, or over HTTP with --http (lore-mcp is the same)",
        "Serve a vault of Markdown pages joined by [[wiki links]] to an AI agent over MCP "
        "(stdio, or Streamable HTTP with --http).",
        prog=serve_prog,
    )
    _serving_options(p)
    p.add_argument("--version", action="version", version=f"lore-mcp {__version__}")
    if serve_prog == "lore-mcp":  # its errors speak of lore-mcp, not of lore
        parser.speaks_for = p
    _init_command(command)
    command("vaults", "the vaults --vault, --config or the config file give, the first the default")
    _ui_command(command)
    parser.usages = [sub_parser.format_usage() for sub_parser in sub.choices.values()]
    return parser


def _listing_commands(
    command: Callable[[str, str], argparse.ArgumentParser], limit: Callable[[str], int]
) -> None:
    """The commands that list pages and the link graph."""
    p = command("list", "pages by slug or by modification time, a page of them at a time")
    p.add_argument("folder", nargs="?", default="", help="only pages under this folder")
    p.add_argument(
        "--sort",
        choices=("slug", "modified"),
        default="slug",
        help="slug (default), or modified: the latest modified first",
    )
    p.add_argument("--placeholders", action="store_true", help="include placeholders")
    p.add_argument("--offset", type=_number(0, 2**31), default=0, help="skip N pages")
    p.add_argument("--limit", type=limit, default=100, help="at most N pages (default 100)")
    p = command("graph", "a page's neighbourhood, or without a name the vault's shape")
    p.add_argument("name", nargs="?")
    p.add_argument("--depth", type=_number(1, 3), default=1, help="hops, 1 to 3 (default 1)")
    p.add_argument(
        "--offset", type=_number(0, 2**31), default=0, help="skip N rows of each list (the shape)"
    )
    p.add_argument(
        "--format",
        choices=("json", "graphml", "dot", "mermaid"),
        help="write every node and edge (of the vault, or of the neighbourhood) in this "
        "format for other tools, instead of the shape",
    )


def _init_command(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    p = command(
        "init",
        "make a folder a vault: create it if it is missing and build its index",
        "Make a folder a vault: create it (and its parents) if missing, build its index, and "
        "print how to serve it to an MCP client.",
    )
    p.add_argument("vault_arg", nargs="?", metavar="VAULT", help="the folder (or --vault)")


def _ui_command(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    p = command(
        "ui",
        "a local web app for people: pages, the graph, and what changed (with restore)",
        "Serve a web app on 127.0.0.1 showing the vault's pages, its link graph and the\n"
        "audit log as a timeline, each change with its diff and a restore of any kept\n"
        "version. It prints its address with a random token; nothing answers without it.",
    )
    p.add_argument(
        "--port",
        type=_number(0, 65535),
        default=8766,
        help="the port to listen on (default: 8766; 0 picks a free one)",
    )
    p.add_argument("--open", action="store_true", help="open the address in a browser")
    p.add_argument("--read-only", action="store_true", help="refuse every change (no restore)")
    p.add_argument(
        "--no-watch", action="store_true", help="do not watch the folder for outside edits"
    )


def _history_commands(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """The commands that list and restore the kept versions of a page (`lore read
    --version N` reads one)."""
    command("history", "the kept versions of a page, newest first").add_argument("name")
    p = command("restore", "put a kept version of a page back (through a save)")
    p.add_argument("name")
    p.add_argument("--version", type=_number(1, 2**31), default=1, help="which one (1: the newest)")


def _page_writes(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """The commands that write a page with the content on stdin."""
    p = command("save", "create or overwrite a page with the content on stdin")
    p.add_argument("name")
    p.add_argument("--section", metavar="HEADING", help="replace only the body under HEADING")
    p = command("append", "add the content on stdin at the end of a page (made if missing)")
    p.add_argument("name")
    p = command("prepend", "add the content on stdin at the start of a page, after its frontmatter")
    p.add_argument("name")
    p = command("edit", "replace the one occurrence of TEXT in a page with the content on stdin")
    p.add_argument("name")
    p.add_argument("--old", required=True, metavar="TEXT", help="the exact text (found once)")


def _common_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
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


def _serving_options(parser: argparse.ArgumentParser) -> None:
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
        type=_number(MIN_RESULT_CHARS, 2**31),
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
        type=_number(0, 65535),
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
        type=_number(1, 1_000_000),
        metavar="N",
        help="refuse new sessions (503) while N are open (default: 200)",
    )


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

    tokens = http.load_tokens(args.token_file)
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
