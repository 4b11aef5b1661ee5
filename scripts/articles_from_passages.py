"""Rebuild whole articles from a passage file's paragraphs, as WikiExtractor ``--json`` output.

    python scripts/articles_from_passages.py PASSAGES --out DIR

PASSAGES is a passage file xqa reads (JSONL or ``.jsonl.gz`` with ``title``, ``text`` and
``lang``: the shipped corpus, ``xqa data corpus --mlqa-pool``'s). Its paragraphs are grouped by
``(lang, title)`` in file order, each group one article whose text is the paragraphs' non-blank
lines, one per line (WikiExtractor's layout); a paragraph without a title is an article of its
own. ``DIR/<lang>/wiki_00`` gets each language's articles, ``{"id", "url", "title", "text"}``
per line, the ``url`` naming the language's Wikipedia. ``xqa build --documents DIR`` or
``xqa passages --documents DIR`` then cuts them again by a ``--split`` rule; docs/guide.md
("Your documents") compares the rules this way.
"""
from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path


def articles(path: Path) -> dict[str, list[dict]]:
    """``{lang: [article, ...]}`` from the passage file at ``path``."""
    opener = gzip.open if path.suffix == ".gz" else open
    groups: dict[tuple[str, str], list[str]] = {}
    titles: dict[tuple[str, str], str] = {}
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f):
            if not line.strip():
                continue
            row = json.loads(line)
            title = (row.get("title") or "").strip()
            key = (row["lang"], title or f"\0{n}")
            titles[key] = title
            groups.setdefault(key, []).extend(p.strip() for p in row["text"].split("\n") if p.strip())
    out: dict[str, list[dict]] = defaultdict(list)
    for i, (key, paragraphs) in enumerate(groups.items()):
        lang = key[0]
        out[lang].append({"id": str(i), "url": f"https://{lang}.wikipedia.org/wiki?curid={i}",
                          "title": titles[key], "text": "\n".join(paragraphs)})
    return dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("passages", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    for lang, arts in sorted(articles(args.passages).items()):
        folder = args.out / lang
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "wiki_00").write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in arts),
                                        encoding="utf-8")
        print(f"{lang}: {len(arts)} articles -> {folder / 'wiki_00'}")


if __name__ == "__main__":
    main()
