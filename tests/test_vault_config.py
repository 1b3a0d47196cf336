"""Where the vaults come from: `--vault [NAME=]PATH`, a TOML config file, $LORE_VAULT;
`lore vaults`; a token file of several tokens; and two vaults behind one real stdio
server."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import write
from helpers import environment, fails, ok
from lore_mcp.cli import main
from lore_mcp.errors import LoreError, UsageError
from lore_mcp.tokens import parse_tokens
from lore_mcp.vault_config import parse_vault, read_config, vault_specs
from lore_mcp.vaults import Grant, VaultSpec, name_for_folder


def test_a_vault_is_name_equals_path_or_a_bare_path(tmp_path: Path) -> None:
    assert parse_vault("team=/srv/wiki") == VaultSpec("team", Path("/srv/wiki"))
    bare = tmp_path / "My Notes"
    assert parse_vault(str(bare)) == VaultSpec("My-Notes", bare)
    odd = tmp_path / "a=b"
    odd.mkdir()
    assert parse_vault(str(odd)).root == odd  # an existing folder holding `=` is a path
    assert parse_vault("not a name=x").root == Path("not a name=x")
    assert name_for_folder(tmp_path / "page") == "vault-page"  # `page` is reserved


def test_the_config_file_lists_vaults_in_order(tmp_path: Path) -> None:
    config = tmp_path / "vaults.toml"
    config.write_text(
        '[vaults.personal]\npath = "notes"\n\n'
        '[vaults.team]\npath = "/srv/team"\nread_only = true\n',
        encoding="utf-8",
    )
    assert read_config(config) == [
        VaultSpec("personal", tmp_path / "notes"),  # relative to the file
        VaultSpec("team", Path("/srv/team"), read_only=True),
    ]
    for bad, said in (
        ("[vaults.a]\n", "needs path"),
        ('[vaults.a]\npath = "x"\nreadonly = true\n', "readonly"),
        ('[vaults."a b"]\npath = "x"\n', "cannot name a vault"),
        ("vaults = 3\n", "lists no vaults"),
        ("[vaults\n", "not valid TOML"),
    ):
        config.write_text(bad, encoding="utf-8")
        with pytest.raises(UsageError, match=said):
            read_config(config)


def test_which_vaults_are_asked_for(tmp_path: Path) -> None:
    config = tmp_path / "vaults.toml"
    config.write_text('[vaults.cfg]\npath = "/c"\n', encoding="utf-8")
    missing = tmp_path / "none.toml"
    given = vault_specs(["a=/a", "b=/b"], None, read_only=["b"], environ={"LORE_VAULT": "/e"})
    assert given == [VaultSpec("a", Path("/a")), VaultSpec("b", Path("/b"), read_only=True)]
    assert vault_specs([], config, environ={"LORE_VAULT": "/e"})[0].name == "cfg"
    env = vault_specs([], None, environ={"LORE_VAULT": "x=/e"}, default_config=config)
    assert env == [VaultSpec("x", Path("/e"))]
    assert vault_specs([], None, environ={}, default_config=config)[0].name == "cfg"
    with pytest.raises(UsageError, match="no vault given"):
        vault_specs([], None, environ={}, default_config=missing)
    with pytest.raises(UsageError, match="Two vaults are named 'A'"):
        vault_specs(["a=/a", "A=/b"], None, environ={})
    with pytest.raises(UsageError, match="not both"):
        vault_specs(["a=/a"], config, environ={})
    with pytest.raises(UsageError, match="names no vault given: c"):
        vault_specs(["a=/a"], None, read_only=["c"], environ={})
    every = vault_specs(["a=/a", "b=/b"], None, read_only=["*"], environ={})
    assert all(spec.read_only for spec in every)


def test_lore_vaults_and_a_vault_by_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write(one, "A.md", "a\n")
    write(two, "B.md", "b\n")
    config = tmp_path / "vaults.toml"
    config.write_text(
        f'[vaults.one]\npath = "{one}"\n[vaults.two]\npath = "{two}"\nread_only = true\n'
        '[vaults.gone]\npath = "gone"\n',
        encoding="utf-8",
    )
    assert main(["--config", str(config), "vaults"]) == 0
    out = capsys.readouterr().out
    assert "one " in out and "not indexed (default)" in out
    assert "(read-only)" in out and "(missing)" in out
    assert main(["--config", str(config), "--vault", "two", "list"]) == 0  # picked by name
    assert "\nb " in capsys.readouterr().out
    assert main(["--config", str(config), "list"]) == 0
    assert "of 1" in capsys.readouterr().out
    assert main(["--config", str(config), "--json", "vaults"]) == 0
    listed = json.loads(capsys.readouterr().out)["vaults"]
    assert [(v["name"], v["pages"]) for v in listed] == [("one", 1), ("two", 1), ("gone", None)]


def test_a_token_file_of_several_tokens() -> None:
    a, b, c = (secrets.token_urlsafe(20) for _ in range(3))
    tokens = parse_tokens(
        f"# tokens\n{a} label=ci role=reader\n\n{b} vaults=team,personal\n{c}\n", "the file"
    )
    assert [t.grant for t in tokens] == [
        Grant("ci", None, "reader"),
        Grant("line-4", frozenset({"team", "personal"}), "writer"),
        Grant("line-5", None, "writer"),
    ]
    assert parse_tokens(a, "f")[0].grant == Grant("token")  # one bare token: everything
    for bad, said in (
        (f"{a} role=admin", "reader or writer"),
        (f"{a} vault=team", "is not label"),
        (f"{a} vaults=a b", "is not label"),
        (f"{a} label=x\n{b} label=x", "twice"),
        ("short", "at least 16"),
        ("# nothing\n", "holds no token"),
    ):
        with pytest.raises(LoreError, match=said):
            parse_tokens(bad, "f")


@pytest.mark.slow  # a server process; the tools are tested in memory by default
@pytest.mark.anyio
async def test_two_vaults_behind_one_stdio_server(tmp_path: Path) -> None:
    personal, team = tmp_path / "personal", tmp_path / "team"
    write(personal, "Plans.md", "okapi\n")
    write(team, "Plans.md", "narwhal\n")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "lore_mcp", "--vault", str(personal), "--vault", f"team={team}"),
            *("--read-only-vault", "team", "--no-watch"),
        ],
        env=environment(),
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            assert "'personal' (" in (client.instructions or "")
            assert (await ok(client, "read_page", slug="Plans", vault="team"))["content"] == (
                "narwhal\n"
            )
            assert "read-only" in await fails(
                client, "save_page", slug="X", content="x", vault="team"
            )
            saved = await ok(client, "save_page", slug="X", content="x")
            assert saved["vault"] == "personal"
    assert (personal / "X.md").read_text() == "x" and not (team / "X.md").exists()
