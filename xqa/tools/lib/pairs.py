"""R@k per (paragraph language, question language) pair, and its tables (``xqa report pairs``).

A question record (``xqa data corpus``) names its own paragraph (``positive_ids``)
and its parallel paragraphs in other languages (``xling``). For the pair (C, Q)
a question in Q is a hit at k when its paragraph in C is among the first k
passages retrieved from the whole pool.
"""
from __future__ import annotations

from collections import defaultdict


def gold_by_pair(q: dict) -> dict[str, set[str]]:
    """``{paragraph language: gold passage ids}`` of one question record."""
    out: dict[str, set[str]] = {}
    if q.get("positive_ids") and not q.get("crosslingual"):
        out[q["lang"]] = set(q["positive_ids"])
    for c, x in (q.get("xling") or {}).items():
        out[c] = set(x["positive_ids"])
    return out


def pair_recall(hits: list[list[str]], questions: list[dict], ks: list[int]) -> dict[tuple[str, str], dict]:
    """``{(C, Q): {"n", "R@k"...}}`` from each question's ranked passage ids."""
    acc: dict[tuple[str, str], dict] = defaultdict(lambda: {"n": 0, **{f"R@{k}": 0.0 for k in ks}})
    for ranked, q in zip(hits, questions):
        for c, gold in gold_by_pair(q).items():
            cell = acc[(c, q["lang"])]
            cell["n"] += 1
            for k in ks:
                cell[f"R@{k}"] += float(any(pid in gold for pid in ranked[:k]))
    for cell in acc.values():
        for k in ks:
            cell[f"R@{k}"] /= max(1, cell["n"])
    return dict(acc)


def summarise(table: dict[tuple[str, str], dict], ks: list[int]) -> dict[str, float]:
    """Mean R@k over the same-language pairs and over the cross-language pairs (NaN when none)."""
    same = [v for (c, q), v in table.items() if c == q]
    cross = [v for (c, q), v in table.items() if c != q]
    out = {}
    for name, cells in (("same", same), ("cross", cross)):
        for k in ks:
            out[f"{name} R@{k}"] = sum(v[f"R@{k}"] for v in cells) / len(cells) if cells else float("nan")
    return out


def markdown(results: dict, summary: dict, ks: list[int]) -> str:
    """A summary table (methods × same/cross R@k), same-language R@k per language (languages ×
    methods, one table per k) and, per method, C × Q tables of R@max(k)."""
    cols = [f"{s} R@{k}" for s in ("same", "cross") for k in ks]
    lines = ["| method | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for m, s in summary.items():
        lines.append(f"| {m} | " + " | ".join(f"{s[c]:.3f}" for c in cols) + " |")
    methods = list(results)
    same = sorted({c for table in results.values() for c, q in table if c == q})
    for k in ks:
        lines += ["", f"same-language R@{k} per language (questions in the table's first column)", "",
                  "| language | n | " + " | ".join(methods) + " |", "|---|---:|" + "---:|" * len(methods)]
        for lang in same:
            n = next((t[(lang, lang)]["n"] for t in results.values() if (lang, lang) in t), 0)
            lines.append(f"| {lang} | {n} | " + " | ".join(
                f"{results[m][(lang, lang)][f'R@{k}']:.3f}" if (lang, lang) in results[m] else "" for m in methods)
                + " |")
    k = max(ks)
    for m, table in results.items():
        langs = sorted({c for c, _ in table} | {q for _, q in table})
        lines += ["", f"{m}: R@{k}, rows: paragraph language, columns: question language", "",
                  "| C \\ Q | " + " | ".join(langs) + " |", "|---|" + "---:|" * len(langs)]
        for c in langs:
            lines.append(f"| {c} | " + " | ".join(f"{table[(c, q)][f'R@{k}']:.2f}" if (c, q) in table else ""
                                                  for q in langs) + " |")
    return "\n".join(lines) + "\n"
