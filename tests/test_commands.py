"""The `lore` command line, in process (`main([...])`) and as a real subprocess."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from conftest import write
from lore_mcp import cli_io
from lore_mcp.cli import main, mcp_main

Run = tuple[int, str, str]
# `lore` as a child process: the installed script's entry point.
LORE = ["-c", "from lore_mcp.cli import lore_main; lore_main()"]


@pytest.fixture(autouse=True)
def no_vault_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LORE_VAULT", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], vault: Path, *argv: str) -> Any:
    code, out, err = run(capsys, "--vault", str(vault), "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def feed_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def lore(*argv: str, stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[bytes]:
    """`lore` as a script sees it: a child process with pipes for stdin and stdout."""
    clean = {k: v for k, v in os.environ.items() if k not in ("LORE_VAULT", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, *LORE, *argv],
        input=stdin,
        capture_output=True,
        env={**clean, **env},
        timeout=60,
        check=False,
    )


# -- arguments and the vault ------------------------------------------------------------


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "exit status" in out and "LORE_VAULT" in out and "doctor" in out
    code, out, _ = run(capsys, "doctor", "--help")
    assert code == 0
    assert "errors (exit status 1)" in out and "--strict" in out and "orphans" in out


def test_no_vault_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "list")
    assert (code, out) == (2, "")
    assert "--vault PATH or set LORE_VAULT" in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    vault = ("--vault", str(brain_dir))
    assert run(capsys, *vault, "frobnicate")[0] == 2
    assert run(capsys, *vault, "read")[0] == 2
    code, _, err = run(capsys, *vault, "graph", "index", "--depth", "4")
    assert code == 2 and "between 1 and 3" in err
    assert run(capsys, *vault, "search", "x", "--limit", "0")[0] == 2
    assert run(capsys, "index", str(brain_dir), "--vault", str(brain_dir / "concepts"))[0] == 2


def test_missing_vault_folder_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "--vault", str(tmp_path / "nope"), "list")
    assert (code, out) == (2, "")
    assert err.startswith("lore: error: ") and "does not exist; `lore init" in err
    (tmp_path / "file.md").write_text("x", encoding="utf-8")
    code, _, err = run(capsys, "--vault", str(tmp_path / "file.md"), "list")
    assert code == 2 and "is not a folder" in err


def test_vault_from_env_or_either_side(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, brain_dir: Path
) -> None:
    code, out, _ = run(capsys, "list", "--json", "--vault", str(brain_dir))
    assert code == 0 and json.loads(out)["total"] == 18
    monkeypatch.setenv("LORE_VAULT", str(brain_dir))
    code, out, _ = run(capsys, "--json", "list")
    assert code == 0 and json.loads(out)["total"] == 18


# -- index ----------------------------------------------------------------------------------


def test_index_summarises(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    code, out, err = run(capsys, "index", str(brain_dir))
    assert code == 0
    assert "pages  18" in out and "placeholders  1" in out and "18 new" in out
    assert "indexed 18 of 18 changed files" in err  # plain progress: stderr is not a terminal
    report = run_json(capsys, brain_dir, "index")
    assert (report["pages"], report["placeholders"], report["unchanged"]) == (18, 1, 18)
    assert report["links"] > 0 and report["seconds"] >= 0


def test_progress_bar_draws_on_a_terminal() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80)
    with cli_io.progress_bar(console) as report:
        for done in range(1, 4):
            report(done, 3)
    assert "3/3" in screen.getvalue()
    with cli_io.progress_bar(Console(file=io.StringIO())):
        pass  # nothing to parse: no bar at all


# -- reading --------------------------------------------------------------------------------


def test_read_prints_markdown_as_is(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    code, out, err = run(capsys, "--vault", str(brain_dir), "read", "Link Resolution")
    assert code == 0 and err == ""
    assert out == (brain_dir / "concepts" / "Link Resolution.md").read_text(encoding="utf-8")
    page = run_json(capsys, brain_dir, "read", "link-resolution")
    assert page["slug"] == "concepts/link-resolution" and page["content"] == out
    assert "index" in {ref["slug"] for ref in page["backlinks"]}


def test_read_a_placeholder(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    code, out, err = run(capsys, "--vault", str(brain_dir), "read", "roadmap")
    assert (code, out) == (0, "")
    assert "placeholder" in err and "open-questions" in err


def test_unknown_page_fails_on_stderr(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    code, out, err = run(capsys, "--vault", str(brain_dir), "read", "link-resolutoin")
    assert (code, out) == (1, "")
    assert "No page named 'link-resolutoin'" in err and "concepts/link-resolution" in err
    code, _, err = run(capsys, "--vault", str(brain_dir), "backlinks", "zzzzqqq")
    assert code == 1 and "`lore titles`" in err and "search_titles" not in err


def test_search(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    code, out, _ = run(capsys, "--vault", str(brain_dir), "search", "placeholder")
    assert code == 0 and "concepts/placeholders" in out and "**" in out
    found = run_json(capsys, brain_dir, "search", "placeholder", "--limit", "1")
    assert len(found["hits"]) == 1 and found["query"] == "placeholder"
    assert (
        run_json(capsys, brain_dir, "search", '"unbalanced NEAR(')["query"] == '"unbalanced NEAR('
    )
    code, out, _ = run(capsys, "--vault", str(brain_dir), "search", "zzzzqqq")
    assert code == 0 and "No pages match" in out


def test_titles(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    code, out, _ = run(capsys, "--vault", str(brain_dir), "titles", "road")
    assert code == 0 and "roadmap" in out and "(placeholder)" in out
    found = run_json(capsys, brain_dir, "titles", "slugs", "--limit", "3")
    assert found["matches"][0]["slug"] == "concepts/slugs" and len(found["matches"]) <= 3


def test_backlinks(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    code, out, _ = run(capsys, "--vault", str(brain_dir), "backlinks", "roadmap")
    assert code == 0 and "Links to roadmap (2 lines)" in out and "open-questions" in out
    assert "Mentions" not in out
    found = run_json(capsys, brain_dir, "backlinks", "Roadmap", "--unlinked")
    assert {b["slug"] for b in found["linked"]} == {"open-questions", "concepts/placeholders"}
    assert isinstance(found["unlinked"], list)


def test_list_pages_and_paging(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    assert run_json(capsys, brain_dir, "list")["total"] == 18
    every = run_json(capsys, brain_dir, "list", "--placeholders")
    assert [p["slug"] for p in every["pages"] if p["is_placeholder"]] == ["roadmap"]
    tools = run_json(capsys, brain_dir, "list", "tools")
    assert tools["pages"] and all(p["slug"].startswith("tools/") for p in tools["pages"])
    first = run_json(capsys, brain_dir, "list", "--limit", "5")
    rest = run_json(capsys, brain_dir, "list", "--offset", "5")
    assert first["next_offset"] == 5 and rest["next_offset"] is None
    assert len(first["pages"]) + len(rest["pages"]) == 18
    code, out, _ = run(capsys, "--vault", str(brain_dir), "list", "--limit", "5")
    assert code == 0 and "agent-habits" in out and "1-5 of 18; next: --offset 5" in out
    os.utime(brain_dir / "tools" / "Renaming.md")  # modified now: the latest
    latest = run_json(capsys, brain_dir, "list", "--sort", "modified", "--limit", "1")
    assert [p["slug"] for p in latest["pages"]] == ["tools/renaming"]
    assert latest["sort"] == "modified" and latest["pages"][0]["modified"].endswith("Z")
    code, out, _ = run(capsys, "--vault", str(brain_dir), "list", "--sort", "modified")
    assert code == 0 and "modified (UTC)" in out.splitlines()[0]


def test_graph_pages_the_shape(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    first = run_json(capsys, brain_dir, "graph")
    rest = run_json(capsys, brain_dir, "graph", "--offset", "10")
    assert first["next_offset"] is None and rest["offset"] == 10
    assert rest["shape"]["most_linked"] == first["shape"]["most_linked"][10:]
    assert rest["shape"]["most_linked_count"] == len(first["shape"]["most_linked"]) > 10


def test_graph(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    shape = run_json(capsys, brain_dir, "graph")["shape"]
    assert (shape["pages"], shape["placeholders"]) == (18, 1)
    code, out, _ = run(capsys, "--vault", str(brain_dir), "graph")
    assert code == 0 and "18 pages, 1 placeholder" in out and "Most linked" in out
    assert "0 orphans, 0 unreferenced" in out and shape["unreferenced_count"] == 0
    near = run_json(capsys, brain_dir, "graph", "roadmap")["neighbourhood"]
    far = run_json(capsys, brain_dir, "graph", "roadmap", "--depth", "2")["neighbourhood"]
    assert {n["slug"] for n in near["nodes"]} == {
        "roadmap",
        "open-questions",
        "concepts/placeholders",
    }
    assert len(far["nodes"]) > len(near["nodes"])
    code, out, _ = run(capsys, "--vault", str(brain_dir), "graph", "roadmap")
    assert code == 0 and "open-questions -> roadmap" in out


# -- writing --------------------------------------------------------------------------------


def test_save_takes_stdin_byte_for_byte(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, brain_dir: Path
) -> None:
    content = "# Note\r\nSee [[Slugs]] and [[Nowhere Yet]].\r\nno final newline"
    feed_stdin(monkeypatch, content.encode("utf-8"))
    saved = run_json(capsys, brain_dir, "save", "notes/First Note")
    assert saved["created"] is True and saved["path"] == "notes/First Note.md"
    assert saved["placeholders_created"] == ["nowhere-yet"]
    assert (brain_dir / "notes" / "First Note.md").read_bytes() == content.encode("utf-8")
    code, out, _ = run(capsys, "--vault", str(brain_dir), "read", "first-note")
    assert code == 0 and out == content


def test_read_then_save_round_trips(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, brain_dir: Path
) -> None:
    before = (brain_dir / "Index.md").read_bytes()
    code, out, _ = run(capsys, "--vault", str(brain_dir), "read", "Index")
    assert code == 0
    feed_stdin(monkeypatch, out.encode("utf-8"))
    code, out, _ = run(capsys, "--vault", str(brain_dir), "save", "Index")
    assert code == 0 and out.startswith("Unchanged index (Index.md)")
    assert (brain_dir / "Index.md").read_bytes() == before


def test_save_promotes_a_placeholder(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, brain_dir: Path
) -> None:
    feed_stdin(monkeypatch, b"# Roadmap\n")
    code, out, _ = run(capsys, "--vault", str(brain_dir), "save", "roadmap")
    assert code == 0 and out.startswith("Promoted placeholder roadmap (Roadmap.md)")
    assert (brain_dir / "Roadmap.md").read_bytes() == b"# Roadmap\n"


def test_save_refuses_bad_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, brain_dir: Path
) -> None:
    feed_stdin(monkeypatch, b"caf\xe9\n")
    code, out, err = run(capsys, "--vault", str(brain_dir), "save", "Latin One")
    assert (code, out) == (1, "") and "not valid UTF-8" in err
    feed_stdin(monkeypatch, b"x")
    code, _, err = run(capsys, "--vault", str(brain_dir), "save", "../evil")
    assert code == 1 and "leaves the vault" in err
    assert not (brain_dir / "Latin One.md").exists() and not (brain_dir.parent / "evil.md").exists()


def test_rename_rewrites_links(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    renamed = run_json(capsys, brain_dir, "rename", "Slugs", "Page Names")
    assert (renamed["old_slug"], renamed["slug"]) == ("concepts/slugs", "concepts/page-names")
    assert "index" in renamed["rewritten"]
    assert (brain_dir / "concepts" / "Page Names.md").is_file()
    assert "[[Page Names]]" in (brain_dir / "Index.md").read_text(encoding="utf-8")
    code, out, _ = run(capsys, "--vault", str(brain_dir), "rename", "Page Names", "notes/Slugs")
    assert code == 0 and out.startswith("Renamed concepts/page-names -> notes/slugs")
    code, _, err = run(
        capsys, "--vault", str(brain_dir), "rename", "notes/slugs", "concepts/Placeholders"
    )
    assert code == 1 and "already exists" in err


def test_delete_keeps_the_last_version(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    deleted = run_json(capsys, brain_dir, "delete", "Getting Started")
    assert deleted["history_path"].startswith(".lore/history/")
    assert (brain_dir / deleted["history_path"]).is_file()
    assert not (brain_dir / "Getting Started.md").exists()
    code, _, err = run(capsys, "--vault", str(brain_dir), "delete", "Getting Started")
    assert code == 1 and err.startswith("lore: ")


def test_ambiguous_writes_fail_with_candidates(
    capsys: pytest.CaptureFixture[str], brain_dir: Path
) -> None:
    write(brain_dir, "a/Note.md", "one")
    write(brain_dir, "b/Note.md", "two")
    code, _, err = run(capsys, "--vault", str(brain_dir), "delete", "note")
    assert code == 1 and "a/Note.md" in err and "b/Note.md" in err
    assert (brain_dir / "a" / "Note.md").exists() and (brain_dir / "b" / "Note.md").exists()
    code, out, err = run(capsys, "--vault", str(brain_dir), "read", "note")
    assert (code, out) == (0, "one") and "also matches b/Note.md" in err


# -- doctor ---------------------------------------------------------------------------------


def test_doctor_on_the_sample_vault_warns_only(
    capsys: pytest.CaptureFixture[str], brain_dir: Path
) -> None:
    report = run_json(capsys, brain_dir, "doctor")
    assert report["errors"] == 0 and report["warnings"] >= 1
    assert (report["pages"], report["placeholders"]) == (18, 1)
    [roadmap] = report["unresolved"]
    sites = {(s["path"], s["line"], s["target"]) for s in roadmap["links"]}
    assert ("Open Questions.md", 6, "Roadmap") in sites
    assert ("concepts/Placeholders.md", 24, "Roadmap") in sites
    code, out, _ = run(capsys, "--vault", str(brain_dir), "doctor")
    assert code == 0 and "Open Questions.md:6" in out and "0 errors" in out
    code, _, _ = run(capsys, "--vault", str(brain_dir), "doctor", "--strict")
    assert code == 1


def test_doctor_puts_the_verdict_first_and_caps_each_list(
    capsys: pytest.CaptureFixture[str], brain_dir: Path
) -> None:
    for i in range(30):
        write(brain_dir, f"lonely/Alone {i:02}.md", "nobody links here")
    code, out, _ = run(capsys, "--vault", str(brain_dir), "doctor")
    lines = out.splitlines()
    assert code == 0 and lines[1] == "0 errors, 31 warnings"
    assert "Orphans (no links in or out): 30" in out and "lonely/alone-19" in out
    assert "lonely/alone-20" not in out
    assert "... and 10 more (lore doctor --all lists every one)" in out
    code, out, _ = run(capsys, "--vault", str(brain_dir), "doctor", "--all")
    assert "lonely/alone-29" in out and "more (lore doctor --all" not in out


def test_progress_says_how_long_so_far_and_about_how_long_is_left() -> None:
    assert cli_io.progress_line(5, 20, 10.0) == (
        "indexed 5 of 20 changed files in 10 s, about 30 s left"
    )
    assert cli_io.progress_line(20, 20, 75.4) == "indexed 20 of 20 changed files in 1 min 15 s"


def test_doctor_finds_errors(capsys: pytest.CaptureFixture[str], brain_dir: Path) -> None:
    write(brain_dir, "My Page.md", "first [[Index]]")
    write(brain_dir, "my-page.md", "second")
    (brain_dir / "bad.md").write_bytes(b"caf\xe9 [[Index]]\n")
    write(brain_dir, "!!!.md", "no name")
    write(brain_dir, "a/Note.md", "one")
    write(brain_dir, "b/Note.md", "two [[Index]]")
    write(brain_dir, "Linker.md", "see [[Note]] and [[Index]], [[my_page]]\n")
    write(brain_dir, "Lonely.md", "nobody links here")
    code, out, _ = run(capsys, "--vault", str(brain_dir), "--json", "doctor")
    assert code == 1
    report = json.loads(out)
    assert report["invalid_utf8"] == [{"slug": "bad", "path": "bad.md"}]
    assert report["unindexed"] == []  # two files sharing a slug, or none, are both pages
    [ambiguous, *_] = report["ambiguous"]
    assert (ambiguous["path"], ambiguous["line"], ambiguous["target"]) == ("Linker.md", 1, "Note")
    assert ambiguous["candidates"] == ["a/Note.md", "b/Note.md"]
    assert ambiguous["resolved"] == "a/note"
    [loose] = report["loose"]  # `my_page` is no file name: Obsidian leaves it unresolved
    assert (loose["target"], loose["resolved"]) == ("my_page", "My Page.md")
    assert loose["write"].endswith("write [[My Page]]")
    assert {"slug": "lonely", "path": "Lonely.md"} in report["orphans"]
    assert report["errors"] == 1
    code, out, _ = run(capsys, "--vault", str(brain_dir), "doctor")
    assert code == 1
    assert "error: Not valid UTF-8" in out and "Links Obsidian will not follow" in out
    assert "warning: Ambiguous links" in out and "Linker.md:1" in out
    assert "1 error" in out


class GoneReader(io.BytesIO):
    def write(self, data: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")


class ClosedPipe(io.StringIO):
    """stdout after the reader went away (`lore list | head -1`)."""

    buffer = GoneReader()

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, brain_dir: Path
) -> None:
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["--vault", str(brain_dir), "list"]) == 141
    assert capsys.readouterr().err == ""


# -- as a real process ----------------------------------------------------------------------


@pytest.mark.slow
def test_subprocess_round_trip_and_json(brain_dir: Path) -> None:
    vault = ("--vault", str(brain_dir))
    indexed = lore("index", str(brain_dir))
    assert indexed.returncode == 0 and b"pages" in indexed.stdout
    page = lore(*vault, "read", "Design Rules")
    assert page.returncode == 0
    assert page.stdout == (brain_dir / "Design Rules.md").read_bytes()
    edited = page.stdout.replace(b"# Design Rules", b"# Design Rules\n\nSee [[Roadmap]].", 1)
    saved = lore(*vault, "--json", "save", "Design Rules", stdin=edited)
    assert saved.returncode == 0 and json.loads(saved.stdout)["created"] is False
    assert lore(*vault, "read", "Design Rules").stdout == edited
    found = lore(*vault, "search", "--json", "placeholder")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"]


@pytest.mark.slow
def test_subprocess_errors_exit_non_zero(brain_dir: Path, tmp_path: Path) -> None:
    missing = lore("--vault", str(brain_dir), "read", "no-such-page")
    assert (missing.returncode, missing.stdout) == (1, b"")
    assert missing.stderr.startswith(b"lore: No page named") and b"Traceback" not in missing.stderr
    unset = lore("list")
    assert unset.returncode == 2 and b"LORE_VAULT" in unset.stderr
    env_vault = lore("--json", "list", LORE_VAULT=str(brain_dir))
    assert env_vault.returncode == 0 and json.loads(env_vault.stdout)["total"] == 18
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bad.md").write_bytes(b"caf\xe9\n")
    doctor = lore("--vault", str(broken), "doctor")
    assert doctor.returncode == 1 and b"Not valid UTF-8" in doctor.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ("list",),
        pytest.param(("search", "placeholder"), marks=pytest.mark.slow),
        pytest.param(("backlinks", "roadmap", "--unlinked"), marks=pytest.mark.slow),
        pytest.param(("graph", "index", "--depth", "2"), marks=pytest.mark.slow),
        ("doctor",),
    ],
)
def test_piped_output_is_plain_text(brain_dir: Path, argv: tuple[str, ...]) -> None:
    result = lore("--vault", str(brain_dir), *argv, FORCE_COLOR="1", TERM="xterm-256color")
    assert result.returncode == 0, result.stderr
    assert result.stdout and b"\x1b" not in result.stdout and b"\x1b" not in result.stderr
    assert all(line == line.rstrip() for line in result.stdout.decode().splitlines())


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@pytest.mark.slow
def test_serve_answers_initialize_and_logs_only_warnings(brain_dir: Path) -> None:
    served = lore("--vault", str(brain_dir), "serve", stdin=json.dumps(INITIALIZE).encode() + b"\n")
    assert served.returncode == 0, served.stderr
    reply = json.loads(served.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "lore-mcp"
    assert served.stderr == b""  # WARNING and up by default: a clean session says nothing


@pytest.mark.slow
def test_serve_takes_its_options(brain_dir: Path) -> None:
    served = lore(
        "serve",
        "--vault",
        str(brain_dir),
        "--no-watch",
        "--log-level",
        "info",
        stdin=json.dumps(INITIALIZE).encode() + b"\n",
    )
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout.splitlines()[0])["id"] == 1
    assert b"watch off" in served.stderr  # --no-watch reached the server, logging at info


def test_a_reader_that_goes_away_ends_the_command_quietly(brain_dir: Path) -> None:
    """`lore list | head -0`: the pipe closes before lore writes; exit 141, no complaint."""
    clean = {k: v for k, v in os.environ.items() if k != "LORE_VAULT"}
    with subprocess.Popen(
        [sys.executable, *LORE, "--vault", str(brain_dir), "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(60)
    assert (code, err) == (141, b"")


# -- starting a vault, and mistakes in the arguments ----------------------------------------


def test_init_makes_a_vault_and_says_how_to_serve_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "notes" / "work"
    code, _, err = run(capsys, "--vault", str(missing), "list")
    assert code == 2 and f"`lore init {missing}` makes it" in err
    code, out, err = run(capsys, "init", str(missing))
    assert code == 0 and missing.is_dir() and (missing / ".lore" / "cache" / "lore.db").is_file()
    assert "pages  1" in out and f"lore-mcp --vault {missing}" in err
    assert "persistent memory for AI agents" in (missing / "Home.md").read_text()
    assert (missing / ".gitignore").read_text() == ".lore/cache/\n"
    entry = json.loads(err.split("MCP settings): ")[1])
    assert entry["mcpServers"]["lore"] == {"command": "lore-mcp", "args": ["--vault", str(missing)]}
    write(missing, "First.md", "hello\n")
    (missing / ".gitignore").write_text("node_modules/", encoding="utf-8")
    code, out, _ = run(capsys, "init", str(missing))  # an existing vault: indexed again
    assert code == 0 and "pages  2" in out
    assert (missing / "First.md").read_text() == "hello\n"
    assert (missing / ".gitignore").read_text() == "node_modules/\n.lore/cache/\n"


def test_a_misspelt_option_or_command_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str], brain_dir: Path
) -> None:
    code, _, err = run(capsys, "lsit", "--vault", str(brain_dir))
    assert code == 2 and "(did you mean list?)" in err
    code, _, err = run(capsys, "--vault", str(brain_dir), "list", "--limt", "3")
    assert code == 2 and "(did you mean --limit?)" in err
    with pytest.raises(SystemExit) as served:
        mcp_main(["--vualt", str(brain_dir)])
    _, err = capsys.readouterr()
    assert served.value.code == 2
    assert err.startswith("usage: lore-mcp") and "(did you mean --vault?)" in err


def test_a_vault_given_twice_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], brain_dir: Path, tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--vault", str(brain_dir), "list", "--vault", str(tmp_path))
    assert code == 2 and "--vault was given twice" in err
    code, out, _ = run(capsys, "--vault", str(brain_dir), "list", "--vault", str(brain_dir))
    assert code == 0 and "of 18" in out  # the same folder twice is no mistake


def test_the_command_scripts_import_no_command_line_until_called() -> None:
    """A reader process of a large pass runs the imports of the script that started the
    server again: the `lore-mcp` and `lore` scripts name entry points whose module
    brings in neither the SDK nor pydantic, so a reader stays small."""
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    scripts = project["project"]["scripts"]
    assert scripts == {
        "lore-mcp": "lore_mcp.console:mcp_main",
        "lore": "lore_mcp.console:lore_main",
    }
    command_line = ["cli", "cli_parser", "cli_options", "cli_io", "commands"]
    heavy = {"mcp", "pydantic", "rich", "networkx", *(f"lore_mcp.{m}" for m in command_line)}
    code = f"import sys, lore_mcp.console; print(sorted(set(sys.modules) & {heavy}))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
