"""Top-k retrieval accuracy per language against gold passage ids.

For question sets that carry ``positive_ids`` (the embedded world, SQuAD-layout
sets): a question is answered at depth ``k`` when one of its gold passages is
among the top ``k`` hits. Questions are split into *same-language* (a gold
passage is in the question's language) and *cross-lingual* (none is, the
XOR-TyDi case); the world marks this as ``crosslingual``, otherwise it is
derived from the passages' languages. Works for any retriever's hits.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from xqa.records import Hit, Question


def is_crosslingual(q: Question, passage_lang: Mapping[str, str] | None = None) -> bool:
    if "crosslingual" in q.meta:
        return bool(q.meta["crosslingual"])
    if passage_lang is None:
        return False
    return all(passage_lang.get(p) != q.lang for p in q.meta.get("positive_ids", ()))


def retriever_accuracy_table(questions: Sequence[Question], hits: Sequence[Sequence[Hit]],
                             ks: Sequence[int] = (1, 5, 20), passage_lang: Mapping[str, str] | None = None,
                             ) -> list[dict]:
    """Rows ``{"lang", "split", "n", "acc@k"...}``: per language × {same, cross, all}, then ``ALL``.

    ``split`` is ``same`` (a gold passage in the question's language),
    ``cross`` (none) or ``all``. Questions without ``positive_ids`` are skipped.
    The ``ALL`` rows are macro averages over languages that have such questions.
    """
    if len(questions) != len(hits):
        raise ValueError(f"{len(questions)} questions but {len(hits)} hit lists")
    cells: dict[tuple[str, str], list[list[bool]]] = {}
    for q, hs in zip(questions, hits):
        gold = set(q.meta.get("positive_ids", ()))
        if not gold:
            continue
        ids = [h.id for h in hs]
        found = [any(i in gold for i in ids[:k]) for k in ks]
        split = "cross" if is_crosslingual(q, passage_lang) else "same"
        for key in ((q.lang, split), (q.lang, "all")):
            cells.setdefault(key, []).append(found)
    rows = []
    langs = sorted({lang for lang, _ in cells})
    for split in ("same", "cross", "all"):
        per_lang = []
        for lang in langs:
            got = cells.get((lang, split))
            if not got:
                continue
            row = {"lang": lang, "split": split, "n": len(got)}
            row.update({f"acc@{k}": sum(f[j] for f in got) / len(got) for j, k in enumerate(ks)})
            per_lang.append(row)
        rows.extend(per_lang)
        if per_lang:
            macro = {"lang": "ALL", "split": split, "n": sum(r["n"] for r in per_lang)}
            macro.update({f"acc@{k}": sum(r[f"acc@{k}"] for r in per_lang) / len(per_lang) for k in ks})
            rows.append(macro)
    return rows


def format_accuracy_table(rows: Sequence[dict], ks: Sequence[int] = (1, 5, 20)) -> str:
    """A Markdown table: one line per language, acc@k for same-language, cross-lingual and all questions."""
    by = {(r["lang"], r["split"]): r for r in rows}
    langs = [lang for lang in dict.fromkeys(r["lang"] for r in rows)]
    head = ["lang"] + [f"{s} acc@{k}" for s in ("same", "cross", "all") for k in ks] + ["n same", "n cross"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for lang in langs:
        cells = [lang]
        for s in ("same", "cross", "all"):
            r = by.get((lang, s))
            cells += [f"{100 * r[f'acc@{k}']:.1f}" if r else "–" for k in ks]
        cells += [str(by[(lang, s)]["n"]) if (lang, s) in by else "0" for s in ("same", "cross")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
