"""The HTTP door: the real server as a subprocess on a loopback port, driven by the SDK's
HTTP client and by raw requests; the bearer check also in process, for the 401 matrix."""

from __future__ import annotations

import json
import logging
import re
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation
from starlette.types import Receive, Scope, Send

from helpers import assert_matches_fresh, environment, placeholder_slugs, run_cli, text
from lore_mcp import audit
from lore_mcp import vault_ops as engine
from lore_mcp.bearer import REFUSAL_WINDOW_SECONDS, REFUSALS_LOGGED, BearerAuth, RefusalLog
from lore_mcp.cli import main, mcp_main
from lore_mcp.errors import LoreError
from lore_mcp.http import HttpOptions, announce, is_loopback, transport_security
from lore_mcp.tokens import TOKEN_ENV, load_token

pytestmark = pytest.mark.anyio

TOKEN = secrets.token_urlsafe(24)
MODERN = "2026-07-28"
# `lore` as a child process: the installed script's entry point.
LORE = ["-c", "from lore_mcp.cli import lore_main; lore_main()"]
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:(\d+)/mcp)")


def files(root: Path) -> dict[str, bytes]:
    """Every file of the vault outside `.lore/`, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".lore" not in p.relative_to(root).parts
    }


# -- the real server ---------------------------------------------------------------------


@dataclass
class Served:
    """A `lore-mcp --http` subprocess and where it listens."""

    proc: subprocess.Popen[bytes]
    log: Path
    url: str = ""
    port: int = 0

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    async def stop(self, sig: signal.Signals = signal.SIGTERM, within: float = 30) -> int:
        """Send `sig` and wait for the exit code; fail (a hang) after `within` seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        with anyio.move_on_after(within):
            while self.proc.poll() is None:
                await anyio.sleep(0.05)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the server ignored {sig.name} for {within} s:\n{self.stderr()}")
        return self.proc.returncode


@asynccontextmanager
async def serving(
    vault: Path, *args: str, token_env: bool = True, entry: str = "lore-mcp"
) -> AsyncIterator[Served]:
    """Start the server on a free loopback port, wait until it answers, stop it after.
    With `token_env`, the token comes in $LORE_MCP_TOKEN; else pass --token-file.
    `entry` is `lore-mcp` or `lore serve`."""
    log = vault.parent / f"server-{secrets.token_hex(4)}.log"
    out = vault.parent / f"stdout-{secrets.token_hex(4)}.log"
    env = environment(**{TOKEN_ENV: TOKEN}) if token_env else environment()
    program = ["-m", "lore_mcp"] if entry == "lore-mcp" else [*LORE, "serve"]
    command = [sys.executable, *program, "--vault", str(vault), "--http", "--port", "0"]
    with log.open("wb") as err, out.open("wb") as std:
        proc = subprocess.Popen(
            [*command, *args], stdin=subprocess.DEVNULL, stdout=std, stderr=err, env=env
        )
    served = Served(proc, log)
    try:
        await _wait_until_ready(served)
        yield served
    finally:
        await served.stop()
    assert out.read_bytes() == b"", "HTTP mode must not write to stdout"


async def _wait_until_ready(served: Served) -> None:
    with anyio.fail_after(30):
        while not (found := LISTENING.search(served.stderr())):
            assert served.proc.poll() is None, f"the server exited:\n{served.stderr()}"
            await anyio.sleep(0.05)
        served.url, served.port = found[1], int(found[2])
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", served.port)
            except OSError:
                await anyio.sleep(0.05)
            else:
                await stream.aclose()
                return


@asynccontextmanager
async def connect(url: str, mode: str, token: str = TOKEN) -> AsyncIterator[Client]:
    """The SDK's own HTTP client, sending the bearer token on every request."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
        transport = streamable_http_client(url, http_client=http)
        client = Client(transport, mode="legacy") if mode == "legacy" else Client(transport)
        async with client:
            yield client


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    with anyio.fail_after(30):
        result = await client.call_tool(tool, arguments)
    assert result.is_error is False, result.content
    return result


async def hits(client: Client, query: str) -> list[str]:
    found = await call(client, "search", query=query)
    assert found.structured_content is not None
    return [hit["slug"] for hit in found.structured_content["hits"]]


def token_file(folder: Path, token: str = TOKEN, mode: int = 0o600) -> Path:
    path = folder / "token"
    path.write_text(token + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


# -- tools over HTTP ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "source"),
    [("legacy", "env"), pytest.param(MODERN, "file", marks=pytest.mark.slow)],
)
@pytest.mark.slow
async def test_tools_work_with_the_token(brain_dir: Path, mode: str, source: str) -> None:
    args = ["--no-watch"]
    if source == "file":
        args += ["--token-file", str(token_file(brain_dir.parent))]
    with anyio.fail_after(60):
        async with (
            serving(brain_dir, *args, token_env=source == "env") as served,
            connect(served.url, mode) as c,
        ):
            assert c.protocol_version == ("2025-11-25" if mode == "legacy" else MODERN)
            assert c.instructions is not None and "'brain'" in c.instructions
            tools = (await c.list_tools()).tools
            assert len(tools) == 9 and all(t.output_schema for t in tools)
            page = await call(c, "read_page", slug="Slugs")
            assert text(page).startswith("<page-info>\ntitle: Slugs\nslug: concepts/slugs\n")
            saved = await call(
                c, "save_page", slug="notes/Over HTTP", content="via [[Slugs]] 記憶 okapi"
            )
            assert saved.structured_content is not None
            assert saved.structured_content["created"] is True
            assert await hits(c, "okapi") == ["notes/over-http"]
            assert (await c.call_tool("read_page", {"slug": "nope nope"})).is_error is True
    written = brain_dir / "notes" / "Over HTTP.md"
    assert written.read_text(encoding="utf-8") == "via [[Slugs]] 記憶 okapi"


@pytest.mark.slow
async def test_the_client_is_refused_with_a_wrong_token(brain_dir: Path) -> None:
    before = files(brain_dir)
    with anyio.fail_after(60):
        async with serving(brain_dir, "--no-watch") as served:
            for mode in ("legacy", MODERN):
                # The SDK reports the 401 as an MCPError ("Server returned an error response").
                with pytest.RaisesGroup(MCPError, allow_unwrapped=True, flatten_subgroups=True):
                    async with connect(served.url, mode, token=TOKEN + "x") as c:
                        await c.list_tools()
            assert served.stderr().count("refused POST /mcp") >= 2  # auto mode may probe twice
    assert files(brain_dir) == before


# -- the 401 matrix against the real server -----------------------------------------------

BAD_HEADERS: list[list[tuple[str, str]]] = [
    [],
    [("Authorization", f"Bearer {TOKEN}x")],
    [("Authorization", f"Bearer {TOKEN[:-1]}")],
    [("Authorization", "Bearer")],
    [("Authorization", f"Basic {TOKEN}")],
    [("Authorization", f"bearer  {TOKEN}")],
    [("Authorization", f"Bearer{TOKEN}")],
    [("Authorization", TOKEN)],
    [("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"Bearer {TOKEN}")],
    [("X-Token", TOKEN)],
]
# Header values an HTTP client refuses to send; they can still reach an ASGI app.
UNSENDABLE: list[list[tuple[str, str]]] = [
    [("Authorization", "Bearer ")],
    [("Authorization", f"Bearer {TOKEN} ")],
    [("Authorization", f"Bearer\t{TOKEN}")],
]


def save_request(slug: str) -> tuple[dict[str, str], bytes]:
    """A complete 2026-07-28 `save_page` call: with the token, it creates the page."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "save_page", "arguments": {"slug": slug, "content": "x"}, "_meta": meta},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "save_page",
    }
    return headers, json.dumps(body).encode()


FLOOD = 150  # refused requests sent one after another


@pytest.mark.slow
async def test_every_bad_header_gets_401_and_touches_nothing(brain_dir: Path) -> None:
    before = files(brain_dir)
    headers, body = save_request("intruder/Written")
    with anyio.fail_after(60):
        async with serving(brain_dir, "--no-watch") as served, httpx2.AsyncClient() as http:
            for auth in BAD_HEADERS:
                reply = await http.post(served.url, headers=[*headers.items(), *auth], content=body)
                assert reply.status_code == 401, auth
                assert reply.headers["www-authenticate"].startswith("Bearer"), auth
                assert "Authorization: Bearer <token>" in reply.json()["error_description"]
            for method in ("GET", "DELETE"):
                assert (await http.request(method, served.url)).status_code == 401
            assert (await http.get(served.url.replace("/mcp", "/other"))).status_code == 401
            for _ in range(FLOOD):
                assert (
                    await http.post(served.url, headers=headers, content=body)
                ).status_code == 401
            assert files(brain_dir) == before
            # The control: the very same request with the token does write.
            good = [*headers.items(), ("Authorization", f"Bearer {TOKEN}")]
            reply = await http.post(served.url, headers=good, content=body)
            assert reply.status_code == 200 and reply.json()["result"]["isError"] is False
            lower = [*headers.items(), ("Authorization", f"bearer {TOKEN}")]  # scheme: any case
            assert (await http.post(served.url, headers=lower, content=body)).status_code == 200
    assert set(files(brain_dir)) - set(before) == {"intruder/Written.md"}
    # The flood did not fill the log: a few lines one by one, then one line counts the rest
    # (all within a minute: at the stop).
    refused = len(BAD_HEADERS) + 3 + FLOOD
    lines = [line for line in served.stderr().splitlines() if "refused" in line]
    assert len(lines) == REFUSALS_LOGGED + 1, lines
    assert f"{refused - REFUSALS_LOGGED} more refused requests in the last minute" in lines[-1]


@pytest.mark.slow
async def test_host_and_origin_checks_stay_on(brain_dir: Path) -> None:
    headers, body = save_request("rebound/Page")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with anyio.fail_after(60):
        async with serving(brain_dir, "--no-watch") as served, httpx2.AsyncClient() as http:
            evil_host = headers | auth | {"Host": "evil.example"}
            evil_origin = headers | auth | {"Origin": "http://evil.example"}
            local_origin = headers | auth | {"Origin": f"http://localhost:{served.port}"}
            post = http.post
            assert (await post(served.url, headers=evil_host, content=body)).status_code == 421
            assert (await post(served.url, headers=evil_origin, content=body)).status_code == 403
            assert (await post(served.url, headers=local_origin, content=body)).status_code == 200
    assert (brain_dir / "rebound" / "Page.md").exists()


# -- several clients, the watcher, shutdown -----------------------------------------------

CLIENTS = 4
SAVES = 25


def page_content(client: int, n: int) -> str:
    return f"Client {client}, save {n}: next [[c{client}-p{n + 1}]], hub [[Swarm Hub]], [[Slugs]]."


@pytest.mark.slow
async def test_concurrent_clients_lose_nothing(brain_dir: Path) -> None:
    async def writer(url: str, client: int) -> None:
        async with connect(url, "legacy" if client % 2 else MODERN) as c:
            for n in range(SAVES):
                await call(
                    c, "save_page", slug=f"swarm/c{client}-p{n}", content=page_content(client, n)
                )
            other = await call(c, "read_page", slug=f"c{(client + 1) % CLIENTS}-p0")
            assert text(other)

    with anyio.fail_after(180):
        async with serving(brain_dir) as served:  # the watcher is on
            async with anyio.create_task_group() as tg:
                for client in range(CLIENTS):
                    tg.start_soon(writer, served.url, client)
                (brain_dir / "Outside Edit.md").write_text("a quokka [[Slugs]]", encoding="utf-8")
            async with connect(served.url, "legacy") as c:
                while not await hits(c, "quokka"):  # the watcher applies the outside edit
                    await anyio.sleep(0.1)
                listing = await call(c, "list_pages", folder="swarm", limit=100)
                assert listing.structured_content is not None
                assert len(listing.structured_content["pages"]) == CLIENTS * SAVES
            assert await served.stop() == 0
    for client in range(CLIENTS):
        for n in range(SAVES):
            page = brain_dir / "swarm" / f"c{client}-p{n}.md"
            assert page.read_text(encoding="utf-8") == page_content(client, n)
    state = engine.open_vault(brain_dir)
    try:
        assert {f"c{c}-p{SAVES}" for c in range(CLIENTS)} <= set(placeholder_slugs(state))
        assert_matches_fresh(state)
    finally:
        state.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "entry"),
    [(signal.SIGTERM, "lore-mcp"), (signal.SIGINT, "lore serve")],
    ids=["SIGTERM-lore-mcp", "SIGINT-lore-serve"],
)
async def test_a_stop_signal_shuts_down_cleanly(
    brain_dir: Path, sig: signal.Signals, entry: str
) -> None:
    exit_code: int | None = None
    with anyio.fail_after(60):
        async with serving(brain_dir, entry=entry) as served:
            try:
                async with connect(served.url, "legacy") as c:  # its GET stream stays open
                    await call(c, "save_page", slug="Before Stop", content="kept")
                    exit_code = await served.stop(sig)
            except* (httpx2.HTTPError, MCPError):
                pass  # the client then finds the server gone; reporting that is the SDK's job
    assert exit_code == 0
    log = served.stderr()
    assert "closed the vault" in log and "Traceback" not in log
    state = engine.open_vault(brain_dir)  # no lock left behind: a fresh open works
    try:
        assert engine.read_page(state, "before-stop").content == "kept"
        assert_matches_fresh(state)
    finally:
        state.close()


# -- sessions ----------------------------------------------------------------------------


async def open_session(http: httpx2.AsyncClient, url: str) -> tuple[int, str | None]:
    """A raw `initialize` that opens a session and is then abandoned: status, session id."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "abandoned", "version": "0"},
        },
    }
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    reply = await http.post(url, headers=headers, content=json.dumps(body))
    return reply.status_code, reply.headers.get("mcp-session-id")


async def ping(http: httpx2.AsyncClient, url: str, session: str) -> int:
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-11-25",
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    return (await http.post(url, headers=headers, content=body)).status_code


@pytest.mark.slow
async def test_sessions_are_bounded_expire_and_are_named_in_the_audit_log(
    vault_dir: Path,
) -> None:
    args = ("--no-watch", "--max-sessions", "2", "--session-timeout", "1s")
    with anyio.fail_after(60):
        async with serving(vault_dir, *args) as served, httpx2.AsyncClient() as http:
            assert "at most 2 sessions, each closed after 1 s idle" in served.stderr()
            async with (
                named(served.url, "agent-a") as a,
                named(served.url, "agent-b") as b,
            ):
                await call(a, "save_page", slug="From A", content="a")
                await call(b, "save_page", slug="From B", content="b")
                assert (await open_session(http, served.url))[0] == 503  # two are open
            async with named(served.url, "agent-c", MODERN) as c:  # no session in this era
                await call(c, "save_page", slug="From C", content="c")
            # The clients closed theirs: room for two that are then abandoned.
            first, second = [await open_session(http, served.url) for _ in range(2)]
            assert first[0] == second[0] == 200 and first[1] and second[1]
            assert await ping(http, served.url, first[1]) == 200
            while (await open_session(http, served.url))[0] == 503:  # until they expire
                await anyio.sleep(0.2)
            assert await ping(http, served.url, first[1]) == 404
    log = {r.slug: r for r in audit.read_log(vault_dir).records}
    assert [log[s].client_name for s in ("from-a", "from-b", "from-c")] == [
        "agent-a",
        "agent-b",
        "agent-c",
    ]
    assert log["from-a"].session and log["from-b"].session
    assert log["from-a"].session != log["from-b"].session
    assert log["from-c"].session is None


@asynccontextmanager
async def named(url: str, name: str, mode: str = "legacy") -> AsyncIterator[Client]:
    """The SDK's HTTP client, introducing itself as `name`."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    info = Implementation(name=name, version="1.0")
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
        transport = streamable_http_client(url, http_client=http)
        connect = "legacy" if mode == "legacy" else "auto"
        async with Client(transport, mode=connect, client_info=info) as client:
            yield client


# -- refusing to start --------------------------------------------------------------------


def test_no_token_no_server(
    brain_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(SystemExit) as exited:
        mcp_main(["--vault", str(brain_dir), "--http", "--port", "0"])
    out, err = capsys.readouterr()
    assert exited.value.code == 1 and out == ""
    assert err.startswith("lore-mcp: ") and TOKEN_ENV in err and "--token-file" in err
    assert not (brain_dir / ".lore").exists()  # the vault was not even opened


@contextmanager
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.slow
def test_a_taken_port_is_a_clear_error(brain_dir: Path) -> None:
    with taken_port() as port:
        done = run_cli(
            "--vault", str(brain_dir), "--http", "--port", str(port), **{TOKEN_ENV: TOKEN}
        )
    assert done.returncode == 1 and "Cannot listen on 127.0.0.1" in done.stderr
    assert "--port" in done.stderr


@pytest.mark.parametrize(
    ("args", "refusal"),
    [
        (["--host", "0.0.0.0"], (1, "--allow-remote")),
        (["--host", "192.0.2.1"], (1, "not a loopback address")),
        (["--port", "70000"], (2, "70000 is not between 0 and 65535")),
    ],
)
def test_bad_http_options(
    brain_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    refusal: tuple[int, str],
) -> None:
    code, message = refusal
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with pytest.raises(SystemExit) as exited:
        mcp_main(["--vault", str(brain_dir), "--http", *args])
    assert exited.value.code == code and message in capsys.readouterr().err
    assert not (brain_dir / ".lore").exists()


def test_lore_serve_takes_the_same_flags(
    brain_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert main(["serve", "--vault", str(brain_dir), "--http"]) == 1
    assert "none is configured" in capsys.readouterr().err
    assert main(["serve", "--vault", str(brain_dir), "--allow-remote"]) == 2
    assert "need --http" in capsys.readouterr().err
    assert not (brain_dir / ".lore").exists()


@pytest.mark.parametrize("flag", [["--host", "127.0.0.1"], ["--port", "9000"]])
def test_http_flags_need_http(
    brain_dir: Path, capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        mcp_main(["--vault", str(brain_dir), *flag])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.startswith("lore-mcp: error: ") and "need --http" in err
    assert not (brain_dir / ".lore").exists()


# -- configuration, in process ------------------------------------------------------------


def test_token_from_the_environment() -> None:
    assert load_token(None, {TOKEN_ENV: f"  {TOKEN}\n"}) == TOKEN
    for env in ({}, {TOKEN_ENV: ""}, {TOKEN_ENV: "   "}):
        with pytest.raises(LoreError, match="none is configured"):
            load_token(None, env)
    with pytest.raises(LoreError, match="at least 16"):
        load_token(None, {TOKEN_ENV: "fifteen-chars.."})
    for bad in ("with a space inside!", "ünïcode-token-1234567"):
        with pytest.raises(LoreError, match="cannot carry"):
            load_token(None, {TOKEN_ENV: bad})


def test_token_from_a_file(tmp_path: Path) -> None:
    path = token_file(tmp_path, "file-token-0123456789")
    assert load_token(path, {TOKEN_ENV: TOKEN}) == "file-token-0123456789"  # the file wins
    path.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(LoreError, match="is empty"):
        load_token(path, {})
    with pytest.raises(LoreError, match="Cannot read the token file"):
        load_token(tmp_path / "missing", {})
    loose = token_file(tmp_path, mode=0o644)
    with pytest.raises(LoreError, match=r"readable by every user.*chmod 600"):
        load_token(loose, {})


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
@pytest.mark.parametrize("mode", [0o602, 0o622, 0o620, 0o606, 0o666, 0o604], ids=oct)
def test_a_token_file_others_can_change_or_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = token_file(tmp_path, mode=mode)
    with pytest.raises(
        LoreError, match=f"mode {mode:04o}.*" + re.escape(f"Run `chmod 600 {path}`")
    ):
        load_token(path, {TOKEN_ENV: TOKEN})
    for fine in (0o600, 0o400, 0o640):  # the owner's group may read it, as today
        path.chmod(fine)
        assert load_token(path, {}) == TOKEN


def test_loopback_hosts() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com", "127.0.0.1.nip.io"):
        assert not is_loopback(host), host


def test_remote_needs_the_flag_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(LoreError, match="--allow-remote"):
        HttpOptions(token=TOKEN, host="0.0.0.0")
    with pytest.raises(LoreError, match="at least 16"):
        HttpOptions(token="short")
    assert HttpOptions(token=TOKEN, host="0.0.0.0", allow_remote=True).allow_remote
    assert TOKEN not in repr(HttpOptions(token=TOKEN))
    with caplog.at_level(logging.INFO, logger="lore_mcp.http"):
        announce("127.0.0.1", 8765)
        assert [r.levelno for r in caplog.records] == [logging.INFO]
        announce("0.0.0.0", 8765)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "non-loopback address 0.0.0.0" in warnings[0]


def test_rebinding_guard_on_loopback_only() -> None:
    local = transport_security("127.0.0.2")
    assert local.enable_dns_rebinding_protection
    assert {"127.0.0.2:*", "localhost:*", "[::1]:*"} <= set(local.allowed_hosts)
    assert "http://127.0.0.2:*" in local.allowed_origins
    assert "[::1]:*" in transport_security("::1").allowed_hosts
    assert not transport_security("0.0.0.0").enable_dns_rebinding_protection


# -- the bearer check, in process ----------------------------------------------------------


async def test_bearer_matrix_in_process() -> None:
    reached: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"reached"})

    transport = httpx2.ASGITransport(app=BearerAuth(app, TOKEN))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        for auth in BAD_HEADERS + UNSENDABLE:
            reply = await http.post("/mcp", headers=auth, content=b"{}")
            assert reply.status_code == 401, auth
            assert reply.headers["www-authenticate"] == 'Bearer realm="lore-mcp"'
        assert reached == []
        for scheme in ("Bearer", "bearer", "BEARER"):
            reply = await http.post("/mcp", headers={"Authorization": f"{scheme} {TOKEN}"})
            assert reply.status_code == 200 and reply.text == "reached"
    assert reached == ["/mcp"] * 3
    with pytest.raises(LoreError, match="at least 16"):
        BearerAuth(app, "too-short")


def test_refused_requests_are_logged_a_few_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    refusals = RefusalLog(clock=lambda: now[0])

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "lore_mcp.http"]

    with caplog.at_level(logging.WARNING, logger="lore_mcp.http"):
        for n in range(100):
            refusals.refused("POST", "/mcp", f"10.0.0.{n}")
        refusals.flush()  # the minute is not over: nothing yet
        assert lines() == [
            f"refused POST /mcp from 10.0.0.{n}: no valid bearer token"
            for n in range(REFUSALS_LOGGED)
        ]
        now[0] += REFUSAL_WINDOW_SECONDS
        refusals.flush()
        assert lines()[-1].startswith(
            f"{100 - REFUSALS_LOGGED} more refused requests in the last minute"
        )
        caplog.clear()
        refusals.refused("GET", "/other", "10.0.0.1")  # a new minute: one by one again
        refusals.flush()
        refusals.flush(stopping=True)  # nothing held: no count
        now[0] += 10 * REFUSAL_WINDOW_SECONDS
        refusals.flush()
        assert lines() == ["refused GET /other from 10.0.0.1: no valid bearer token"]


@pytest.mark.slow
async def test_two_agents_over_http_cannot_lose_an_update(brain_dir: Path) -> None:
    with anyio.fail_after(60):
        async with (
            serving(brain_dir, "--no-watch") as served,
            connect(served.url, "legacy") as first,
            connect(served.url, "legacy") as second,
        ):
            read = await call(first, "read_page", slug="Slugs")
            assert read.structured_content is not None
            seen = read.structured_content["hash"]
            await call(second, "save_page", slug="Slugs", content="the second agent's\n")
            stale = await first.call_tool(
                "save_page", {"slug": "Slugs", "content": "lost?\n", "expected_hash": seen}
            )
            assert stale.is_error is True and "changed since you read it" in text(stale)
    assert (brain_dir / "concepts" / "Slugs.md").read_text() == "the second agent's\n"
