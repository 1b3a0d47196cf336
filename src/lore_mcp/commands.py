"""The `lore` command line: the vault operations for people and scripts.

Each command opens the vault (bringing its index up to date), calls one operation in
`vault_ops`, and prints the result: tables on a terminal, the same as plain text when
piped, one JSON document with `--json`. Errors go to stderr with a non-zero exit status.
Rendering for people lives in `display`, imported only when it is needed.
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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from lore_mcp import audit, vault_ops
from lore_mcp.cli import add_http_arguments, add_serving_arguments, http_options
from lore_mcp.errors import InvalidArgumentError, LoreError, VaultError
from lore_mcp.indexing import Progress
from lore_mcp.models import DoctorReport, PageView
from lore_mcp.state import AppState

if TYPE_CHECKING:
    from lore_mcp.http import HttpOptions

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
LOG_LEVELS = ("debug", "info", "warning", "error")
WRITES = frozenset({"save", "rename", "delete"})
MAX_LIMIT = 1000
# Engine messages are written for the agent and name its tools; people get commands.
# (`search` is left out: the plain word is too common to replace.)
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

EPILOG = """\
The vault is --vault PATH, else the LORE_VAULT environment variable.
Output: tables on a terminal, plain text when piped, one JSON document with --json.

exit status:
  0  success (doctor: no errors)
  1  the operation failed (the message is on stderr), or doctor found errors
  2  usage error: bad arguments, or no vault given
"""

DOCTOR_HELP = """\
Check the vault's health.

errors (exit status 1):
  slug collisions       two files with one slug; the one that sorts second is not indexed
  invalid UTF-8         files indexed only as far as they decode
  unindexed files       page files that could not be indexed at all
warnings (exit status 0, or 1 with --strict):
  unresolved links      links to placeholders, with the page and line they are written on
  ambiguous links       links that matched several pages, what they resolved to, the candidates
  orphans               pages with no links in or out
"""


# -- the doctor's report (engine material: belongs in models and vault_ops) -------------


# -- arguments --------------------------------------------------------------------------


def _bounded(low: int, high: int) -> Callable[[str], int]:
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


def _add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """--vault, --json and --log-level, accepted before or after the command. On the
    commands the defaults are suppressed so they do not override the main parser's."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--vault", metavar="PATH", default=default(None), help="the vault folder ($LORE_VAULT)"
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print one JSON document"
    )
    parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        default=default(None),
        help="log to stderr from this level (default: warning; serve: info)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lore",
        description="A wiki vault of Markdown pages joined by [[wiki links]], from the shell.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str | None = None) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            parents=[common],
            help=summary,
            description=description or summary,
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    limit = _bounded(1, MAX_LIMIT)
    p = command("index", "build or update the index, then summarise the vault")
    p.add_argument("vault_arg", nargs="?", metavar="VAULT", help="the vault (or --vault)")
    command("read", "print a page's Markdown as it is on disk").add_argument("name")
    p = command("search", "full-text search, best first")
    p.add_argument("query")
    p.add_argument("--limit", type=limit, default=10, help="at most N hits (default 10)")
    p = command("titles", "find pages by title or slug")
    p.add_argument("query")
    p.add_argument("--limit", type=limit, default=20, help="at most N matches (default 20)")
    p = command("backlinks", "the lines in other pages that link to a page")
    p.add_argument("name")
    p.add_argument("--unlinked", action="store_true", help="also plain-text mentions")
    p = command("list", "pages sorted by slug, a page of them at a time")
    p.add_argument("folder", nargs="?", default="", help="only pages under this folder")
    p.add_argument("--placeholders", action="store_true", help="include placeholders")
    p.add_argument("--offset", type=_bounded(0, 2**31), default=0, help="skip N pages")
    p.add_argument("--limit", type=limit, default=100, help="at most N pages (default 100)")
    p = command("graph", "a page's neighbourhood, or without a name the vault's shape")
    p.add_argument("name", nargs="?")
    p.add_argument("--depth", type=_bounded(1, 3), default=1, help="hops, 1 to 3 (default 1)")
    p = command("save", "create or overwrite a page with the content on stdin")
    p.add_argument("name")
    p = command("rename", "rename or move a page and rewrite the links to it")
    p.add_argument("name")
    p.add_argument("new_name", metavar="NEW", help="a new title, or folder/New Title")
    command("delete", "move a page to .lore/trash/").add_argument("name")
    p = command("doctor", "check the vault's health", DOCTOR_HELP)
    p.add_argument("--strict", action="store_true", help="warnings count as errors")
    p = command("log", "the audit log: every save, delete and rename, oldest first")
    p.add_argument(
        "--since", help="only writes since then: 30m, 1h, 2d, 1w, or an ISO date or time"
    )
    p.add_argument("--slug", help="only writes that touched this page")
    p.add_argument("--limit", type=_bounded(1, 2**31), help="only the last N writes")
    p = command("serve", "run the MCP server on stdio, or over HTTP with --http (as lore-mcp)")
    p.add_argument("--no-watch", action="store_true", help="do not watch for external edits")
    add_serving_arguments(p)
    add_http_arguments(p)
    return parser


def _vault_path(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path:
    positional = getattr(args, "vault_arg", None)
    if positional and args.vault and Path(positional) != Path(args.vault):
        parser.error("give the vault once: as VAULT or as --vault, not both")
    raw = positional or args.vault or os.environ.get("LORE_VAULT")
    if not raw:
        parser.error("no vault given: pass --vault PATH or set LORE_VAULT")
    return Path(raw)


# -- running ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `lore` command; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "serve":
            return _serve(_vault_path(parser, args), args, http_options(parser, args))
        with _logging_to_stderr(args.log_level or "warning"):
            return _run(parser, args)
    except SystemExit as exc:  # argparse: --help, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except LoreError as exc:
        print(f"lore: {_for_people(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _for_people(message: str) -> str:
    """An engine message with its tool names replaced by the matching commands."""
    return _TOOL_NAME.sub(lambda m: f"`{TOOL_COMMANDS[m.group(1)]}`", message)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    vault = _vault_path(parser, args)
    content = _stdin_text() if args.command == "save" else None
    if args.command == "log":
        result: BaseModel = _audit_log(vault, args)
    elif args.command == "index":
        state = vault_ops.open_vault(vault, scan=False)
        try:
            with _progress(always=True) as progress:
                result = vault_ops.index_vault(state, progress)
        finally:
            state.close()
    else:
        with _progress(always=False) as progress:
            state = vault_ops.open_vault(
                vault, read_only=args.command not in WRITES, progress=progress
            )
        try:
            result = _call(state, args, content)
        finally:
            state.close()
    _print(result, args.json)
    if isinstance(result, DoctorReport) and (result.errors or (args.strict and result.warnings)):
        return EXIT_FAILED
    return EXIT_OK


def _call(state: AppState, args: argparse.Namespace, content: str | None) -> BaseModel:
    """The one vault operation the command names."""
    match args.command:
        case "read":
            return vault_ops.read_page(state, args.name)
        case "search":
            return vault_ops.search(state, args.query, args.limit)
        case "titles":
            return vault_ops.search_titles(state, args.query, args.limit)
        case "backlinks":
            return vault_ops.get_backlinks(state, args.name, args.unlinked)
        case "list":
            return vault_ops.list_pages(
                state, args.folder, args.placeholders, args.offset, args.limit
            )
        case "graph":
            return vault_ops.get_graph(state, args.name, args.depth)
        case "save":
            return vault_ops.save_page(state, args.name, content or "", door="cli")
        case "rename":
            return vault_ops.rename_page(state, args.name, args.new_name, door="cli")
        case "delete":
            return vault_ops.delete_page(state, args.name, door="cli")
        case "doctor":
            return vault_ops.doctor(state)
    raise AssertionError(f"unhandled command {args.command!r}")


def _audit_log(vault: Path, args: argparse.Namespace) -> audit.AuditLog:
    """What `lore log` shows; it reads `.lore/audit.jsonl` and leaves the index alone."""
    if not vault.expanduser().is_dir():
        raise VaultError(f"The vault folder {str(vault)!r} does not exist or is not a folder.")
    since = None if args.since is None else audit.parse_since(args.since)
    return audit.read_log(vault.expanduser(), since, args.slug, args.limit)


def _serve(vault: Path, args: argparse.Namespace, http: HttpOptions | None) -> int:
    from lore_mcp.cli import serve

    serve(
        vault,
        watch=not args.no_watch,
        log_level=(args.log_level or "info").upper(),
        http=http,
        read_only=args.read_only,
        max_result_chars=args.max_result_chars,
    )
    return EXIT_OK


# -- input and output -------------------------------------------------------------------


def _stdin_text() -> str:
    """The page content piped in, exactly as sent (no newline translation)."""
    if sys.stdin is None:
        raise InvalidArgumentError("lore save reads the page from stdin, and there is none.")
    if sys.stdin.isatty():
        print("lore: reading the page from stdin; end it with Ctrl-D", file=sys.stderr)
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return sys.stdin.read()
    data: bytes = buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"The content on stdin is not valid UTF-8 (byte {exc.start}); send UTF-8 text."
        ) from None


def _write(text: str) -> None:
    """Text to stdout as UTF-8 bytes, whatever the locale, with no newline translation."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def _print(result: BaseModel, as_json: bool) -> None:
    if as_json:
        _write(result.model_dump_json(indent=2) + "\n")
    elif isinstance(result, PageView):
        _write(result.content)
        _page_notes(result)
    else:
        from lore_mcp import display

        draw: display.Draw = (
            partial(display.doctor, result)
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


class _PlainProgress:
    """Progress as a line on stderr at most once a second, and when done."""

    def __init__(self, interval: float = 1.0) -> None:
        self._interval = interval
        self._next = time.monotonic() + interval

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now >= self._next:
            print(f"lore: indexed {done} of {total} changed files", file=sys.stderr, flush=True)
            self._next = now + self._interval


@contextmanager
def _progress(always: bool) -> Iterator[Progress | None]:
    """A bar on a terminal; plain lines elsewhere when `always`, else nothing."""
    if sys.stderr.isatty():
        from lore_mcp import display

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
    logger.setLevel(level.upper())
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


if __name__ == "__main__":
    sys.exit(main())
