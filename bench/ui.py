"""How fast the web UI is in a real browser: the whole-vault graph view of a generated
vault, from navigation until the drawing is done, and a page view, from navigation
until the page has loaded. Headless Chromium (Debian's) driven by Playwright.

    python bench/ui.py --pages 10000

Prints one line per figure: the median and the slowest of `--runs` loads in one open
tab, as a person clicks from view to view (the browser's cache does not help: the UI
answers with no-store). Each figure is the page's own, from its navigation's start
(Navigation Timing; the graph's times are marked by its script), beside the wall clock
of the driver's call, which adds its round trips.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generate import generate
from lore_mcp import vault_ops as engine
from lore_mcp.ui.app import Background

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # Debian's package
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _graph_ms(tab: Any, base: str) -> tuple[float, dict[str, float]]:
    """Wall time from `goto` to the drawing done, and the page's own times (ms since
    its navigation began): the graph's data fetched, laid out, drawn."""
    started = time.perf_counter()
    tab.goto(base + "/graph", wait_until="commit")
    tab.wait_for_selector("body[data-graph-ready='1']", timeout=60_000)
    elapsed = (time.perf_counter() - started) * 1000
    timings: dict[str, float] = tab.evaluate("window.loreGraph.timings")
    return elapsed, timings


def _page_ms(tab: Any, base: str, slug: str) -> tuple[float, float]:
    """Wall time from `goto` to the load event, and the page's own (its navigation
    timing's loadEventEnd)."""
    started = time.perf_counter()
    tab.goto(base + "/page/" + slug, wait_until="load")
    elapsed = (time.perf_counter() - started) * 1000
    loaded = float(tab.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
    return elapsed, loaded


def _line(name: str, times: list[float], target: float) -> str:
    median, worst = statistics.median(times), max(times)
    verdict = "within" if median <= target else "OVER"
    return (
        f"{name:<34} median {median:7.0f} ms   slowest {worst:7.0f} ms   "
        f"({verdict} the {target:.0f} ms target, {len(times)} runs)"
    )


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="lore-bench-ui-"))
    try:
        generate(folder / "vault", args.pages)
        vault = engine.open_vault(folder / "vault")
        try:
            engine.index_vault(vault)
            busiest = engine.get_graph(vault, limit=10_000).shape
            assert busiest is not None and busiest.most_linked
            slug = busiest.most_linked[0].slug  # the page with the most backlinks
            ranked = busiest.most_linked
            median_slug = ranked[len(ranked) // 2].slug if len(ranked) > 1 else slug
            exported = engine.export_graph(vault)
            with Background(vault) as served, sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                tab = context.new_page()
                tab.goto(served.url)  # the token becomes the context's cookie
                tab.on("crash", lambda *_: print("the tab crashed", file=sys.stderr))
                graphs, pages, typical = [], [], []
                for _ in range(args.runs):
                    graphs.append(_graph_ms(tab, served.base))
                    pages.append(_page_ms(tab, served.base, slug))
                    typical.append(_page_ms(tab, served.base, median_slug))
                browser.close()
        finally:
            vault.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"lore ui, {args.pages} pages ({exported.node_count} nodes, {exported.edge_count} "
        "links; the graph view draws the 2000 most linked)"
    )
    print(_line("whole-vault graph, drawn (page)", [t["drawn"] for _, t in graphs], 2000))
    print(_line("  its data fetched by", [t["fetched"] for _, t in graphs], 2000))
    print(_line("  laid out by", [t["laidOut"] for _, t in graphs], 2000))
    print(_line("whole-vault graph, wall clock", [wall for wall, _ in graphs], 2000))
    print(_line("page view (most linked), loaded", [loaded for _, loaded in pages], 200))
    print(_line("page view (most linked), wall", [wall for wall, _ in pages], 200))
    print(_line("page view (typical), loaded", [loaded for _, loaded in typical], 200))
    print(_line("page view (typical), wall", [wall for wall, _ in typical], 200))
    print(f"(the pages viewed: {slug}, the most linked; {median_slug}, the median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
