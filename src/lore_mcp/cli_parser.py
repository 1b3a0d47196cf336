"""The parser of `lore` and its commands (`lore-mcp` is `lore serve`): each command's
arguments and help, the exit statuses the help lists, and a suggestion for a misspelt
option or command in a usage error.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from lore_mcp import __version__, display_doctor
from lore_mcp.cli_options import common_options, number, serving_options
from lore_mcp.config import VAULT_ENV

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141
MAX_LIMIT = 1000

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
    common_options(parser, suppress=False)
    common = _Parser(add_help=False)
    common_options(common, suppress=True)
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

    limit = number(1, MAX_LIMIT)
    p = command("index", "build or update the index, then summarise the vault")
    p.add_argument("vault_arg", nargs="?", metavar="VAULT", help="the vault (or --vault)")
    p = command("read", "print a page's file, byte for byte")
    p.add_argument("name")
    p.add_argument(
        "--version",
        type=number(1, 2**31),
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
    p.add_argument("--limit", type=number(1, 2**31), help="only the last N writes")
    p = command(
        "serve",
        "the MCP server on stdio, or over HTTP with --http (lore-mcp is the same)",
        "Serve a vault of Markdown pages joined by [[wiki links]] to an AI agent over MCP "
        "(stdio, or Streamable HTTP with --http).",
        prog=serve_prog,
    )
    serving_options(p)
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
    p.add_argument("--offset", type=number(0, 2**31), default=0, help="skip N pages")
    p.add_argument("--limit", type=limit, default=100, help="at most N pages (default 100)")
    p = command("graph", "a page's neighbourhood, or without a name the vault's shape")
    p.add_argument("name", nargs="?")
    p.add_argument("--depth", type=number(1, 3), default=1, help="hops, 1 to 3 (default 1)")
    p.add_argument(
        "--offset", type=number(0, 2**31), default=0, help="skip N rows of each list (the shape)"
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
        type=number(0, 65535),
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
    p.add_argument("--version", type=number(1, 2**31), default=1, help="which one (1: the newest)")


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
