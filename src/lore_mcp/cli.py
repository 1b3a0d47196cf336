"""The command line: `lore COMMAND` for people and scripts, and `lore-mcp`, which is
`lore serve`: the MCP server, on stdio or (with `--http`) over Streamable HTTP.

One parser serves both. Each command opens the vault (bringing its index up to date),
calls one engine operation, and prints the result: tables on a terminal, the same as
plain text when piped, one JSON document with `--json`. Errors go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from lore_mcp import __version__, audit, display
from lore_mcp import vault as engine
from lore_mcp.config import LOG_LEVELS, MIN_RESULT_CHARS, VAULT_ENV, setup_logging
from lore_mcp.errors import InvalidArgumentError, LoreError
from lore_mcp.models import DoctorReport, PageView

if TYPE_CHECKING:
    from lore_mcp.http import HttpOptions

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141
WRITES = frozenset({"save", "append", "prepend", "edit", "rename", "delete", "restore"})
STDIN_WRITES = frozenset({"save", "append", "prepend", "edit"})
CLI_DOOR = audit.Door("cli", client_name="lore", client_version=__version__)
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
The vault is --vault PATH, else the {VAULT_ENV} environment variable.
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
  slug collisions       two files with one slug; the one that sorts second is not indexed
  invalid UTF-8         files indexed only as far as they decode
  unindexed files       page files that could not be indexed at all
warnings (exit status 0, or 1 with --strict):
  unresolved links      links to placeholders, with the page and line they are written on
  ambiguous links       links that matched several pages, what they resolved to, the candidates
  orphans               pages with no links in or out
"""


class UsageError(LoreError):
    """Arguments that parse but make no sense; exit status 2."""


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


def build_parser(serve_prog: str = "lore serve") -> argparse.ArgumentParser:
    """`lore` and its commands. `serve_prog` names the server's usage line (`lore-mcp`
    when it is started by that name)."""
    parser = argparse.ArgumentParser(
        prog="lore",
        description="A wiki vault of Markdown pages joined by [[wiki links]], from the shell.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"lore {__version__}")
    _common_options(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _common_options(common, suppress=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    command("read", "print a page's file, byte for byte").add_argument("name")
    p = command("search", "full-text search, best first")
    p.add_argument("query")
    p.add_argument("--limit", type=limit, default=10, help="at most N hits (default 10)")
    p = command("titles", "find pages by title or slug")
    p.add_argument("query")
    p.add_argument("--limit", type=limit, default=20, help="at most N matches (default 20)")
    p = command("backlinks", "the lines in other pages that link to a page")
    p.add_argument("name")
    p.add_argument("--unlinked", action="store_true", help="also plain-text mentions")
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
    _page_writes(command)
    p = command("rename", "rename or move a page and rewrite the links to it")
    p.add_argument("name")
    p.add_argument("new_name", metavar="NEW", help="a new title, or folder/New Title")
    command("delete", "delete a page (its last version stays in the history)").add_argument("name")
    command("history", "the kept versions of a page, newest first").add_argument("name")
    p = command("restore", "put a kept version of a page back (through a save)")
    p.add_argument("name")
    p.add_argument("--version", type=_number(1, 2**31), default=1, help="which one (1: the newest)")
    p = command("doctor", "check the vault's health", DOCTOR_HELP)
    p.add_argument("--strict", action="store_true", help="warnings count as errors")
    p.add_argument(
        "--all",
        action="store_true",
        help=f"list every finding (default: the first {display.DOCTOR_ROWS} of each kind)",
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
    return parser


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
        metavar="PATH",
        default=default(None),
        help=f"the vault folder (default: ${VAULT_ENV})",
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
        help="offer no write tools (save, delete, rename); the vault is never modified",
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


def _vault_path(args: argparse.Namespace) -> Path:
    positional = getattr(args, "vault_arg", None)
    if positional and args.vault and Path(positional) != Path(args.vault):
        raise UsageError("give the vault once: as VAULT or as --vault, not both")
    raw = positional or args.vault or os.environ.get(VAULT_ENV, "").strip()
    if not raw:
        raise UsageError(f"no vault given: pass --vault PATH or set {VAULT_ENV}")
    if not Path(raw).expanduser().is_dir():
        raise UsageError(f"the vault {raw!r} is not a folder")
    return Path(raw)


# -- running ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, *, serve_prog: str = "lore serve") -> int:
    """Run one `lore` command; returns the exit status."""
    name = serve_prog.split(maxsplit=1)[0]
    try:
        args = build_parser(serve_prog).parse_args(argv)
        if args.command == "serve":
            return _serve(args)
        with _logging_to_stderr(args.log_level or "WARNING"):
            return _run(args)
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
    vault = _vault_path(args)
    http = _http_options(args)
    setup_logging(args.log_level or ("INFO" if http else "WARNING"))
    from lore_mcp.server import build_server

    opened = engine.open_vault(vault, scan=False, read_only=args.read_only, readers=_readers())
    logging.getLogger(__name__).info(
        "serving %s over %s (watch %s)",
        opened.root,
        "HTTP" if http else "stdio",
        "off" if args.no_watch else "on",
    )
    kwargs = {} if args.max_result_chars is None else {"max_result_chars": args.max_result_chars}
    server = build_server(opened, watch=not args.no_watch, **kwargs)
    if http is None:
        from lore_mcp.server import run_stdio

        run_stdio(server, opened)
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

    return http.HttpOptions(
        token=http.load_token(args.token_file),
        host=args.host or http.DEFAULT_HOST,
        port=http.DEFAULT_PORT if args.port is None else args.port,
        allow_remote=args.allow_remote,
        session_timeout=args.session_timeout or http.DEFAULT_SESSION_TIMEOUT,
        max_sessions=args.max_sessions or http.DEFAULT_MAX_SESSIONS,
    )


def _run(args: argparse.Namespace) -> int:
    vault = _vault_path(args)
    content = _stdin_text(args.command) if args.command in STDIN_WRITES else None
    if args.command == "log":
        since = None if args.since is None else _since(args.since)
        result: BaseModel | _Source
        result = audit.read_log(vault.expanduser(), since, args.slug, args.limit)
    elif args.command == "index":
        opened = engine.open_vault(vault, scan=False, readers=_readers())
        try:
            with _progress(always=True) as progress:
                result = engine.index_vault(opened, progress)
        finally:
            opened.close()
    else:
        with _progress(always=False) as progress:
            opened = engine.open_vault(
                vault, read_only=args.command not in WRITES, progress=progress, readers=_readers()
            )
        try:
            result = _call(opened, args, content)
        finally:
            opened.close()
    _print(result, args.json, every_row=getattr(args, "all", False))
    if isinstance(result, DoctorReport) and (result.errors or (args.strict and result.warnings)):
        return EXIT_FAILED
    return EXIT_OK


def _readers() -> int:
    """Worker processes that read pages in a pass over many files: one for each CPU this
    process may use but one, three at most."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(0, min((cpus or 1) - 1, 3))


def _since(text: str) -> datetime:
    try:
        return audit.parse_since(text)
    except InvalidArgumentError as exc:
        raise UsageError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class _Source:
    """What `lore read` prints: the page's file as it is (the page as read with --json)."""

    page: PageView
    data: bytes | None


def _call(
    vault: engine.Vault, args: argparse.Namespace, content: str | None
) -> BaseModel | _Source:
    """The one engine operation the command names."""
    match args.command:
        case "read":
            return _Source(*engine.read_source(vault, args.name))
        case "search":
            return engine.search(vault, args.query, args.limit)
        case "titles":
            return engine.search_titles(vault, args.query, args.limit)
        case "backlinks":
            return engine.get_backlinks(vault, args.name, args.unlinked)
        case "list":
            return engine.list_pages(
                vault, args.folder, args.placeholders, args.offset, args.limit, sort=args.sort
            )
        case "graph":
            return engine.get_graph(vault, args.name, args.depth)
        case "save" if args.section is not None:
            return engine.save_page(
                vault, args.name, content or "", mode="section", heading=args.section, door=CLI_DOOR
            )
        case "save":
            return engine.save_page(vault, args.name, content or "", door=CLI_DOOR)
        case "append" | "prepend":
            return engine.save_page(
                vault, args.name, content or "", mode=args.command, door=CLI_DOOR
            )
        case "edit":
            return engine.save_page(
                vault, args.name, content or "", mode="edit", old_text=args.old, door=CLI_DOOR
            )
        case "rename":
            return engine.rename_page(vault, args.name, args.new_name, door=CLI_DOOR)
        case "delete":
            return engine.delete_page(vault, args.name, door=CLI_DOOR)
        case "history":
            return engine.page_history(vault, args.name)
        case "restore":
            return engine.restore_page(vault, args.name, args.version, door=CLI_DOOR)
        case "doctor":
            return engine.doctor(vault)
    raise AssertionError(f"unhandled command {args.command!r}")


# -- input and output -------------------------------------------------------------------


def _stdin_text(command: str) -> str:
    """The page content piped in, exactly as sent (no newline translation)."""
    if sys.stdin is None:
        raise InvalidArgumentError(f"lore {command} reads from stdin, and there is none.")
    if sys.stdin.isatty():
        print("lore: reading the page from stdin; end it with Ctrl-D", file=sys.stderr)
    data: bytes = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"The content on stdin is not valid UTF-8 (byte {exc.start}); send UTF-8 text."
        ) from None


def _write(text: str) -> None:
    """Text to stdout as UTF-8 bytes, whatever the locale, with no newline translation."""
    _write_bytes(text.encode("utf-8"))


def _write_bytes(data: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _print(result: BaseModel | _Source, as_json: bool, every_row: bool = False) -> None:
    if isinstance(result, _Source):
        if as_json:
            _write(result.page.model_dump_json(indent=2) + "\n")
        else:
            _write_bytes(result.data or b"")
            _page_notes(result.page)
    elif as_json:
        _write(result.model_dump_json(indent=2) + "\n")
    else:
        draw: display.Draw = (
            partial(display.doctor, result, rows=None if every_row else display.DOCTOR_ROWS)
            if isinstance(result, DoctorReport)
            else partial(display.show, result)
        )
        if sys.stdout.isatty():
            display.on_terminal(draw, sys.stdout)
        else:
            _write(display.plain_text(draw))


def _page_notes(page: PageView) -> None:
    """What `lore read` cannot put on stdout without breaking the round trip."""
    if page.is_placeholder:
        sources = ", ".join(b.slug for b in page.backlinks) or "nothing"
        print(
            f"lore: {page.slug} is a placeholder (no file yet), linked from {sources}.",
            file=sys.stderr,
        )
    if page.alternatives:
        print(f"lore: the name also matches {', '.join(page.alternatives)}.", file=sys.stderr)
    if page.encoding_errors:
        print(
            f"lore: {page.path} is not valid UTF-8; its bytes were printed as they are. "
            "`lore save` takes UTF-8 only; append, prepend, edit and --section refuse it.",
            file=sys.stderr,
        )


class _PlainProgress:
    """Progress as a line on stderr at most once a second, and when done: how far, how
    long so far, and about how long is left."""

    def __init__(self, interval: float = 1.0) -> None:
        self._interval = interval
        self._started = time.monotonic()
        self._next = self._started + interval

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now >= self._next:
            print(
                f"lore: {display.progress_line(done, total, now - self._started)}",
                file=sys.stderr,
                flush=True,
            )
            self._next = now + self._interval


@contextmanager
def _progress(always: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A bar on a terminal; plain lines elsewhere when `always`, else nothing."""
    if sys.stderr.isatty():
        with display.progress_bar(transient=not always) as report:
            yield report
    else:
        yield _PlainProgress() if always else None


@contextmanager
def _logging_to_stderr(level: str) -> Iterator[None]:
    logger = logging.getLogger("lore_mcp")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("lore: %(levelname)s: %(message)s"))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _silence_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so exit does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
