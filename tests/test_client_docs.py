"""The client setup in the docs: every JSON and TOML block parses, and each one that
configures a server starts `lore-mcp` on a vault."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "docs" / "clients.md"]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[tuple[str, str]]:
    return [
        (f"{doc.name}:{doc.read_text(encoding='utf-8')[: m.start()].count(chr(10)) + 1}", m[2])
        for doc in DOCS
        for m in BLOCK.finditer(doc.read_text(encoding="utf-8"))
        if m[1] == language
    ]


def servers(config: dict[str, Any]) -> dict[str, Any]:
    """The server entries of any client's config: mcpServers, servers or mcp_servers."""
    for key in ("mcpServers", "servers", "mcp_servers"):
        if key in config:
            found: dict[str, Any] = config[key]
            return found
    return {}


def starts_lore_mcp(entry: dict[str, Any]) -> bool:
    args = entry.get("args", [])
    return Path(entry["command"]).name == "lore-mcp" and args[:1] == ["--vault"] and len(args) == 2


@pytest.mark.parametrize(("where", "text"), blocks("json"))
def test_every_json_block_parses(where: str, text: str) -> None:
    config = json.loads(text)
    for name, entry in servers(config).items():
        assert starts_lore_mcp(entry), f"{where}: {name}"


@pytest.mark.parametrize(("where", "text"), blocks("toml"))
def test_every_toml_block_parses(where: str, text: str) -> None:
    config = tomllib.loads(text)
    assert servers(config), where
    for name, entry in servers(config).items():
        assert starts_lore_mcp(entry), f"{where}: {name}"


def test_each_client_has_its_section_and_a_config() -> None:
    text = (REPO / "docs" / "clients.md").read_text(encoding="utf-8")
    for client in ("Claude Code", "Claude Desktop", "Cursor", "VS Code", "Codex"):
        section = text.split(f"## {client}\n")[1].split("\n## ")[0]
        assert "lore-mcp" in section and "--vault" in section, client
    configured = sum(bool(servers(json.loads(t))) for _, t in blocks("json"))
    assert configured >= 5 and blocks("toml")
