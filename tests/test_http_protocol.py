"""Malformed JSON-RPC over HTTP, against a real `lore-mcp --http`: every POST gets its
answer. The SDK answers what it cannot parse with 400 itself; a request whose id is of
no valid type, which it took for a notification (202, no reply), gets its -32600 here."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from test_http import TOKEN, open_session, serving

pytestmark = pytest.mark.anyio

MISREAD = [
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}', -32700),
]


@pytest.mark.slow
async def test_every_malformed_post_gets_a_json_rpc_error(brain_dir: Path) -> None:
    async with (
        serving(brain_dir, "--no-watch") as served,
        httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http,
    ):
        status, session = await open_session(http, served.url)
        assert status == 200 and session is not None
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": "2025-11-25",
        }

        async def post(body: bytes) -> httpx2.Response:
            return await http.post(served.url, headers=headers, content=body)

        for body, code in MISREAD:
            reply = await post(body)
            assert reply.status_code == 400, body
            assert (reply.json()["id"], reply.json()["error"]["code"]) == (None, code)
        # What the SDK answers itself, it still does; notifications still get 202.
        unparsed = await post(b"{not json")
        assert (unparsed.status_code, unparsed.json()["error"]["code"]) == (400, -32700)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await post(json.dumps(note).encode())).status_code == 202
        pong = await post(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}).encode())
        assert pong.status_code == 200 and '"id":9' in pong.text
