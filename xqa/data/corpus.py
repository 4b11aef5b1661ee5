"""The shipped corpus: a multilingual sample of real Wikipedia paragraphs, and its questions.

``xqa data corpus --out xqa/corpus`` makes it from ``../shared/data`` (deterministically):

- every English MLQA dev paragraph, and two thirds (chosen by hash) of the MLQA dev
  paragraphs of each of its other languages (ar de es hi vi zh), deduplicated. MLQA's
  paragraphs are parallel: a question whose own-language paragraph is left out is answered
  from the same paragraph in English (or another language) — a cross-lingual question;
- :data:`PER_LANGUAGE` paragraphs (chosen by hash) in each of id, ja, ko, sw, th, from
  TyDi GoldP Indonesian (valid split), JaQuAD (dev), TyDi GoldP Korean and Swahili (train
  split: these paragraphs' questions are held out of every training set — ``xqa data
  train`` leaves out any paragraph of the shipped corpus) and iApp Wiki QA (test).

Files (each passage keeps its source set and license; the CC BY-SA text stays CC BY-SA):

- ``passages.jsonl.gz``: ``{"id", "title", "text", "lang", "source", "license"}``;
- ``questions.jsonl.gz``: the evaluation questions of those paragraphs, in the MIA JSONL
  layout plus ``positive_ids`` (the question's own paragraph) and, for MLQA, ``xling``:
  ``{context language: {"positive_ids", "answers"}}``, the parallel paragraphs in other
  languages that answer it (MLQA's cross-lingual pairs). A question whose own paragraph is
  not shipped is ``"crosslingual": true``; its ``answers`` are those of the shipped parallel
  paragraphs, as written there, and ``positive_ids`` those paragraphs. ``split`` is ``tune``
  for a fifth of the questions (by hash: the default recipe's weights were tuned on them)
  and ``test`` for the rest (what the reports score);
- ``examples.json``: the demo's example questions, chosen by a fixed rule (short answers,
  short questions, by hash) among the test questions: one same-language question per
  language and one cross-lingual question per MLQA language;
- ``NOTICE``: the sets, their authors and licenses.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xqa.data.sets import (MLQA_LANGS, SETS, clean_context, data_root, mlqa_file, passage_id,
                           squad_paragraphs)

PER_LANGUAGE = 200
OTHER_SETS = {"id": "tydi-id-valid", "ja": "jaquad-dev", "ko": "tydi-ko", "sw": "tydi-sw", "th": "iapp-test"}
CORPUS_DIR = Path(__file__).resolve().parents[1] / "corpus"
SHIPPED_READER = Path(__file__).resolve().parents[1] / "models" / "span-reader"
# The warm-started FiD (``xqa reader pack`` of a GPU run, scripts/train_fid_gpu.sh), where the
# repository ships one: the real-text default then offers it as the reader named "fid".
SHIPPED_FID = Path(__file__).resolve().parents[1] / "models" / "fid-reader"
SHIPPED_FID_NAME = "fid"
# The answerability calibrator fitted with the shipped reader on the shipped corpus's tuning questions.
SHIPPED_ANSWERABILITY = Path(__file__).resolve().parents[1] / "models" / "answerability"


@dataclass
class CorpusConfig:
    """What ``xqa data corpus`` makes (its options, :mod:`xqa.cli_config`)."""

    data: str | None = field(default=None, metadata={
        "help": "the real QA sets folder (default: $XQA_DATA or ../shared/data)"})
    out: str | None = field(default=None, metadata={
        "help": "folder for passages.jsonl.gz, questions.jsonl.gz, NOTICE (default: the package's own "
                "xqa/corpus)"})
    per_language: int = field(default=PER_LANGUAGE, metadata={
        "help": "paragraphs taken from each non-MLQA language's set (id, ja, ko, sw, th; 0: none)"})
    mlqa_pool: bool = field(default=False, metadata={
        "help": "every MLQA dev paragraph of its 7 languages (the pool of the MLQA retrieval report) instead "
                "of the shipped share; use with --per-language 0 and another --out"})


def _rank(text: str) -> str:
    return hashlib.sha1(("xqa-corpus:" + text).encode("utf-8")).hexdigest()


def build(root: str | Path | None = None, per_language: int = PER_LANGUAGE,
          mlqa_all: bool = False) -> tuple[list[dict], list[dict]]:
    """``(passages, questions)`` of the shipped corpus, from the data folder. ``mlqa_all``:
    every MLQA dev paragraph (the MLQA retrieval pool of the reports); ``per_language`` 0: no
    paragraphs of the other sets."""
    root = data_root(root)
    passages: dict[str, dict[str, Any]] = {}
    questions: list[dict[str, Any]] = []

    # MLQA: one passage per distinct shipped paragraph per language; one question per (id, language)
    by_q: dict[tuple[str, str], dict[str, Any]] = {}
    for c in MLQA_LANGS:
        for q in MLQA_LANGS:
            path = mlqa_file(root, c, q)
            for para in squad_paragraphs(path):
                if not (mlqa_all or _ship_mlqa(c, para.context)):
                    continue
                pid = passage_id(f"mlqa-{c}", para.context)
                passages.setdefault(pid, _passage(pid, para.title, para.context, c, SETS[f"mlqa-{c}"]))
                for qa in para.qas:
                    rec = by_q.setdefault((qa.id, q), {"id": f"mlqa-{q}-{qa.id}", "question": qa.question,
                                                       "lang": q, "answers": [], "positive_ids": [],
                                                       "source": "mlqa", "xling": {}})
                    answers = list(dict.fromkeys(t for t, _ in qa.answers))
                    if c == q:
                        rec["answers"], rec["positive_ids"] = answers, [pid]
                    else:
                        rec["xling"][c] = {"positive_ids": [pid], "answers": answers}
    for key in sorted(by_q, key=lambda k: (k[1], k[0])):
        rec = by_q[key]
        if not rec["positive_ids"]:   # its own paragraph is not shipped: answered from the others
            if not rec["xling"]:
                continue
            rec["crosslingual"] = True
            rec["answers"] = list(dict.fromkeys(a for x in rec["xling"].values() for a in x["answers"]))
            rec["positive_ids"] = [p for x in rec["xling"].values() for p in x["positive_ids"]]
        questions.append(rec)

    # one set per other language: a hashed sample of its paragraphs, with their questions
    for lang, name in (OTHER_SETS.items() if per_language else ()):
        s = SETS[name]
        paras = {}
        for para in squad_paragraphs(s.file(root)):
            text = clean_context(para.context)
            paras.setdefault(passage_id(name, text), (para, text))
        chosen = sorted(paras, key=lambda pid: _rank(paras[pid][1]))[:per_language]
        for pid in sorted(chosen):
            para, text = paras[pid]
            passages[pid] = _passage(pid, para.title, text, lang, s)
            for qa in para.qas:
                answers = list(dict.fromkeys(clean_context(t) for t, _ in qa.answers))
                if answers:   # TyDi GoldP's ids repeat across paragraphs: the paragraph's id makes them unique
                    questions.append({"id": f"{pid}-{qa.id}", "question": qa.question, "lang": lang,
                                      "answers": answers, "positive_ids": [pid], "source": name})
    for q in questions:
        q["split"] = split_of(q["id"])
    return [passages[k] for k in sorted(passages)], questions


def _ship_mlqa(lang: str, context: str) -> bool:
    """Every English MLQA paragraph; two thirds of each other language's, by hash."""
    return lang == "en" or int(_rank(lang + context), 16) % 3 != 0


def split_of(question_id: str) -> str:
    """``tune`` for a fifth of the questions (by hash), ``test`` for the rest."""
    return "tune" if int(_rank("split:" + question_id), 16) % 5 == 0 else "test"


def choose_examples(questions: list[dict], passages: list[dict]) -> list[dict]:
    """The demo's examples: per language the first test question by hash with a short question,
    a short answer and, where its paragraph has a title, that title in the question (so the
    question makes sense without the paragraph); and per MLQA language the first such
    cross-lingual one."""
    titles = {p["id"]: p.get("title") or "" for p in passages}

    def names_its_subject(q: dict) -> bool:
        own = [titles.get(pid, "") for pid in q["positive_ids"]]
        words = [w for t in own for w in t.replace("(", " ").split() if len(w) >= 4]
        return not any(own) or any(w.lower() in q["question"].lower() for w in words)

    def ok(q: dict) -> bool:
        return (q.get("split") == "test" and len(q["question"]) <= 80 and q["answers"]
                and max(len(a) for a in q["answers"]) <= 20 and names_its_subject(q))

    out = []
    for lang in sorted({q["lang"] for q in questions}):
        for cross in (False, True):
            pool = [q for q in questions if q["lang"] == lang and bool(q.get("crosslingual")) == cross and ok(q)]
            if pool:
                q = min(pool, key=lambda q: _rank("example:" + q["id"]))
                out.append({"question": q["question"], "lang": lang, "crosslingual": cross, "id": q["id"],
                            "answers": q["answers"]})
    return out


def _passage(pid: str, title: str, text: str, lang: str, s) -> dict[str, Any]:
    return {"id": pid, "title": title, "text": text, "lang": lang, "source": s.name.split("-")[0]
            if s.name.startswith("mlqa") else s.name, "license": s.license}


def notice(passages: list[dict]) -> str:
    """The NOTICE text: which sets the passages and questions come from, under which license."""
    credit = {("mlqa" if s.name.startswith("mlqa") else s.name): (s.title, s.license) for s in SETS.values()}
    count: dict[tuple[str, str], int] = defaultdict(int)
    for p in passages:
        count[credit[p["source"]]] += 1
    lines = ["xqa's shipped corpus (xqa/corpus/passages.jsonl.gz) and its questions",
             "(xqa/corpus/questions.jsonl.gz) are Wikipedia paragraphs and questions taken",
             "from these public question-answering sets, unchanged except for removed HTML",
             "bold tags. Each passage names its source set and license. Text under a",
             "Creative Commons BY-SA license stays under that license (share-alike);",
             "Wikipedia text is by Wikipedia's contributors.", ""]
    for (title, lic), n in sorted(count.items()):
        lines.append(f"- {title}: {n} paragraphs, {lic}")
    lines += ["", "xqa/corpus/prebuilt holds numbers computed from these paragraphs (their",
              "multilingual-e5-small vectors and those of SPAR's lexical model Λ, trained on",
              "them) and Λ's weights as a difference to multilingual-e5-small (MIT); they are",
              "derived from the paragraphs above and carry no text of their own."]
    return "\n".join(lines) + "\n"


def write(out: str | Path, passages: list[dict], questions: list[dict]) -> None:
    """Write the three files into ``out`` (each through a temporary name)."""
    from xqa.artifacts import write_text_atomic

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("passages.jsonl.gz", passages), ("questions.jsonl.gz", questions)):
        tmp = out / f".{name}.tmp"
        with gzip.GzipFile(tmp, "wb", mtime=0) as f:  # mtime 0: the same bytes on every run
            for r in rows:
                f.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))
        tmp.replace(out / name)
    write_text_atomic(out / "NOTICE", notice(passages))
    write_text_atomic(out / "examples.json", json.dumps(choose_examples(questions, passages), ensure_ascii=False, indent=1) + "\n")


def shipped_passages(folder: str | Path = CORPUS_DIR) -> Path:
    """The shipped ``passages.jsonl.gz``."""
    return Path(folder) / "passages.jsonl.gz"


def load_examples(folder: str | Path = CORPUS_DIR) -> list[dict]:
    """The shipped demo examples (``examples.json``), as the pipeline config lists them."""
    path = Path(folder) / "examples.json"
    if not path.is_file():
        return []
    return [{k: e[k] for k in ("question", "lang", "crosslingual") if k in e}
            for e in json.loads(path.read_text(encoding="utf-8"))]
