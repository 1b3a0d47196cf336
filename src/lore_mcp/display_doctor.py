"""How `lore doctor` shows the vault's health: the verdict first, then each kind of
finding as a table (the report itself is `vault_ops.doctor`, made in `vault_ops.checkup`)."""

from __future__ import annotations

from functools import partial

from rich.console import Console
from rich.text import Text

from lore_mcp.display import MUTED, new_table, plural, slug_text
from lore_mcp.models import DoctorReport

ROWS = 20  # rows per list of `lore doctor`, unless every one is asked for


def show(report: DoctorReport, console: Console, rows: int | None = ROWS) -> None:
    """The health report: the verdict first, then errors, then warnings, each list cut
    to `rows` rows (None: every one)."""
    verdict = f"{plural(report.errors, 'error')}, {plural(report.warnings, 'warning')}"
    console.print(
        Text(
            f"{report.vault}: {plural(report.pages, 'page')}, "
            f"{plural(report.placeholders, 'placeholder')}, {plural(report.links, 'link')}"
        )
    )
    console.print(Text(verdict, style="bold red" if report.errors else "bold green"))
    console.print(
        Text(
            f"history: {plural(report.history_versions, 'kept version')}, "
            f"{report.history_bytes / 1e6:.1f} MB in .lore/history/"
        )
    )
    if report.unfinished_write:
        console.print(Text(f"error: {report.unfinished_write}", style="red"))
    if report.ignored:
        console.print(
            Text(
                f"ignored: {report.ignored} (files and folders a .gitignore or .loreignore "
                "leaves out)"
            )
        )
    section = partial(_section, console, limit=rows)
    section(
        "error",
        "Not valid UTF-8 (indexed as far as it decodes)",
        ("slug", "file"),
        [(f.slug, f.path) for f in report.invalid_utf8],
    )
    section(
        "error", "Not indexed", ("file", "reason"), [(f.path, f.reason) for f in report.unindexed]
    )
    section(
        "warning",
        "Unresolved links (placeholders)",
        ("placeholder", "written at", "as"),
        [
            (u.slug, f"{s.path}:{s.line}", f"[[{s.target}]]")
            for u in report.unresolved
            for s in u.links
        ],
    )
    section(
        "warning",
        "Ambiguous links",
        ("written at", "as", "resolved to", "candidates"),
        [
            (f"{a.path}:{a.line}", f"[[{a.target}]]", a.resolved, ", ".join(a.candidates))
            for a in report.ambiguous
        ],
    )
    section(
        "warning",
        "Links Obsidian will not follow",
        ("written at", "as", "names", "write instead"),
        [
            (f"{n.path}:{n.line}", f"[[{n.target}]]", n.resolved, n.write.rpartition("write ")[2])
            for n in report.loose
        ],
    )
    section(
        "warning",
        "Orphans (no links in or out)",
        ("slug", "file"),
        [(o.slug, o.path) for o in report.orphans],
    )
    section(
        "warning",
        "Frontmatter that does not parse (the page has no properties)",
        ("file", "problem"),
        [(f.path, f.reason) for f in report.broken_properties],
    )
    section(
        "warning",
        "Pages with more links than one page may have indexed",
        ("file", "problem"),
        [(f.path, f.reason) for f in report.too_many_links],
    )


def _section(
    console: Console,
    severity: str,
    heading: str,
    headers: tuple[str, ...],
    rows: list[tuple[str, ...]],
    *,
    limit: int | None,
) -> None:
    if not rows:
        return
    console.print()
    colour = "red" if severity == "error" else "yellow"
    console.print(
        Text.assemble((f"{severity}: ", f"bold {colour}"), (f"{heading}: {len(rows)}", "bold"))
    )
    table = new_table(*headers)
    for row in rows[:limit]:
        table.add_row(slug_text(row[0]), *(Text(cell) for cell in row[1:]))
    console.print(table)
    if limit is not None and len(rows) > limit:
        left = len(rows) - limit
        console.print(Text(f"... and {left} more (lore doctor --all lists every one)", style=MUTED))
