"""The web UI without a browser: the token, the host and origin checks, each route, the
rendering of pages, the activity view and a restore, against the real app and a real
vault (Starlette's TestClient)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from helpers import environment
from lore_mcp import audit
from lore_mcp import vault_ops as engine
from lore_mcp.ui import build_app
from lore_mcp.ui.guard import cookie_name
from lore_mcp.vault_ops import AppState

TOKEN = "test-token-0123456789abcdef"
BASE = "http://127.0.0.1:8766"
ORIGIN = {"origin": BASE}


def _client(state: AppState, *, read_only: bool = False, enter: bool = True) -> TestClient:
    client = TestClient(build_app(state, TOKEN, read_only=read_only), base_url=BASE)
    if enter:
        assert client.get(f"/?token={TOKEN}").status_code == 200
    return client


@pytest.fixture
def ui(brain: AppState) -> Iterator[TestClient]:
    with _client(brain) as client:
        yield client


def _changed_index(state: AppState) -> bytes:
    """Index.md saved over once (so one version is kept); its first bytes."""
    before = (state.root / "Index.md").read_bytes()
    engine.save_page(state, "Index", "new words\n", door=audit.Door("mcp", client_name="probe"))
    return before


ROUTES = ["/", "/pages", "/page/index", "/search?q=graph", "/api/titles?q=sl", "/graph",
          "/api/graph", "/activity", "/activity/0", "/static/ui.js", "/file/x.png"]  # fmt: skip


@pytest.mark.parametrize("path", ROUTES)
def test_nothing_answers_without_the_token(brain: AppState, path: str) -> None:
    client = _client(brain, enter=False)
    assert client.get(path).status_code == 403
    assert client.get(path, headers={"x-lore-token": "wrong-token-0123456789"}).status_code == 403
    assert (
        client.get(
            path, headers={"cookie": f"{cookie_name('127.0.0.1:8766')}={TOKEN[:-1]}"}
        ).status_code
        == 403
    )
    assert client.get(path, headers={"x-lore-token": TOKEN}).status_code != 403


def test_a_restore_without_the_token_changes_nothing(brain: AppState) -> None:
    _changed_index(brain)
    now = (brain.root / "Index.md").read_bytes()
    records = len(audit.read_log(brain.root).records)
    client = _client(brain, enter=False)
    answer = client.post("/restore", data={"name": "/Index.md", "version": "1"}, headers=ORIGIN)
    assert answer.status_code == 403
    assert (brain.root / "Index.md").read_bytes() == now
    assert len(audit.read_log(brain.root).records) == records


def test_the_token_in_the_address_becomes_a_cookie(brain: AppState) -> None:
    client = _client(brain, enter=False)
    entered = client.get(f"/graph?token={TOKEN}&depth=2", follow_redirects=False)
    assert entered.status_code == 303
    assert entered.headers["location"] == "/graph?depth=2"
    cookie = entered.headers["set-cookie"]
    assert cookie.startswith("lore_ui_token_8766=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/graph?depth=2").status_code == 200
    assert _client(brain, enter=False).get(f"/?token={TOKEN}x").status_code == 403


def test_two_uis_keep_their_own_cookies(brain: AppState) -> None:
    other = TestClient(build_app(brain, "another-token-0123456789"), base_url=BASE)
    first = _client(brain)
    cookie = first.cookies.get(cookie_name("127.0.0.1:8766"))
    assert cookie == TOKEN
    on_another_port = {"host": "127.0.0.1:9000", "cookie": f"lore_ui_token_8766={TOKEN}"}
    assert other.get("/", headers=on_another_port).status_code == 403


def test_a_host_that_is_not_loopback_is_refused(ui: TestClient) -> None:
    assert ui.get("/", headers={"host": "evil.example:8766"}).status_code == 403
    assert ui.get("/", headers={"host": "localhost:8766"}).status_code == 200


def test_a_change_needs_the_same_origin(brain: AppState, ui: TestClient) -> None:
    _changed_index(brain)
    now = (brain.root / "Index.md").read_bytes()
    form = {"name": "/Index.md", "version": "1"}
    for headers in ({"origin": "http://evil.example"}, {}, {"sec-fetch-site": "cross-site"},
                    {"origin": "http://127.0.0.1:9999"}):  # fmt: skip
        assert ui.post("/restore", data=form, headers=headers).status_code == 403
    assert (brain.root / "Index.md").read_bytes() == now
    answer = ui.post("/restore", data=form, headers={"sec-fetch-site": "same-origin"})
    assert answer.status_code == 200


def test_a_restore_is_the_engine_restore(brain: AppState, ui: TestClient) -> None:
    before = _changed_index(brain)
    answer = ui.post(
        "/restore", data={"name": "/Index.md", "version": "1"}, headers=ORIGIN,
        follow_redirects=False,
    )  # fmt: skip
    assert answer.status_code == 303 and answer.headers["location"] == "/page/index?restored=1"
    assert (brain.root / "Index.md").read_bytes() == before
    last = audit.read_log(brain.root).records[-1]
    assert (last.tool, last.mode, last.door, last.client_name) == (
        "restore_page", "restore", "ui", "lore ui"
    )  # fmt: skip
    assert "Version 1 was restored" in ui.get(answer.headers["location"]).text


def test_a_bad_restore_says_why(brain: AppState, ui: TestClient) -> None:
    answer = ui.post("/restore", data={"name": "/Index.md", "version": "7"}, headers=ORIGIN)
    assert answer.status_code == 400 and "no kept versions" in answer.text


def test_read_only_refuses_every_change(brain: AppState) -> None:
    before = _changed_index(brain)
    with _client(brain, read_only=True) as client:
        assert "Restore</button>" not in client.get("/page/index").text
        form = {"name": "/Index.md", "version": "1"}
        assert client.post("/restore", data=form, headers=ORIGIN).status_code == 403
    assert (brain.root / "Index.md").read_bytes() != before


def test_every_answer_carries_the_policy(ui: TestClient) -> None:
    policy = ui.get("/").headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy


def _page(state: AppState, name: str, text: str) -> None:
    engine.save_page(state, name, text)


def test_a_page_renders_its_links(state: AppState) -> None:
    (state.root / "pics").mkdir()
    (state.root / "pics" / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    (state.root / "private").mkdir()
    (state.root / "private" / "key.png").write_bytes(b"\x89PNG")
    (state.root / ".gitignore").write_text("private/\n", encoding="utf-8")
    _page(state, "Target", "---\naliases: [Tgt]\nstatus: draft\n---\n# Target\n")
    _page(state, "a/Twin", "one")
    _page(state, "b/Twin", "two")
    _page(state, "My Page", "x")
    _page(
        state,
        "Source",
        "[[Target|the target]] [[Ghost]] [[my_page]] [[Twin]] [[Target#Part]]\n\n"
        "[md](Target.md) ![[cat.png]] `[[Code]]` <script>alert(1)</script>\n",
    )
    with _client(state) as client:
        html = client.get("/page/source").text
        target = client.get("/page/Target").text
        assert client.get("/file/pics/cat.png").content.startswith(b"\x89PNG")
        assert client.get("/file/../outside.png").status_code == 404
        assert client.get("/file/.lore/x.png").status_code == 404
        assert client.get("/file/private/key.png").status_code == 404  # ignored
    assert '<a class="wiki" href="/page/target" data-slug="target">the target</a>' in html
    assert 'class="wiki placeholder" href="/page/ghost"' in html
    assert 'class="wiki loose"' in html and 'class="wiki ambiguous"' in html
    assert 'href="/page/target#Part"' in html and "Target › Part" in html
    assert 'href="/page/target" data-slug="target">md</a>' in html
    assert '<img src="/file/pics/cat.png" alt="cat.png">' in html
    assert "<code>[[Code]]</code>" in html
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "<th>status</th><td>draft</td>" in target
    assert "Backlinks" in target and 'href="/page/source"' in target


def test_a_missing_page_is_a_404_with_suggestions(ui: TestClient) -> None:
    answer = ui.get("/page/Link Resolutio")
    assert answer.status_code == 404 and "concepts/link-resolution" in answer.text


def test_a_placeholder_page(ui: TestClient, brain: AppState) -> None:
    ghost = engine.get_graph(brain).shape
    assert ghost is not None and ghost.unresolved
    answer = ui.get("/page/" + ghost.unresolved[0].slug)
    assert answer.status_code == 200 and "This is a placeholder" in answer.text


def test_search_and_the_switcher(ui: TestClient) -> None:
    found = ui.get("/search?q=placeholder promotion").text
    assert 'href="/page/concepts/placeholders"' in found and "<mark>" in found
    titles = ui.get("/api/titles?q=link res").json()
    assert titles[0]["slug"] == "concepts/link-resolution"
    assert ui.get("/api/titles?q=").json() == []


def test_the_graph_data(ui: TestClient) -> None:
    whole = ui.get("/api/graph").json()
    assert whole["node_count"] == len(whole["nodes"]) and whole["center"] is None
    flags = {node[0]: node[2] for node in whole["nodes"]}
    assert any(flag & 1 for flag in flags.values())  # placeholders are drawn
    assert all(0 <= a < len(flags) and 0 <= b < len(flags) for a, b in whole["edges"])
    around = ui.get("/api/graph?page=Slugs&depth=1").json()
    assert around["center"] == "concepts/slugs"
    assert {node[0]: node[2] & 4 for node in around["nodes"]}["concepts/slugs"] == 4
    assert ui.get("/api/graph?page=No Such Page").status_code == 404


def test_activity_lists_and_filters_changes(brain: AppState, ui: TestClient) -> None:
    engine.save_page(brain, "Index", "one\n", door=audit.Door("mcp", client_name="alpha"))
    engine.save_page(brain, "Slugs", "two\n", door=audit.Door("mcp", client_name="beta"))
    page = ui.get("/activity").text
    assert page.count('class="change"') == 2 and "alpha" in page and "beta" in page
    assert ui.get("/activity?client=alpha").text.count('class="change"') == 1
    assert ui.get("/activity?page=slugs").text.count('class="change"') == 1
    today = audit.read_log(brain.root).records[0].time[:10]
    assert ui.get(f"/activity?day={today}").text.count('class="change"') == 2
    assert ui.get("/activity?day=2001-01-01").text.count('class="change"') == 0
    assert ui.get("/activity/99").status_code == 404


def test_a_change_shows_its_diff_and_versions(brain: AppState, ui: TestClient) -> None:
    before = _changed_index(brain)
    change = ui.get("/activity/0").text
    assert '<span class="dadd">+new words' in change
    first_line = before.decode().splitlines()[0]
    assert f'<span class="ddel">-{first_line}' in change
    assert "what this change replaced" in change and "the file now" in change
    assert 'name="name" value="/Index.md"' in change


def test_lore_ui_is_a_command(brain_dir: Path) -> None:
    from lore_mcp.cli_parser import build_parser

    args = build_parser().parse_args(["--vault", str(brain_dir), "ui", "--port", "0", "--open"])
    assert (args.command, args.port, args.open, args.read_only) == ("ui", 0, True, False)


@pytest.mark.slow
def test_lore_ui_serves_until_interrupted(brain_dir: Path) -> None:
    import signal
    import subprocess
    import sys

    import httpx2

    process = subprocess.Popen(
        [sys.executable, "-c", "from lore_mcp.cli import lore_main; lore_main()",
         "--vault", str(brain_dir), "ui", "--port", "0", "--no-watch"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(), text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("lore ui: open http://127.0.0.1:")
        url = line.split()[-1]
        base = url.partition("/?")[0]
        assert httpx2.get(base + "/").status_code == 403
        with httpx2.Client(follow_redirects=True) as client:
            answer = client.get(url)
            assert answer.status_code == 200 and "Recently changed" in answer.text
            assert client.get(base + "/page/Slugs").status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=20)
    assert process.returncode == 130  # stopped by Ctrl-C, as every lore command is
    assert "Traceback" not in errors


def test_the_switcher_finds_an_alias(state: AppState) -> None:
    engine.save_page(state, "Ada Lovelace", "---\naliases: [Countess of Lovelace]\n---\nx\n")
    with _client(state) as client:
        found = client.get("/api/titles?q=Countess").json()
    assert found and found[0]["slug"] == "ada-lovelace" and found[0]["title"] == "Ada Lovelace"


def test_tables_headings_and_outside_links(state: AppState) -> None:
    _page(state, "Target", "# Part\n")
    _page(
        state,
        "Source",
        "| a | b |\n|---|---|\n| [[Target\\|shown]] | x |\n\n"
        "[[#Local Part]] [web](https://example.org) ![pic](pics/p.png)\n",
    )
    with _client(state) as client:
        html = client.get("/page/source").text
    assert '<td><a class="wiki" href="/page/target" data-slug="target">shown</a></td>' in html
    assert '<a class="wiki" href="#Local%20Part">Local Part</a>' in html
    assert 'href="https://example.org" rel="noopener noreferrer"' in html
    assert '<img src="pics/p.png" alt="pic" />' in html  # no such file: left as written


def test_a_deleted_page_comes_back_from_its_change(state: AppState) -> None:
    _page(state, "Gone", "the words\n")
    data = (state.root / "Gone.md").read_bytes()
    engine.delete_page(state, "Gone")
    with _client(state) as client:
        change = client.get("/activity/1").text
        assert "nothing (it was deleted)" in change and '<span class="ddel">-the words' in change
        answer = client.post("/restore", data={"name": "/Gone.md", "version": "1"}, headers=ORIGIN)
        assert answer.status_code == 200 and "Version 1 was restored" in answer.text
    assert (state.root / "Gone.md").read_bytes() == data


def test_a_page_links_to_its_changes(brain: AppState, ui: TestClient) -> None:
    _changed_index(brain)
    page = ui.get("/page/index").text
    assert 'href="/activity?page=Index.md"' in page
    assert ui.get("/activity?page=Index.md").text.count('class="change"') == 1
