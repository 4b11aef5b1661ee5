"""Split a SQuAD-layout set by article into "your questions" and a held-back half.

    python scripts/split_by_article.py IN.json --out DIR [--train 1000] [--dev 200] [--seed 0]

The articles are shuffled with ``--seed`` and dealt alternately into two halves, so no
article (and no paragraph) is in both. From the first half ``DIR/train.json`` takes
``--train`` questions and ``DIR/dev.json`` ``--dev`` others (sampled with the seed); the
second half is ``DIR/held.json``, whole. All three keep the SQuAD layout and the articles'
titles. This is how docs/reader.md's adaptation figures split DRCD dev.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def _subset(articles: list[dict], keep: set[str]) -> dict:
    out = []
    for a in articles:
        paras = []
        for p in a["paragraphs"]:
            qas = [qa for qa in p["qas"] if qa["id"] in keep]
            if qas:
                paras.append({**p, "qas": qas})
        if paras:
            out.append({**a, "paragraphs": paras})
    return {"version": "split-by-article", "data": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("--out", required=True)
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--dev", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    articles = json.loads(Path(a.input).read_text(encoding="utf-8"))["data"]
    rng = random.Random(a.seed)
    order = list(range(len(articles)))
    rng.shuffle(order)
    mine = [articles[i] for i in sorted(order[0::2])]
    held = [articles[i] for i in sorted(order[1::2])]
    ids = [qa["id"] for art in mine for p in art["paragraphs"] for qa in p["qas"]]
    if a.train + a.dev > len(ids):
        raise SystemExit(f"the first half holds {len(ids)} questions, fewer than --train + --dev")
    picked = rng.sample(ids, a.train + a.dev)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in (("train.json", _subset(mine, set(picked[: a.train]))),
                       ("dev.json", _subset(mine, set(picked[a.train:]))),
                       ("held.json", {"version": "split-by-article", "data": held})):
        (out / name).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        n = sum(len(p["qas"]) for art in data["data"] for p in art["paragraphs"])
        print(f"{out / name}: {len(data['data'])} articles, {n} questions")


if __name__ == "__main__":
    main()
