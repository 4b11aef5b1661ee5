"""How much the ``mia`` split's Japanese passages depend on the word tokenizer.

    python scripts/ja_mia_boundaries.py WIKI_00 [--spacy-python PYTHON]

WIKI_00 is a WikiExtractor ``--json`` file of Japanese articles (e.g. the ``ja/wiki_00`` that
scripts/articles_from_passages.py writes). Each article is cut by xqa's ``mia`` rule
(:class:`xqa.documents.split.MiaSplit`: SudachiPy split mode A, the core dictionary, whitespace
dropped), then by the same rule over the words of other tokenizers, and the two cuttings are
compared: the share of cut points (each passage's start but the first's, and the last
passage's end) at the same character of the article, the share of passages with the same
span, and the articles cut identically.

The tokenizers compared: SudachiPy split modes B and C (the same dictionary), MeCab with
unidic-lite (``mecab-python3``, ``unidic-lite``) where installed, and, with
``--spacy-python``, spaCy's Japanese tokenizer (``spacy.blank("ja")``, the tokenizer
``ja_core_news_sm`` runs, which the MIA 2022 scripts used) run by that Python: a virtual
environment with ``spacy``, ``sudachipy`` and ``sudachidict-core`` of the version to compare,
kept apart from xqa's, e.g.::

    python -m venv runs/ja-venv && runs/ja-venv/bin/pip install spacy sudachidict-core==20230711
"""
from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import xqa.documents.split as split
from xqa.documents.formats import Document

Tokens = Callable[[str], list[tuple[str, int, int]]]

# run by --spacy-python: paragraphs (a JSON list on stdin) -> each one's spaCy tokens and spans
SPACY = """
import json, sys
from importlib.metadata import version
import spacy
nlp = spacy.blank("ja")
paragraphs = json.load(sys.stdin)
json.dump({"about": f"spaCy {spacy.__version__} blank ja (split mode "
                    f"{nlp.config['nlp']['tokenizer']['split_mode'] or 'A'}), SudachiPy {version('sudachipy')}, "
                    f"SudachiDict-core {version('sudachidict-core')}",
           "tokens": [[(t.text, t.idx, t.idx + len(t.text)) for t in nlp(p)] for p in paragraphs]}, sys.stdout)
"""


def sudachi(mode: str) -> Tokens:
    import sudachipy

    tokenizer = sudachipy.Dictionary(dict="core").tokenizer(mode=getattr(sudachipy.SplitMode, mode))
    return lambda text: [(m.surface(), m.begin(), m.end()) for m in tokenizer.tokenize(text) if m.surface().strip()]


def mecab() -> Tokens:
    import MeCab
    import unidic_lite

    tagger = MeCab.Tagger(f"-d {unidic_lite.DICDIR} -r /dev/null -Owakati")
    return lambda text: split._by_find(text, tagger.parse(text).split())


def spacy_tokens(python: str, paragraphs: list[str]) -> tuple[str, Tokens]:
    done = subprocess.run([python, "-c", SPACY], input=json.dumps(paragraphs), capture_output=True, text=True,
                          check=True)
    out = json.loads(done.stdout)
    table = {p: [tuple(t) for t in toks] for p, toks in zip(paragraphs, out["tokens"])}
    return out["about"], lambda text: table[text]


def cut_points(pieces: list[split.Piece]) -> set[int]:
    return {p.start for p in pieces[1:]} | ({pieces[-1].end} if pieces else set())


def compare(docs: list[Document], reference: list[list[split.Piece]], tokens: Tokens) -> dict[str, int]:
    original = split._japanese
    split._japanese = tokens
    try:
        other = [split.MiaSplit().split(d, "ja") for d in docs]
    finally:
        split._japanese = original
    c = {"passages": sum(map(len, other)), "same_cuts": 0, "cuts": 0, "same_spans": 0, "same_articles": 0}
    for a, b in zip(reference, other):
        ca, cb = cut_points(a), cut_points(b)
        c["same_cuts"] += len(ca & cb)
        c["cuts"] += len(ca | cb)
        spans_a, spans_b = [(p.start, p.end) for p in a], [(p.start, p.end) for p in b]
        c["same_spans"] += len(set(spans_a) & set(spans_b))
        c["same_articles"] += spans_a == spans_b
    return c


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wiki", type=Path, help="WikiExtractor --json file of Japanese articles")
    parser.add_argument("--spacy-python", help="a Python with spacy, sudachipy and sudachidict-core")
    args = parser.parse_args()
    arts = [json.loads(line) for line in args.wiki.open(encoding="utf-8") if line.strip()]
    docs = [Document(id=a["id"], source=args.wiki.name, title=a.get("title", ""), text=a["text"], format="wiki",
                     lines=True) for a in arts]
    reference = [split.MiaSplit().split(d, "ja") for d in docs]
    n_ref = sum(map(len, reference))
    print(f"{len(docs)} articles, {sum(len(d.text) for d in docs):,} characters; xqa's mia rule (SudachiPy "
          f"{_version('sudachipy')} split mode A, SudachiDict-core {_version('sudachidict-core')}): {n_ref} passages")
    others: dict[str, Tokens] = {}
    if args.spacy_python:
        paragraphs = sorted({d.text[s:e] for d in docs for s, e in split.paragraphs(d)})
        about, tokens = spacy_tokens(args.spacy_python, paragraphs)
        others[f"spaCy's Japanese tokenizer ({about})"] = tokens
    others[f"SudachiPy split mode B (SudachiDict-core {_version('sudachidict-core')})"] = sudachi("B")
    others["SudachiPy split mode C"] = sudachi("C")
    try:
        others[f"MeCab (mecab-python3 {_version('mecab-python3')}) + unidic-lite {_version('unidic-lite')}"] = mecab()
    except ImportError:
        pass
    for name, tokens in others.items():
        c = compare(docs, reference, tokens)
        most = max(c["passages"], n_ref)
        print(f"- {name}: {c['passages']} passages; cut points at the same character {c['same_cuts']}/{c['cuts']} "
              f"({100 * c['same_cuts'] / c['cuts']:.1f} %); passages with the same span {c['same_spans']}/{most} "
              f"({100 * c['same_spans'] / most:.1f} %); articles cut identically {c['same_articles']}/{len(docs)}")


if __name__ == "__main__":
    main()
