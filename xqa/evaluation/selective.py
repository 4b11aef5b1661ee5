"""Selective answering: how well a confidence score tells right answers from wrong ones.

Input is ``xqa answer``'s ``records.jsonl`` (one record per question with its ``answer``,
``gold``, ``lang``, the fused probability ``score``, the calibrated ``confidence`` and, for a
run with ``--hide-gold``, ``gold_hidden``). An answer is *right* when its official MIA 2022
F1 against the gold is at least 0.5 (:data:`reader.answerability.CORRECT_F1`).

For a score s over n answers:

- **coverage–accuracy curve**: answer only the top c·n answers by s; accuracy among them.
- **AURC** (area under the risk–coverage curve, lower is better): the mean over i = 1..n of
  the error rate of the i answers with the highest s (Geifman & El-Yaniv, 2017).
- **ECE** (expected calibration error): answers binned by s into 10 equal-width bins of
  [0, 1]; Σ_b (n_b / n)·|accuracy_b − mean s_b|. Meaningful only for a probability.
- **AUROC**, answerable vs unanswerable: the probability that an answer of a question whose
  paragraphs are in the collection scores above one of a question whose paragraphs were
  removed (ties count half); needs records of both kinds.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xqa.errors import InputError, XqaError

COVERAGES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
BINS = 10


def read_records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The answer records of ``xqa answer`` (``records.jsonl`` files or their folders); a record
    without ``answer``, ``gold`` or ``lang`` is an error naming file:line."""
    from xqa.io import jsonl_objects

    out = []
    read: dict[Path, Path] = {}
    first: dict[tuple, str] = {}   # a question's answer by each reader, with and without --hide-gold
    for path in paths:
        path = Path(path)
        if path.is_dir():
            path = path / "records.jsonl"
        if not path.is_file():
            raise XqaError(f"{path}: no such records file (xqa answer --out writes OUT/records.jsonl)")
        if path.suffix == ".json":
            raise XqaError(f"{path}: a JSON file; answer records are xqa answer's records.jsonl (name the file "
                           f"or its folder), which carry the scores and the gold a prediction file lacks")
        if path.resolve() in read:
            raise XqaError(f"{path}: given twice (as {read[path.resolve()]}): its answers would count twice")
        read[path.resolve()] = path
        n_read = len(out)
        for n, rec in jsonl_objects(path):
            for key in ("answer", "gold", "lang"):
                if key not in rec:
                    raise InputError(path, n, f"answer record without {key!r} (not xqa answer's records.jsonl?)")
            if not isinstance(rec["gold"], list):
                raise InputError(path, n, "field 'gold' should be a list of answers")
            key = (str(rec.get("id")), bool(rec.get("gold_hidden")), rec.get("reader"))
            if key in first:
                raise InputError(path, n, f"question {key[0]!r} answered again (first at {first[key]}); each "
                                          f"question counts once, and once more made unanswerable (--hide-gold)")
            first[key] = f"{path}:{n}"
            out.append({**rec, "_source": f"{path}:{n}"})
        if len(out) == n_read:
            raise XqaError(f"{path}: holds no answer records (xqa answer --out writes them)")
    return out


def answered_methods(paths: Iterable[str | Path]) -> dict[str, str]:
    """The retrieval method each records file (or answer folder) of ``paths`` was answered with,
    as its ``run.json`` says: ``{method: path}`` (files without a run.json are left out)."""
    from xqa import methods

    found: dict[str, str] = {}
    for path in map(Path, paths):
        run = (path if path.is_dir() else path.parent) / "run.json"
        try:
            name = json.loads(run.read_text(encoding="utf-8"))["settings"]["pipeline"]["retrieval"]["method"]
            found[methods.method(name).name] = str(path)
        except (OSError, ValueError, KeyError, TypeError, XqaError):
            continue
    return found


def load_calibrator(path: str | Path) -> tuple[Any, float, float | None, Any]:
    """``(Calibrator, threshold, not-found threshold or None, P(answerable) Calibrator or None)``
    from a pipeline config (``reader.answerability``...) or from ``xqa tune answerability``'s
    output (its folder or ``config.json``)."""
    from reader.answerability import Calibrator
    from xqa.io import json_document

    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise XqaError(f"{path}: no such calibrator (a pipeline config, or xqa tune answerability's OUT)")
    d = json_document(path)
    try:
        if isinstance(d, dict) and d.get("kind") == "answerability":
            low, held = d.get("not_found_threshold"), d.get("answerable")
            return (Calibrator.from_dict(d["calibrator"]), float(d["threshold"]), None if low is None else float(low),
                    Calibrator.from_dict(held) if held else None)
        if isinstance(d, dict) and isinstance(d.get("reader"), dict) and d["reader"].get("answerability"):
            r = d["reader"]
            low, held = r.get("not_found_threshold"), r.get("answerable")
            return (Calibrator.from_dict(r["answerability"]), float(r.get("answerability_threshold", 0.5)),
                    None if low is None else float(low), Calibrator.from_dict(held) if held else None)
    except (KeyError, TypeError, ValueError) as e:
        raise XqaError(f"{path}: not a usable answerability calibrator ({e})") from None
    raise XqaError(f"{path}: holds no answerability calibrator (reader.answerability, or kind 'answerability')")


def rescore(records: Sequence[Mapping[str, Any]], calibrator: Any, threshold: float,
            not_found_threshold: float | None = None, answerable: Any = None) -> list[dict[str, Any]]:
    """The records with ``confidence``, ``answered``, ``answerable`` (with that calibrator) and
    ``found`` computed again from their ``features``, as :class:`xqa.pipeline.Pipeline` does
    (found: answered, or the not-found score — P(answerable) where given, else P(right) — at
    least ``not_found_threshold``; without one, found = answered)."""
    rows = _features(records)
    p = calibrator.probabilities(rows)
    q = answerable.probabilities(rows) if answerable is not None else None
    out = []
    for i, (r, c) in enumerate(zip(records, p)):
        shown = bool(c >= threshold)
        s = float(q[i]) if q is not None else float(c)
        found = shown if not_found_threshold is None else shown or s >= not_found_threshold
        out.append({**r, "confidence": float(c), "answered": shown, "found": bool(found),
                    "answerable": None if q is None else float(q[i])})
    return out


def _features(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, float]]:
    """Each record's answerability ``features``; a record without them is an error naming it."""
    missing = [r["_source"] for r in records if not r.get("features")]
    if missing:
        raise XqaError(f"{missing[0]}: answer record without 'features' ({len(missing)} such); answer the "
                       f"questions again with this version of xqa answer")
    return [r["features"] for r in records]


def answer_f1(record: Mapping[str, Any], mode: str = "official") -> float | None:
    """Official MIA F1 in [0, 1] of the record's answer, None when it has no gold answer."""
    from xqa.evaluation.mia import score_answer

    gold = [g for g in record["gold"] if isinstance(g, str) and g.strip()]
    if not gold:
        return None
    return score_answer(str(record["answer"] or ""), gold, str(record["lang"]), mode)[1]


def correctness(records: Sequence[Mapping[str, Any]], threshold: float | None = None,
                mode: str = "official") -> tuple[np.ndarray, np.ndarray]:
    """``(right [n] bool, scored [n] bool)``: right = F1 ≥ ``threshold`` (default
    :data:`reader.answerability.CORRECT_F1`); records without gold are not scored."""
    from reader.answerability import CORRECT_F1

    t = CORRECT_F1 if threshold is None else threshold
    f1 = [answer_f1(r, mode) for r in records]
    scored = np.asarray([f is not None for f in f1])
    right = np.asarray([f is not None and f >= t for f in f1])
    return right, scored


def coverage_curve(scores: Sequence[float], right: Sequence[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(coverage [n], accuracy [n], threshold [n])`` answering the i highest-scored answers,
    i = 1..n (ties broken by input order)."""
    s = np.asarray(scores, dtype=np.float64)
    r = np.asarray(right, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    n = len(s)
    i = np.arange(1, n + 1)
    return i / n, np.cumsum(r[order]) / i, s[order]


def aurc(scores: Sequence[float], right: Sequence[bool]) -> float:
    """Area under the risk–coverage curve: mean error rate of the top-i answers over i."""
    if not len(scores):
        return float("nan")
    _, acc, _ = coverage_curve(scores, right)
    return float(np.mean(1.0 - acc))


def accuracy_at(scores: Sequence[float], right: Sequence[bool], coverage: float) -> float:
    """Accuracy of the ⌈coverage·n⌉ highest-scored answers."""
    n = len(scores)
    if not n:
        return float("nan")
    _, acc, _ = coverage_curve(scores, right)
    return float(acc[max(1, int(np.ceil(coverage * n - 1e-9))) - 1])


@dataclass
class Reliability:
    """Per bin of the score: its range, answers in it, their mean score and accuracy."""

    lower: list[float]
    upper: list[float]
    count: list[int]
    mean_score: list[float]
    accuracy: list[float]


def reliability(scores: Sequence[float], right: Sequence[bool], bins: int = BINS) -> Reliability:
    s = np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
    r = np.asarray(right, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.minimum(np.searchsorted(edges, s, side="right") - 1, bins - 1)
    out = Reliability([], [], [], [], [])
    for b in range(bins):
        m = idx == b
        out.lower.append(float(edges[b]))
        out.upper.append(float(edges[b + 1]))
        out.count.append(int(m.sum()))
        out.mean_score.append(float(s[m].mean()) if m.any() else float("nan"))
        out.accuracy.append(float(r[m].mean()) if m.any() else float("nan"))
    return out


def ece(scores: Sequence[float], right: Sequence[bool], bins: int = BINS) -> float:
    """Expected calibration error over ``bins`` equal-width bins of [0, 1]."""
    n = len(scores)
    if not n:
        return float("nan")
    rel = reliability(scores, right, bins)
    return float(sum(c / n * abs(a - m) for c, a, m in zip(rel.count, rel.accuracy, rel.mean_score) if c))


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """P(a positive's score > a negative's), ties counting half (Mann–Whitney U / (n₊·n₋))."""
    from scipy.stats import rankdata

    pos, neg = np.asarray(positive, dtype=np.float64), np.asarray(negative, dtype=np.float64)
    if not len(pos) or not len(neg):
        return float("nan")
    ranks = rankdata(np.concatenate([pos, neg]))
    u = ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2
    return float(u / (len(pos) * len(neg)))


@dataclass
class SelectiveScores:
    """How one score does on one set of answers."""

    name: str
    n: int
    accuracy: float                     # share right when every question is answered
    aurc: float
    ece: float
    auroc: float | None                 # answerable vs unanswerable; None without both kinds
    at_coverage: dict[str, float]       # accuracy at each coverage of COVERAGES
    threshold: float | None = None      # the config's threshold, when scored at one
    shown: float | None = None          # share of answers shown at the threshold
    shown_accuracy: float | None = None  # accuracy of the shown answers
    answerable_shown: float | None = None  # share of answerable questions' answers shown
    reliability: Reliability | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def score(name: str, scores: Sequence[float], right: Sequence[bool], answerable: Sequence[bool] | None = None,
          threshold: float | None = None, shown: Sequence[bool] | None = None) -> SelectiveScores:
    """Every figure of one score over one set of answers; the answers ``shown`` are those
    scoring at least ``threshold`` unless given."""
    s = np.asarray(scores, dtype=np.float64)
    r = np.asarray(right, dtype=bool)
    a = np.asarray(answerable, dtype=bool) if answerable is not None else None
    both = a is not None and a.any() and (~a).any()
    out = SelectiveScores(
        name=name, n=len(s), accuracy=float(r.mean()) if len(r) else float("nan"), aurc=aurc(s, r), ece=ece(s, r),
        auroc=auroc(s[a], s[~a]) if both else None,
        at_coverage={f"{c:.1f}": accuracy_at(s, r, c) for c in COVERAGES}, reliability=reliability(s, r))
    if threshold is not None or shown is not None:
        shown = np.asarray(shown, dtype=bool) if shown is not None else s >= threshold
        out.threshold = threshold
        out.shown = float(shown.mean()) if len(s) else float("nan")
        out.shown_accuracy = float(r[shown].mean()) if shown.any() else float("nan")
        if a is not None and a.any():
            out.answerable_shown = float(shown[a].mean())
    return out


@dataclass
class RecordsEvaluation:
    """Answer records with a gold answer, whether each answer is right, which questions are
    answerable (not ``--hide-gold``), and (scores, the scores, right) per selective score."""

    records: list[dict[str, Any]]
    right: np.ndarray
    answerable: np.ndarray
    results: list[tuple[SelectiveScores, np.ndarray, np.ndarray]]
    calibrated: bool                    # the records carry a calibrated confidence
    # share of the answerable and the unanswerable questions' answers in each state (answered,
    # uncertain, not found: :func:`state_shares`); empty without a calibrated confidence
    states: dict[str, dict[str, float]] = field(default_factory=dict)


def evaluate_records(records: Sequence[Mapping[str, Any]], mode: str = "official",
                     threshold: float | None = None, not_found_threshold: float | None = None) -> RecordsEvaluation:
    """The calibrated confidence (when every record has one) and the fused probability as
    selective scores of the records that have a gold answer (none: no results). Shown: at least ``threshold``, or
    for the calibrated confidence without one the records' own ``answered`` flags; not found:
    below ``not_found_threshold``, or without one the records' own ``found`` flags (a record
    without that flag: not found when not answered)."""
    right, scored = correctness(records, mode=mode)
    records = [r for r, ok in zip(records, scored) if ok]
    right = right[scored]
    answerable = np.asarray([not r.get("gold_hidden") for r in records], dtype=bool)
    if not records:
        return RecordsEvaluation(records, right, answerable, [], False)
    scores = [("fused probability", np.asarray([float(r.get("score") or 0.0) for r in records]))]
    calibrated = all(r.get("confidence") is not None for r in records)
    if all(r.get("answerable") is not None for r in records):
        scores.insert(0, ("answerable", np.asarray([float(r["answerable"]) for r in records])))
    if calibrated:
        scores.insert(0, ("calibrated", np.asarray([float(r["confidence"]) for r in records])))
    results = []
    for name, s in scores:
        shown = None
        if name == "calibrated":
            shown = (s >= threshold) if threshold is not None else np.asarray(
                [r.get("answered", True) is not False for r in records])
        elif threshold is not None and name != "answerable":  # a threshold on P(right)
            shown = s >= threshold
        results.append((score(name, s, right, answerable, threshold, shown), s, right))
    states: dict[str, dict[str, float]] = {}
    if calibrated:
        c = np.asarray([float(r["confidence"]) for r in records])
        answered = (c >= threshold) if threshold is not None else np.asarray(
            [r.get("answered", True) is not False for r in records])
        if not_found_threshold is not None:
            s = np.asarray([float(r["answerable"] if r.get("answerable") is not None else r["confidence"])
                            for r in records])
            found = s >= not_found_threshold
        else:
            found = np.asarray([r.get("found", r.get("answered", True)) is not False for r in records])
        states = state_shares(answered, found, answerable)
    return RecordsEvaluation(records, right, answerable, results, calibrated, states)


def plot(results: Sequence[tuple[SelectiveScores, np.ndarray, np.ndarray]], path: str | Path) -> Path:
    """A PNG: the reliability diagram and the coverage–accuracy curve of each score.
    ``results``: (scores, the score per answer, right per answer) for each score."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.4), dpi=100, layout="tight")
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot([0, 1], [0, 1], color="#9ca3af", linestyle="--", linewidth=1, label="perfect calibration")
    for sc, s, r in results:
        rel = sc.reliability
        xs = [m for m, c in zip(rel.mean_score, rel.count) if c]
        ys = [a for a, c in zip(rel.accuracy, rel.count) if c]
        ax1.plot(xs, ys, marker="o", label=f"{sc.name} (ECE {sc.ece:.3f})")
        cov, acc, _ = coverage_curve(s, r)
        ax2.plot(cov, acc, label=f"{sc.name} (AURC {sc.aurc:.3f})")
    ax1.set(xlabel="score (bin mean)", ylabel="share of answers right (F1 ≥ 0.5)", xlim=(0, 1), ylim=(0, 1),
            title="reliability")
    ax2.set(xlabel="coverage (share of questions answered)", ylabel="accuracy of the answers given",
            xlim=(0, 1), ylim=(0, 1), title="coverage–accuracy")
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp)
    tmp.replace(path)
    return path


@dataclass
class Fit:
    """A calibrator fitted on answer records, its threshold and how it does on what it saw."""

    calibrator: Any                 # reader.answerability.Calibrator
    threshold: float
    precision: float                # the share of shown answers wanted right at the threshold
    train: SelectiveScores
    not_found_threshold: float | None = None   # below it: "not found in this collection"
    not_found: dict[str, Any] = field(default_factory=dict)   # how that threshold splits the fit's answers
    answerable: Any = None          # Calibrator of P(answerable), the not-found score; None: P(right) is
    reader: str | None = None       # the xqa answer --reader whose answers it saw; None: the config's reader

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "answerability", "reader": self.reader, "calibrator": self.calibrator.to_dict(),
                "threshold": self.threshold,
                "precision": self.precision, "answerable": self.answerable.to_dict() if self.answerable else None,
                "not_found_threshold": self.not_found_threshold, "not_found": self.not_found,
                "train": {k: v for k, v in self.train.to_dict().items() if k != "reliability"}}


def threshold_for_misses(scores: Sequence[float], answerable: Sequence[bool], share: float) -> float | None:
    """The highest threshold below which at most ``share`` of the answerable questions' answers
    score (None without answerable ones): "not found" is then said of at most that share of
    questions the collection answers, and of as many unanswerable ones as score lower."""
    s = np.sort(np.asarray(scores, dtype=np.float64)[np.asarray(answerable, dtype=bool)])
    if not len(s):
        return None
    return float(s[min(int(np.floor(share * len(s) + 1e-9)), len(s) - 1)])


def state_shares(answered: Sequence[bool], found: Sequence[bool],
                 answerable: Sequence[bool]) -> dict[str, dict[str, float]]:
    """Share of the answerable and of the unanswerable questions' answers in each state:
    answered, uncertain (found but not answered), not found (neither)."""
    shown = np.asarray(answered, dtype=bool)
    found = np.asarray(found, dtype=bool) | shown
    a = np.asarray(answerable, dtype=bool)
    out = {}
    for name, m in (("answerable", a), ("unanswerable", ~a)):
        if m.any():
            out[name] = {"answered": float(shown[m].mean()), "uncertain": float((found & ~shown)[m].mean()),
                         "not found": float((~found)[m].mean()), "n": int(m.sum())}
    return out


NOT_FOUND_SCORES = ("answerable", "calibrated")


def fit(records: Sequence[Mapping[str, Any]], precision: float | None = None, l2: float = 1.0,
        mode: str = "official", not_found_share: float = 0.1, not_found_score: str = "answerable") -> Fit:
    """Fit :class:`reader.answerability.Calibrator` on answer records that carry ``features``
    (``xqa answer`` writes them); label = the answer is right (F1 ≥ 0.5). The threshold is the
    lowest at which ≥ ``precision`` of the answers shown are right. With answerable and
    made-unanswerable questions among the records, a second regression of the same features
    predicts whether the question is answerable (``answerable``: P(the collection holds the
    answer)), and the not-found threshold is the highest below which at most ``not_found_share``
    of the answerable questions fall (:func:`threshold_for_misses`), on that score
    (``not_found_score="answerable"``) or on P(right) (``"calibrated"``; never above the threshold).
    ``not_found`` gives both scores' AUROC of answerable against unanswerable on the fit's own
    answers, and the share of each kind of question in each state."""
    from reader.answerability import DEFAULT_PRECISION, fit_calibrator, threshold_for_precision

    precision = DEFAULT_PRECISION if precision is None else precision
    right, scored = correctness(records, mode=mode)
    keep = [i for i, ok in enumerate(scored) if ok]
    rows = _features([records[i] for i in keep])
    y = right[keep]
    try:
        cal = fit_calibrator(rows, y, l2=l2)
    except ValueError as e:
        raise XqaError(f"cannot fit the answerability calibrator: {e}") from None
    p = cal.probabilities(rows)
    answerable = np.asarray([not records[i].get("gold_hidden") for i in keep])
    cal.fitted_on.update({"answerable": int(answerable.sum()), "unanswerable": int((~answerable).sum())})
    threshold = threshold_for_precision(p, y, precision)
    if not_found_score not in NOT_FOUND_SCORES:
        raise XqaError(f"not-found score {not_found_score!r}: choose from {', '.join(NOT_FOUND_SCORES)}")
    low, not_found, held = None, {}, None
    if answerable.any() and (~answerable).any():
        held = fit_calibrator(rows, answerable, l2=l2)
        held.fitted_on.update({"label": "answerable (not --hide-gold)"})
        q = held.probabilities(rows)
        s = q if not_found_score == "answerable" else p
        low = threshold_for_misses(s, answerable, not_found_share)
        if not_found_score == "calibrated":
            low, held = min(low, threshold), None
        not_found = {"share": not_found_share, "score": not_found_score,
                     "auroc": {"calibrated": auroc(p[answerable], p[~answerable]),
                               "answerable": auroc(q[answerable], q[~answerable])},
                     "states": state_shares(p >= threshold, s >= low, answerable)}
    return Fit(cal, threshold, precision, score("calibrated", p, y, answerable, threshold), low, not_found, held)
