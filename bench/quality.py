"""How often `search` puts the page that answers a question first, or in the top three.

    python bench/quality.py [--json OUT] [--misses]

The labelled set is `bench/quality/questions.tsv`: one question a line, asked of the
sample vault `brain/` or of the documentation vault in `bench/quality/docs/` (English,
French, Chinese and Japanese pages about a made-up notes app), with the path of the page
that answers it (`|` between equally good answers). Each vault is copied to a temporary
folder and indexed there, so no index is left beside the originals. Prints the top-1 and
top-3 hit rates per language and in all; `--misses` lists the questions that missed the
top three, with what came first.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "bench" / "quality" / "questions.tsv"
VAULTS = {"brain": ROOT / "brain", "docs": ROOT / "bench" / "quality" / "docs"}


@dataclass(frozen=True)
class Question:
    vault: str
    language: str
    query: str
    answers: tuple[str, ...]  # paths in the vault


@dataclass(frozen=True)
class Outcome:
    question: Question
    rank: int | None  # 1-based rank of the first answer among the hits, None if absent
    top: tuple[str, ...]  # the first three slugs found


def load(path: Path = QUESTIONS) -> list[Question]:
    questions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        vault, language, query, answers = line.split("\t")
        questions.append(Question(vault, language, query, tuple(answers.split("|"))))
    return questions


def ask(questions: list[Question], limit: int = 10) -> list[Outcome]:
    """Each question asked of its vault (opened once, in a temporary copy)."""
    from lore_mcp import vault_ops as engine
    from lore_mcp.slugs import slug_from_path

    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, source in VAULTS.items():
            copy = Path(scratch) / name
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".lore"))
            opened = engine.open_vault(copy)
            try:
                for question in (q for q in questions if q.vault == name):
                    wanted = {slug_from_path(path) for path in question.answers}
                    slugs = [h.slug for h in engine.search(opened, question.query, limit).hits]
                    rank = next((i + 1 for i, s in enumerate(slugs) if s in wanted), None)
                    outcomes.append(Outcome(question, rank, tuple(slugs[:3])))
            finally:
                opened.close()
    return outcomes


def rates(outcomes: list[Outcome]) -> dict[str, dict[str, float | int]]:
    """Top-1 and top-3 hit rates (percent) per language and in all."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome.question.language].append(outcome)
        groups["all"].append(outcome)
    table: dict[str, dict[str, float | int]] = {}
    for group, found in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        table[group] = {
            "questions": len(found),
            "top1": round(100 * sum(o.rank == 1 for o in found) / len(found), 1),
            "top3": round(
                100 * sum(o.rank is not None and o.rank <= 3 for o in found) / len(found), 1
            ),
        }
    return table


def main(argv: list[str] | None = None) -> int:
    if str(ROOT / "src") not in sys.path and str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description="Top-1 and top-3 hit rates of search.")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--misses", action="store_true", help="list the questions missed")
    args = parser.parse_args(argv)
    outcomes = ask(load())
    table = rates(outcomes)
    print(f"{'language':<10}{'questions':>10}{'top-1 %':>10}{'top-3 %':>10}")
    for group, row in table.items():
        print(f"{group:<10}{row['questions']:>10}{row['top1']:>10}{row['top3']:>10}")
    if args.misses:
        for outcome in outcomes:
            if outcome.rank is None or outcome.rank > 3:
                q = outcome.question
                print(f"missed [{q.vault}/{q.language}] {q.query!r} -> {list(outcome.top)}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
