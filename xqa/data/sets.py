"""The real QA sets xqa trains and reports on, as ``../shared/data`` holds them.

Every set is SQuAD-layout JSON (``{"data": [{"title", "paragraphs": [{"context",
"qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}``). Each entry of
:data:`SETS` says its language, its role — ``train`` (xqa may train on it), ``dev`` (tuning
and validation) or ``eval`` (evaluation only: reports, never training, never tuning of
a shipped model) — and its license, which every passage taken from it keeps.
"""
from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from xqa.errors import InputError, XqaError

ROLES = ("train", "dev", "eval")
MLQA_LANGS = ("ar", "de", "en", "es", "hi", "vi", "zh")


@dataclass(frozen=True)
class QASet:
    name: str        # short id, also the passage id prefix
    path: str        # relative to the data folder; a glob pattern for a set of several files
    lang: str        # language of questions and contexts (MLQA: see mlqa_file)
    role: str        # train | dev | eval
    license: str
    title: str       # what to credit

    def file(self, root: str | Path) -> Path:
        return Path(root) / self.path

    def files(self, root: str | Path) -> list[Path]:
        """The set's files: its one file, or every match of its glob pattern, sorted
        (an :class:`XqaError` when a pattern matches nothing)."""
        if not any(c in self.path for c in "*?["):
            return [self.file(root)]
        found = sorted(Path(root).glob(self.path))
        if not found:
            raise XqaError(f"{self.name}: no file matches {Path(root) / self.path}")
        return found


_MLQA = "MLQA v1 (Lewis et al., 2020)"
SETS: dict[str, QASet] = {s.name: s for s in [
    QASet("tydi-en", "tydiqa_goldp_train_en_ko_sw/tydiqa.goldp.en.train.json", "en", "train", "Apache-2.0",
          "TyDi QA GoldP (Clark et al., 2020)"),
    QASet("tydi-ko", "tydiqa_goldp_train_en_ko_sw/tydiqa.goldp.ko.train.json", "ko", "train", "Apache-2.0",
          "TyDi QA GoldP (Clark et al., 2020)"),
    QASet("tydi-sw", "tydiqa_goldp_train_en_ko_sw/tydiqa.goldp.sw.train.json", "sw", "train", "Apache-2.0",
          "TyDi QA GoldP (Clark et al., 2020)"),
    QASet("tydi-id", "tydiqa_goldp_id/train.json", "id", "train", "CC BY-SA 4.0",
          "TyDi QA GoldP Indonesian, IDK-MRC split (Putri & Oh, 2022)"),
    QASet("tydi-id-valid", "tydiqa_goldp_id/valid.json", "id", "dev", "CC BY-SA 4.0",
          "TyDi QA GoldP Indonesian, IDK-MRC split (Putri & Oh, 2022)"),
    QASet("jaquad", "jaquad_ja/train.json", "ja", "train", "CC BY-SA 3.0", "JaQuAD (So et al., 2022)"),
    QASet("jaquad-dev", "jaquad_ja/dev.json", "ja", "eval", "CC BY-SA 3.0", "JaQuAD (So et al., 2022)"),
    QASet("iapp", "iapp_wiki_qa_th/train.json", "th", "train", "MIT", "iApp Wiki QA (iApp Technology)"),
    QASet("iapp-valid", "iapp_wiki_qa_th/valid.json", "th", "dev", "MIT", "iApp Wiki QA (iApp Technology)"),
    QASet("iapp-test", "iapp_wiki_qa_th/test.json", "th", "eval", "MIT", "iApp Wiki QA (iApp Technology)"),
    QASet("arcd", "arcd_ar/train.json", "ar", "train", "MIT", "ARCD (Mozannar et al., 2019)"),
    QASet("arcd-test", "arcd_ar/test.json", "ar", "eval", "MIT", "ARCD (Mozannar et al., 2019)"),
    QASet("cmrc", "cmrc2018_zh/trial.json", "zh", "train", "CC BY-SA 4.0", "CMRC 2018 (Cui et al., 2019)"),
    QASet("cmrc-dev", "cmrc2018_zh/dev.json", "zh", "eval", "CC BY-SA 4.0", "CMRC 2018 (Cui et al., 2019)"),
    QASet("drcd-dev", "drcd_zhtw/dev.json", "zh", "eval", "CC BY-SA 3.0", "DRCD (Shao et al., 2018)"),
    QASet("jsquad-valid", "jsquad_ja/valid.json", "ja", "eval", "CC BY-SA 4.0", "JSQuAD, JGLUE (Kurihara et al., 2022)"),
    QASet("squad", "squad_v1.1_train/train-v1.1.json", "en", "train", "CC BY-SA 4.0",
          "SQuAD v1.1 (Rajpurkar et al., 2016)"),
    QASet("tquad", "tquad_tr/*.json", "tr", "train", "MIT", "TQuAD 2018 and ENELPI 2020 (Okan, 2020)"),
    QASet("squad-dev", "squad_v1.1_dev/dev-v1.1.json", "en", "eval", "CC BY-SA 4.0", "SQuAD v1.1 (Rajpurkar et al., 2016)"),
    *[QASet(f"mlqa-{c}", f"mlqa/dev/dev-context-{c}-question-{c}.json", c, "eval", "CC BY-SA 3.0", _MLQA)
      for c in MLQA_LANGS],
]}
TRAIN_SETS = tuple(n for n, s in SETS.items() if s.role == "train")


def shared_data() -> Path:
    """Where the real QA sets are looked for when no folder is given: ``$XQA_DATA``, else
    ``../shared/data`` next to the repository (which may not exist: the tooling that can do
    without them says it skipped them)."""
    return Path(os.environ.get("XQA_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")


def data_root(path: str | Path | None = None) -> Path:
    """The shared data folder: ``path``, ``$XQA_DATA`` or ``../shared/data`` next to the
    repository; an :class:`XqaError` saying so when it is absent."""
    candidates = [path] if path else [os.environ.get("XQA_DATA"),
                                      Path(__file__).resolve().parents[3] / "shared" / "data"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    if path:
        raise XqaError(f"--data {path}: " + ("is a file; give the folder of the real QA sets (../shared/data)"
                                             if Path(path).exists() else "no such folder (the real QA sets' "
                                             "folder, ../shared/data)"))
    raise XqaError("the real QA sets are not here (../shared/data, or pass --data / set XQA_DATA): "
                   "this command needs them; the shipped corpus (xqa/corpus) does not")


def mlqa_file(root: str | Path, context: str, question: str) -> Path:
    return Path(root) / "mlqa" / "dev" / f"dev-context-{context}-question-{question}.json"


@dataclass(frozen=True)
class QA:
    id: str
    question: str
    answers: tuple[tuple[str, int], ...]  # (text, start offset in the context)


@dataclass(frozen=True)
class Paragraph:
    title: str
    context: str
    qas: tuple[QA, ...]


def squad_paragraphs(path: str | Path) -> Iterator[Paragraph]:
    """The paragraphs of a SQuAD-layout file; a malformed record is an
    :class:`~xqa.errors.InputError` naming the file and the record."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, f"invalid JSON ({e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError(path, 1, "not a SQuAD-layout file (no 'data' list)")
    for a, article in enumerate(data["data"]):
        title = str(article.get("title") or "")
        for p, para in enumerate(article.get("paragraphs", [])):
            context = para.get("context")
            if not isinstance(context, str):
                raise InputError(path, None, f"article {a} paragraph {p}: 'context' is not a string")
            qas = []
            for qa in para.get("qas", []):
                answers = tuple((str(x.get("text", "")), int(x.get("answer_start", -1)))
                                for x in qa.get("answers", []) if x.get("text"))
                qas.append(QA(str(qa["id"]), str(qa["question"]), answers))
            yield Paragraph(title, context, tuple(qas))


def text_key(text: str) -> str:
    """A key for "the same paragraph": NFKC, white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def passage_id(prefix: str, text: str) -> str:
    """A stable id for a paragraph: ``{prefix}-{12 hex digits of its text's hash}``."""
    return f"{prefix}-{hashlib.sha1(text_key(text).encode('utf-8')).hexdigest()[:12]}"


def clean_context(text: str) -> str:
    """TyDi GoldP paragraphs keep stray HTML bold tags (``</b>``); the passage does not."""
    return text.replace("<b>", "").replace("</b>", "")


def answer_offsets(context: str, text: str, start: int) -> int:
    """The given offset when the answer is there, else its first occurrence (-1: absent).
    Some sets (CMRC's dev) give offsets that are off."""
    if 0 <= start and context[start: start + len(text)] == text:
        return start
    return context.find(text)


def check_role(name: str, allowed: tuple[str, ...]) -> QASet:
    s = SETS.get(name)
    if s is None:
        raise XqaError(f"unknown set {name!r}; known: {', '.join(SETS)}")
    if s.role not in allowed:
        raise XqaError(f"{name} is a {s.role} set; here only {'/'.join(allowed)} sets may be used")
    return s
