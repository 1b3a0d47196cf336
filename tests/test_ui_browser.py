"""The web UI in a real headless browser: Debian's Chromium driven by Playwright.

Open a page, follow a wiki link, search, use the quick switcher, draw the graph and
click a node, open a change in Activity, restore a version and find the file back byte
for byte; without the token, a browser gets 403 and changes nothing. With
LORE_SCREENSHOTS=DIR set, the graph and activity views of `brain/` are saved there as
PNG (the README's pictures)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from lore_mcp import audit
from lore_mcp import vault_ops as engine
from lore_mcp.ui.app import Background
from lore_mcp.vault_ops import AppState

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # Debian's package
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run does)")
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def served(brain: AppState) -> Iterator[Background]:
    with Background(brain) as background:
        yield background


@pytest.fixture
def page(browser: Any, served: Background) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    tab.goto(served.url)
    yield tab
    context.close()


def _path(tab: Any, base: str) -> str:
    return str(tab.url).removeprefix(base)


def test_pages_links_search_and_the_switcher(page: Any, served: Background) -> None:
    assert _path(page, served.base) == "/"  # the token went into a cookie
    page.goto(served.base + "/page/concepts/link-syntax")
    page.locator("#content a.wiki[data-slug='concepts/slugs']").first.click()
    page.wait_for_url(served.base + "/page/concepts/slugs")
    assert page.locator("h1.page-title").inner_text() == "Slugs"
    page.fill("header input[name=q]", "placeholder promotion")
    page.press("header input[name=q]", "Enter")
    page.wait_for_url("**/search?q=*")
    page.locator("ol.hits a").first.click()
    page.wait_for_url("**/page/**")
    page.keyboard.press("Control+k")
    page.fill("#switch-input", "link res")
    page.wait_for_selector("#switch-results li.chosen")
    page.keyboard.press("Enter")
    page.wait_for_url(served.base + "/page/concepts/link-resolution")


def test_the_graph_opens_a_clicked_node(page: Any, served: Background, brain: AppState) -> None:
    _changes(brain)
    page.goto(served.base + "/graph")
    page.wait_for_selector("body[data-graph-ready='1']")
    status = page.locator("#graph-status").inner_text()
    assert "nodes" in status and "links" in status
    _screenshot(page, "graph.png")
    spot = page.evaluate("window.loreGraph.screenPosition('concepts/slugs')")
    page.mouse.click(spot["x"], spot["y"])
    page.wait_for_url(served.base + "/page/concepts/slugs")
    page.goto(served.base + "/graph?page=Slugs&depth=2")
    page.wait_for_selector("body[data-graph-ready='1']")
    spot = page.evaluate("window.loreGraph.screenPosition('concepts/slugs')")
    assert spot is not None


def test_activity_diff_and_restore(page: Any, served: Background, brain: AppState) -> None:
    original = (brain.root / "Index.md").read_bytes()
    _changes(brain)
    page.goto(served.base + "/activity")
    _screenshot(page, "activity.png")
    page.locator("tr.change", has_text="index").locator("a.open-change").first.click()
    page.wait_for_selector("#diff .dadd")
    assert "an agent's note" in page.locator("#diff").inner_text()
    page.locator("tr.replaced button.restore").click()
    page.wait_for_selector("#restored")
    assert (brain.root / "Index.md").read_bytes() == original
    assert audit.read_log(brain.root).records[-1].door == "ui"


def test_without_the_token_a_browser_gets_403(
    browser: Any, served: Background, brain: AppState
) -> None:
    engine.save_page(brain, "Index", "changed\n")
    now = (brain.root / "Index.md").read_bytes()
    context = browser.new_context()
    tab = context.new_page()
    answer = tab.goto(served.base + "/page/index")
    assert answer.status == 403 and "token" in tab.inner_text("body")
    posted = context.request.post(
        served.base + "/restore",
        form={"name": "/Index.md", "version": "1"},
        headers={"origin": served.base},
    )
    assert posted.status == 403
    assert (brain.root / "Index.md").read_bytes() == now
    context.close()


def _changes(vault: AppState) -> None:
    """A few changes by two agents' sessions, as the activity view shows them."""
    first = audit.Door("mcp", session="5f0c2a9e", client_name="claude-code", client_version="2.1")
    second = audit.Door("mcp", session="9b41d7c3", client_name="codex", client_version="0.9")
    text = (vault.root / "Index.md").read_text(encoding="utf-8")
    engine.save_page(vault, "Index", text + "\nan agent's note\n", door=first)
    engine.save_page(vault, "notes/Session Notes", "Met [[Slugs]] and [[Ideas]].\n", door=second)
    engine.save_page(vault, "Open Questions", "- what next?\n", mode="append", door=second)


def _screenshot(tab: Any, name: str) -> None:
    folder = os.environ.get("LORE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(Path(folder) / name))
