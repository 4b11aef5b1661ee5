"""Real paragraphs and questions of the shipped corpus, for the tests that build over real text."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def dozen() -> tuple[list[dict], list[dict]]:
    """12 real paragraphs of the shipped corpus (German ones with their parallel English
    paragraphs, and Japanese, Korean, Swahili, Chinese, Hindi and Spanish ones) and the German
    questions asked about them."""
    with gzip.open(ROOT / "xqa" / "corpus" / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        passages = {p["id"]: p for p in map(json.loads, f)}
    with gzip.open(ROOT / "xqa" / "corpus" / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
        questions = list(map(json.loads, f))
    chosen, asked = [], []
    for q in questions:   # same-language German questions whose English paragraph is shipped too
        if q["lang"] == "de" and not q.get("crosslingual") and "en" in q.get("xling", {}) and len(chosen) < 6:
            de, en = q["positive_ids"][0], q["xling"]["en"]["positive_ids"][0]
            if de not in chosen and en not in chosen and len(q["answers"][0]) <= 25:
                chosen += [de, en]
                asked.append(q)
    for lang in ("ja", "ko", "sw", "zh", "hi", "es"):
        q = next(q for q in questions if q["lang"] == lang and not q.get("crosslingual")
                 and q["positive_ids"][0] not in chosen)
        chosen.append(q["positive_ids"][0])
    rows = [{k: passages[pid][k] for k in ("id", "title", "text", "lang")} for pid in chosen]
    return rows, asked
