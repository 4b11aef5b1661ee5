"""Language identification measured on questions it was not tuned on (``xqa report langid``).

Three identifiers, each mapped onto the pipeline's languages (a code outside
them is "unknown", the answer for a language without an index):

* ``rules``: :func:`xqa.langid.rules.detect_language`, script rules and Latin word
  lists chosen on the MIA 2022 test questions; never "unknown" for text with letters.
* ``lingua``: lingua's best language over its 75 (Khmer is not among them).
* ``combined``: :func:`xqa.langid.model.identify`, the rules' cues checked by lingua.

Question sets (``../shared/data``, see its README) are sampled per language
(``per_language`` questions, seeded); a set's ``use`` says what it may be used
for: ``train`` (the veto threshold is chosen there, :func:`veto_grid`), ``dev``,
``eval`` (evaluation only), ``tuned`` (MIA 2022 test: the rules were chosen on
it, so their figure there is not a measurement) and ``probe`` (hand-written
questions in languages outside the pipeline's, :mod:`xqa.tools.lib.langid_probe`).
"""
from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from xqa.langid.codes import UNKNOWN, pipeline_language
from xqa.langid.rules import detect_language

# The MIA 2022 languages and those of the real sets in ../shared/data.
MIA_LANGUAGES = ("ar", "bn", "en", "es", "fi", "ja", "km", "ko", "ms", "ru", "sv", "te", "tr", "zh")
REAL_SET_LANGUAGES = ("ar", "de", "en", "es", "hi", "id", "ja", "ko", "sw", "th", "vi", "zh")
PIPELINE_LANGUAGES = tuple(sorted(set(MIA_LANGUAGES) | set(REAL_SET_LANGUAGES)))


@dataclass(frozen=True)
class QuestionSet:
    name: str
    use: str  # train | dev | eval | tuned | probe
    patterns: tuple[str, ...]  # globs under the data folder
    lang: str | None = None  # for files that carry no language


SETS: tuple[QuestionSet, ...] = (
    QuestionSet("XOR-TyDi train", "train", ("xor_tydi/xor_train_retrieve_eng_span.jsonl",)),
    QuestionSet("TyDi GoldP train", "train", ("tydiqa_goldp_train_en_ko_sw/tydiqa.goldp.*.train.json",)),
    QuestionSet("TyDi GoldP id train", "train", ("tydiqa_goldp_id/train.json",), "id"),
    QuestionSet("TyDi GoldP id valid", "dev", ("tydiqa_goldp_id/valid.json",), "id"),
    QuestionSet("MLQA dev", "eval", ("mlqa/dev/dev-context-*-question-*.json",)),
    QuestionSet("SQuAD v1.1 dev", "eval", ("squad_v1.1_dev/dev-v1.1.json",), "en"),
    QuestionSet("NQ-open dev", "eval", ("nq_open/NQ-open.dev.jsonl",), "en"),
    QuestionSet("EntityQuestions dev", "eval", ("entityquestions/dev/*.dev.json",), "en"),
    QuestionSet("JaQuAD dev", "eval", ("jaquad_ja/dev.json",), "ja"),
    QuestionSet("JSQuAD valid", "eval", ("jsquad_ja/valid.json",), "ja"),
    QuestionSet("iapp test", "eval", ("iapp_wiki_qa_th/test.json",), "th"),
    QuestionSet("ARCD test", "eval", ("arcd_ar/test.json",), "ar"),
    QuestionSet("CMRC 2018 dev", "eval", ("cmrc2018_zh/dev.json",), "zh"),
    QuestionSet("DRCD dev", "eval", ("drcd_zhtw/dev.json",), "zh"),
    QuestionSet("MIA 2022 test", "tuned", ("mia2022_test_questions/mia_2022_test_xorqa_without_answers.jsonl",
                                           "mia2022_test_questions/mkqa_test_without_answers/mkqa-*.jsonl")),
)


@dataclass
class Sample:
    """One language's questions from one set."""

    set: str
    use: str
    lang: str
    texts: list[str]


def base_code(lang: str) -> str:
    """``zh_cn``, ``zh-TW`` → ``zh``; other codes lower-cased."""
    code = lang.lower().replace("-", "_")
    return code.split("_")[0] if code.startswith("zh") else code


def load_samples(root: str | Path, per_language: int = 1000, seed: int = 0,
                 sets: Sequence[QuestionSet] = SETS) -> list[Sample]:
    """Each set's distinct questions per language, at most ``per_language`` (a seeded sample)."""
    from xqa.io import read_questions

    root = Path(root)
    out = []
    for qs in sets:
        by_lang: dict[str, dict[str, None]] = {}
        for pattern in qs.patterns:
            for path in sorted(root.glob(pattern)):
                if "*" in pattern and path.stat().st_size == 0:   # a set's empty file (MKQA's pt)
                    print(f"{path}: empty, skipped", file=sys.stderr)
                    continue
                for q in read_questions(path, lang=qs.lang):
                    by_lang.setdefault(base_code(q.lang), {})[q.question.strip()] = None
        rng = random.Random(f"{seed}:{qs.name}")
        for lang, texts in sorted(by_lang.items()):
            chosen = list(texts)
            if len(chosen) > per_language:
                chosen = rng.sample(chosen, per_language)
            out.append(Sample(qs.name, qs.use, lang, chosen))
    return out


def probe_samples() -> list[Sample]:
    from xqa.tools.lib.langid_probe import PROBE

    return [Sample("probe (hand-written)", "probe", lang, list(texts)) for lang, texts in PROBE.items()]


def lingua_alone(text: str) -> str:
    """lingua's best language over all of its languages (Khmer text: "unknown")."""
    from xqa.langid.model import model_scores

    scores = model_scores(text)
    return scores[0][0] if scores else UNKNOWN


def identifiers() -> dict[str, Callable[[str], str]]:
    from xqa.langid.model import identify

    return {"rules": detect_language, "lingua": lingua_alone, "combined": identify}


@dataclass
class Cell:
    n: int = 0
    correct: int = 0
    unknown: int = 0


@dataclass
class LangidReport:
    languages: tuple[str, ...]
    names: tuple[str, ...]
    rows: list[tuple[Sample, dict[str, Cell]]] = field(default_factory=list)
    seconds: dict[str, list[float]] = field(default_factory=dict)  # wall time per question, by identifier
    cpu_seconds: dict[str, list[float]] = field(default_factory=dict)  # this process's CPU time per question
    load_seconds: float = 0.0
    load_cpu_seconds: float = 0.0


def expected(lang: str, languages: Iterable[str]) -> str:
    """The answer a right identifier gives for a question labelled ``lang`` in a pipeline of ``languages``."""
    return pipeline_language(lang, languages)


def measure(samples: Sequence[Sample], languages: Sequence[str] = PIPELINE_LANGUAGES,
            which: dict[str, Callable[[str], str]] | None = None) -> LangidReport:
    """Accuracy and "unknown" rate per sample and identifier, and each question's seconds."""
    from xqa.langid.model import warm_up

    which = which or identifiers()
    t0, c0 = time.perf_counter(), time.process_time()
    warm_up()  # lingua's models load here, not inside the first questions' timings
    report = LangidReport(tuple(languages), tuple(which), load_seconds=time.perf_counter() - t0,
                          load_cpu_seconds=time.process_time() - c0)
    for name in which:
        report.seconds[name], report.cpu_seconds[name] = [], []
    for s in samples:
        gold = expected(s.lang, languages)
        cells = {}
        for name, fn in which.items():
            cell, times, cpu = Cell(n=len(s.texts)), report.seconds[name], report.cpu_seconds[name]
            for text in s.texts:
                t, c = time.perf_counter(), time.process_time()
                got = pipeline_language(fn(text), languages)
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                cell.correct += got == gold
                cell.unknown += got == UNKNOWN
            cells[name] = cell
        report.rows.append((s, cells))
    return report


def veto_grid(samples: Sequence[Sample], languages: Sequence[str] = PIPELINE_LANGUAGES,
              grid: Sequence[float] = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)) -> list[tuple[float, float]]:
    """Mean accuracy (over the samples) of the combined identifier for each veto threshold."""
    from xqa.langid.model import identify, model_scores

    scorer = lru_cache(maxsize=None)(model_scores)
    out = []
    for veto in grid:
        accs = []
        for s in samples:
            gold = expected(s.lang, languages)
            hits = sum(pipeline_language(identify(t, veto, scorer), languages) == gold for t in s.texts)
            accs.append(hits / max(len(s.texts), 1))
        out.append((veto, sum(accs) / max(len(accs), 1)))
    return out


def _pct(a: int, n: int) -> str:
    return f"{100 * a / n:.1f}" if n else "–"


def table(report: LangidReport) -> str:
    """Markdown: a row per set and language, accuracy and "unknown" % per identifier; then averages
    over the sets not used to choose anything (eval, dev) and the latency per question."""
    names = report.names
    head = "| set | use | lang | n | " + " | ".join(f"{n} acc % | {n} unk %" for n in names) + " |"
    lines = [head, "|" + " --- |" * (4 + 2 * len(names))]
    for s, cells in report.rows:
        gold = s.lang if expected(s.lang, report.languages) != UNKNOWN else f"{s.lang}→und"
        vals = " | ".join(f"{_pct(c.correct, c.n)} | {_pct(c.unknown, c.n)}" for c in cells.values())
        lines.append(f"| {s.set} | {s.use} | {gold} | {len(s.texts)} | {vals} |")
    for label, uses in (("mean, in-pipeline languages (eval + dev)", ("eval", "dev")),
                        ("mean, probe (must be und)", ("probe",))):
        rows = [cells for s, cells in report.rows if s.use in uses]
        if not rows:
            continue
        vals = " | ".join(
            f"**{sum(r[n].correct / r[n].n for r in rows) / len(rows) * 100:.1f}** | "
            f"{sum(r[n].unknown / r[n].n for r in rows) / len(rows) * 100:.1f}" for n in names)
        lines.append(f"| {label} | | | {len(rows)} rows | {vals} |")
    lines.append("")
    lines.append("| identifier | mean CPU µs / question | mean wall µs | p99 wall µs |")
    lines.append("| --- | --- | --- | --- |")
    for n in names:
        secs, cpu = sorted(report.seconds[n]) or [0.0], report.cpu_seconds[n] or [0.0]
        p99 = secs[min(len(secs) - 1, int(0.99 * len(secs)))]
        lines.append(f"| {n} | {sum(cpu) / len(cpu) * 1e6:.0f} | {sum(secs) / len(secs) * 1e6:.0f} | {p99 * 1e6:.0f} |")
    lines.append("")
    lines.append(f"lingua's models (all languages) loaded once per process before timing: "
                 f"{report.load_cpu_seconds:.1f} s CPU, {report.load_seconds:.1f} s wall.")
    return "\n".join(lines)


# A veto guards against languages the train splits lack (a listed question word in a language
# without an index), so the train splits cannot show its gain, only its cost: take the lowest
# threshold that costs them at most this much mean accuracy (one question in a thousand).
GRID_TOLERANCE = 0.001


def chosen_veto(grid: Sequence[tuple[float, float]]) -> float:
    best = max(acc for _, acc in grid)
    return min(v for v, acc in grid if acc >= best - GRID_TOLERANCE - 1e-12)


def grid_table(grid: Sequence[tuple[float, float]]) -> str:
    chosen = chosen_veto(grid)
    lines = ["| veto | mean accuracy on train % |", "| --- | --- |"]
    lines += [f"| {v:g}{' (chosen)' if v == chosen else ''} | {acc * 100:.2f} |" for v, acc in grid]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- documents

def cut_text(text: str, chars: int) -> str:
    """``text``'s first ``chars`` characters, cut back to the last space where there is one (0: all)."""
    if not chars or len(text) <= chars:
        return text
    head = text[:chars]
    return head.rsplit(" ", 1)[0] if " " in head else head


def document_samples(path: str | Path | None = None, cuts: Sequence[int] = (0, 200, 80)) -> list[Sample]:
    """The passages of ``path`` (default: the shipped corpus's, whose languages are known) per
    language, whole (cut 0) and as their first ``cut`` characters: the texts of short documents
    (a note, an FAQ entry) and long ones."""
    from xqa.data.corpus import shipped_passages
    from xqa.io import read_passages

    path = shipped_passages() if path is None else path

    by_lang: dict[str, list[str]] = {}
    for p in read_passages(path):
        by_lang.setdefault(base_code(p.lang), []).append(p.text)
    return [Sample(f"first {cut} characters" if cut else "whole paragraphs", "eval", lang,
                   [cut_text(t, cut) for t in texts])
            for cut in cuts for lang, texts in sorted(by_lang.items())]


@dataclass
class DocumentCell:
    n: int = 0
    right: int = 0
    unknown: int = 0

    @property
    def wrong(self) -> int:
        return self.n - self.right - self.unknown


def measure_documents(samples: Sequence[Sample]) -> list[tuple[Sample, dict[str, DocumentCell]]]:
    """Each sample's texts identified as ``xqa build --documents`` identifies a document's parts
    (:func:`xqa.documents.language.identify_text`), with and without the rules confirming a
    less confident lingua: right, ``und`` and wrong per identifier."""
    from xqa.documents.language import identify_text
    from xqa.langid.model import warm_up

    warm_up()
    which = {"lingua >= 0.5": lambda t: identify_text(t, rules_confirm=False), "xqa": identify_text}
    rows = []
    for s in samples:
        cells = {}
        for name, fn in which.items():
            cell = DocumentCell(n=len(s.texts))
            for text in s.texts:
                got = fn(text)
                cell.right += base_code(got) == s.lang
                cell.unknown += got == UNKNOWN
            cells[name] = cell
        rows.append((s, cells))
    return rows


def document_table(rows: Sequence[tuple[Sample, dict[str, DocumentCell]]]) -> str:
    """Markdown: per text length and language, the share right, ``und`` and wrong per identifier;
    a total row per text length."""
    names = list(rows[0][1]) if rows else []
    lines = ["| texts | lang | n | " + " | ".join(f"{n}: right % | und % | wrong %" for n in names) + " |",
             "|" + " --- |" * (3 + 3 * len(names))]

    def cells_text(cells: dict[str, DocumentCell]) -> str:
        return " | ".join(f"{_pct(c.right, c.n)} | {_pct(c.unknown, c.n)} | {_pct(c.wrong, c.n)}"
                          for c in cells.values())

    for kind in dict.fromkeys(s.set for s, _ in rows):
        part = [(s, cells) for s, cells in rows if s.set == kind]
        for s, cells in part:
            lines.append(f"| {kind} | {s.lang} | {len(s.texts)} | {cells_text(cells)} |")
        total = {n: DocumentCell(n=sum(c[n].n for _, c in part), right=sum(c[n].right for _, c in part),
                                 unknown=sum(c[n].unknown for _, c in part)) for n in names}
        lines.append(f"| **{kind}, all** | | {total[names[0]].n} | {cells_text(total)} |")
    return "\n".join(lines)
