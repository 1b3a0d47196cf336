"""Running one `lore` command other than `serve`: open the vault (bringing its index up
to date), call one engine operation, and print the result: tables on a terminal, the
same as plain text when piped, one JSON document with `--json`. Errors go to stderr.
(Reading stdin and printing are in `cli_io`.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from lore_mcp import __version__, audit, cli_io
from lore_mcp import vault_ops as engine
from lore_mcp.errors import InvalidArgumentError, UsageError, VaultError
from lore_mcp.models import DoctorReport
from lore_mcp.vaults import VaultSpec

WRITES = frozenset({"save", "append", "prepend", "edit", "rename", "delete", "restore"})
STDIN_WRITES = frozenset({"save", "append", "prepend", "edit"})
CLI_DOOR = audit.Door("cli", client_name="lore", client_version=__version__)


def run(args: argparse.Namespace, vault: Path) -> bool:
    """Run the command `args` names on the vault at `vault`, logging to stderr; whether
    it succeeded (`lore doctor` fails on errors, or warnings with --strict)."""
    with cli_io.logging_to_stderr(args.log_level or "WARNING"):
        result = _result(args, vault)
    cli_io.print_result(result, args.json, every_row=getattr(args, "all", False))
    if isinstance(result, DoctorReport):
        return not (result.errors or (args.strict and result.warnings))
    return True


def run_ui(args: argparse.Namespace, vault: Path) -> None:
    """`lore ui`: open the vault (watched unless --no-watch) and serve the web app on the
    loopback address until Ctrl-C."""
    from lore_mcp import ui

    with cli_io.logging_to_stderr(args.log_level or "WARNING"):
        with cli_io.progress(always=False) as progress:
            opened = engine.open_vault(
                vault, read_only=args.read_only, progress=progress, readers=readers()
            )
        try:
            if not args.no_watch:
                from lore_mcp.watcher import start_watcher

                start_watcher(opened)
            ui.serve(opened, port=args.port, read_only=args.read_only, open_browser=args.open)
        finally:
            opened.close()


HOME_PAGE = """# Home

This folder is a persistent memory for AI agents: Markdown pages joined by [[wiki links]],
served to them by lore-mcp. An agent's context resets between sessions; these pages do not.

## How to use it

- At the start of a session, read this page, then search for what the task touches.
- Keep what is worth remembering: decisions and why they were taken, facts learned, open
  questions. Put each in the page it belongs on and link it to the pages it relates to.
- Change part of a page (append, a section, one passage) rather than rewrite it.
- A link to a page that does not exist yet is a placeholder: write that page when there
  is something to say.

People can read and edit the same pages in any Markdown editor or in Obsidian.
"""
GITIGNORE_LINE = ".lore/cache/"  # the index: a cache, rebuilt from the pages


def _init(vault: Path) -> BaseModel:
    """`lore init`: the folder made a vault (created if missing), with a first page that
    explains the memory when it holds none and `.lore/cache/` in its `.gitignore`, and
    indexed; how to serve it is said on stderr."""
    try:
        vault.mkdir(parents=True, exist_ok=True)
        if not any(vault.rglob("*.md")):
            (vault / "Home.md").write_text(HOME_PAGE, encoding="utf-8")
        _ignore_cache(vault / ".gitignore")
    except OSError as exc:
        raise VaultError(f"Cannot make the vault {str(vault)!r}: {exc.strerror}.") from exc
    opened = engine.open_vault(vault, scan=False, readers=readers())
    try:
        report = engine.index_vault(opened)
    finally:
        opened.close()
    root = str(vault.resolve())
    entry = {"mcpServers": {"lore": {"command": "lore-mcp", "args": ["--vault", root]}}}
    print(
        f"lore: {root} is a vault. Serve it to an MCP client with `lore-mcp --vault {root}`.\n"
        f'For Claude Code: claude mcp add lore -- lore-mcp --vault "{root}"\n'
        f"or add to .mcp.json (or your client's MCP settings): {json.dumps(entry)}",
        file=sys.stderr,
    )
    return report


def _ignore_cache(gitignore: Path) -> None:
    """`.lore/cache/` in the vault's `.gitignore`, added once."""
    text = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    if GITIGNORE_LINE not in text.splitlines():
        ending = "" if not text or text.endswith("\n") else "\n"
        gitignore.write_text(f"{text}{ending}{GITIGNORE_LINE}\n", encoding="utf-8")


def _result(args: argparse.Namespace, vault: Path) -> BaseModel | cli_io.Source | cli_io.Text:
    content = cli_io.stdin_text(args.command) if args.command in STDIN_WRITES else None
    if args.command == "log":
        since = None if args.since is None else _since(args.since)
        return audit.read_log(vault.expanduser(), since, args.slug, args.limit)
    if args.command == "init":
        return _init(vault.expanduser())
    if args.command == "index":
        opened = engine.open_vault(vault, scan=False, readers=readers())

        try:
            with cli_io.progress(always=True) as progress:
                return engine.index_vault(opened, progress)
        finally:
            opened.close()
    with cli_io.progress(always=False) as progress:
        opened = engine.open_vault(
            vault, read_only=args.command not in WRITES, progress=progress, readers=readers()
        )
    try:
        return _call(opened, args, content)
    finally:
        opened.close()


def list_vaults(specs: list[VaultSpec], config: Path, *, as_json: bool) -> None:
    """`lore vaults`: each vault's name, folder, pages at its last index and whether it
    is the default or read-only; and where the config file is looked for."""
    counts = [engine.last_index_count(s.root) if s.root.is_dir() else None for s in specs]
    if as_json:
        rows = [
            {
                "name": spec.name,
                "path": str(spec.root),
                "default": number == 0,
                "read_only": spec.read_only,
                "exists": spec.root.is_dir(),
                "pages": count,
            }
            for number, (spec, count) in enumerate(zip(specs, counts, strict=True))
        ]
        cli_io.write(json.dumps({"config": str(config), "vaults": rows}, indent=2) + "\n")
        return
    width = max(len(spec.name) for spec in specs)
    for number, (spec, count) in enumerate(zip(specs, counts, strict=True)):
        marks = ["default"] if number == 0 else []
        marks += ["read-only"] if spec.read_only else []
        marks += [] if spec.root.is_dir() else ["missing"]
        pages = "not indexed" if count is None else f"{count} pages"
        extra = f" ({', '.join(marks)})" if marks else ""
        cli_io.write(f"{spec.name:<{width}}  {spec.root}  {pages}{extra}\n")
    cli_io.write(f"config file: {config}{'' if config.is_file() else ' (none)'}\n")


def readers() -> int:
    """Worker processes that read pages in a pass over many files: one for each CPU this
    process may use but one, three at most."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(0, min((cpus or 1) - 1, 3))


def _since(text: str) -> datetime:
    try:
        return audit.parse_since(text)
    except InvalidArgumentError as exc:
        raise UsageError(str(exc)) from None


def _call(
    vault: engine.AppState, args: argparse.Namespace, content: str | None
) -> BaseModel | cli_io.Source | cli_io.Text:
    """The one engine operation the command names."""
    match args.command:
        case "graph" if args.format is not None:
            from lore_mcp import graph_formats

            exported = engine.export_graph(vault, args.name, args.depth)
            return cli_io.Text(graph_formats.write(exported, args.format))
        case "read" if args.version is not None:
            return cli_io.Source(*engine.version_source(vault, args.name, args.version))
        case "read":
            return cli_io.Source(*engine.read_source(vault, args.name))
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
            return engine.get_graph(vault, args.name, args.depth, args.offset)
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
