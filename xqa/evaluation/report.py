"""The figures of an evaluation for people: a Markdown report with PNG plots, and the text
tables ``xqa eval`` prints (the ``*_text`` functions at the end of this module).

``write_report(out_dir, ...)`` writes ``out_dir/report.md`` and, depending on
what it is given:

* ``recall_<lang>.png`` and ``recall_all.png``: top-k answer accuracy
  against k (1 … the longest passage list, log-scaled axis), one line per
  retrieval method, one figure per language plus the pooled one;
* ``em_vs_passages.png``: macro and per-language EM against the number of
  passages the reader was given (a sweep of prediction files);

with tables of the same figures, the end-to-end scores of each prediction set
and a paired t-test. Plots use matplotlib's ``Figure`` directly (Agg canvas, no
pyplot state), so they work without a display and leave the caller's pyplot alone.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xqa.artifacts import write_text_atomic
from xqa.evaluation.mia import EndToEndScores
from xqa.evaluation.retrieval import (
    accuracy_from_ranks,
    first_answer_ranks,
    score_retrieval,
)
from xqa.evaluation.significance import PairedTest


def _fmt(x: float) -> str:
    return f"{x:.1f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def end_to_end_table(scores: EndToEndScores) -> list[str]:
    rows = [[lang, str(s.n), _fmt(s.em), _fmt(s.f1), str(s.n_missing)]
            for lang, s in sorted(scores.per_language.items())]
    rows.append(["**macro**", str(scores.n), _fmt(scores.macro_em), _fmt(scores.macro_f1),
                 str(sum(s.n_missing for s in scores.per_language.values()))])
    return _table(["lang", "n", "EM", "F1", "no prediction"], rows)


def _new_figure() -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(6.4, 4.2), dpi=100, layout="tight")


def recall_curves(retrieval: Mapping[str, Sequence[Mapping[str, Any]]], match: str = "dpr",
                  ranks: Mapping[str, Sequence[int | None]] | None = None) -> dict[str, dict[str, list[float]]]:
    """``{lang or "all": {method: [top-1 accuracy, top-2, …]}}`` (percent).

    ``ranks``: method → precomputed ``first_answer_ranks(results, match)``.
    """
    curves: dict[str, dict[str, list[float]]] = {}
    for method, results in retrieval.items():
        max_k = max((len(r["ctxs"]) for r in results), default=0)
        if max_k == 0:
            continue
        method_ranks = ranks[method] if ranks else first_answer_ranks(results, match)
        groups: dict[str, list[int | None]] = {"all": list(method_ranks)}
        for r, rank in zip(results, method_ranks):
            groups.setdefault(str(r["lang"]), []).append(rank)
        for lang, rs in groups.items():
            acc = accuracy_from_ranks(rs, range(1, max_k + 1))
            curves.setdefault(lang, {})[method] = [acc[k] for k in range(1, max_k + 1)]
    return curves


def plot_recall_curves(curves: Mapping[str, Mapping[str, Sequence[float]]], out_dir: Path) -> dict[str, Path]:
    """One PNG per language: accuracy@k against k for every method."""
    out = {}
    from matplotlib.ticker import ScalarFormatter

    for lang, by_method in curves.items():
        fig = _new_figure()
        ax = fig.add_subplot()
        for method, ys in by_method.items():
            ax.plot(range(1, len(ys) + 1), ys, marker="." if len(ys) <= 30 else None, label=method)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_xlabel("k (passages retrieved)")
        ax.set_ylabel("top-k answer accuracy (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"Retrieval accuracy@k — {lang}")
        ax.grid(True, alpha=0.3)
        ax.legend()
        path = out_dir / f"recall_{lang}.png"
        fig.savefig(path)
        out[lang] = path
    return out


def plot_sweep(sweep: Mapping[int, EndToEndScores], out_dir: Path) -> Path:
    """EM (macro, bold, and per language) against the number of passages read."""
    ns = sorted(sweep)
    fig = _new_figure()
    ax = fig.add_subplot()
    langs = sorted({lang for s in sweep.values() for lang in s.per_language})
    for lang in langs:
        pts = [(n, sweep[n].per_language[lang].em) for n in ns if lang in sweep[n].per_language]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", linewidth=1, alpha=0.6, label=lang)
    ax.plot(ns, [sweep[n].macro_em for n in ns], marker="o", linewidth=2.5, color="black", label="macro")
    if len(ns) > 1 and ns[-1] / ns[0] >= 10:
        ax.set_xscale("log")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_xlabel("passages given to the reader")
    ax.set_ylabel("EM (%)")
    ax.set_title("End-to-end EM against the number of passages")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    path = out_dir / "em_vs_passages.png"
    fig.savefig(path)
    return path


def write_report(out_dir: str | Path, *,
                 retrieval: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                 ks: Sequence[int] = (1, 5, 20, 100), match: str = "dpr",
                 end_to_end: Mapping[str, EndToEndScores] | None = None,
                 sweep: Mapping[int, EndToEndScores] | None = None,
                 comparison: tuple[str, str, str, PairedTest] | None = None) -> Path:
    """Write ``report.md`` and its plots into ``out_dir``; return the Markdown path.

    ``retrieval``: method name → result records; ``end_to_end``: system name →
    scores; ``sweep``: number of passages → scores; ``comparison``:
    (name A, name B, metric, test).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md = ["# xqa evaluation report", ""]
    if retrieval:
        md += [f"## Retrieval (answer match: `{match}`)", ""]
        ranks = {method: first_answer_ranks(results, match) for method, results in retrieval.items()}
        for method, results in retrieval.items():
            scores = score_retrieval(results, ks, match, ranks=ranks[method])
            md += [f"### {method}", ""]
            rows = []
            for lang, s in [*sorted(scores.per_language.items()), ("**all**", scores.all)]:
                row = [lang, str(s.n)] + [_fmt(s.topk[k]) for k in scores.ks]
                if s.n_with_gold_ids:
                    row += [f"R@{k}={_fmt(s.recall[k])}" for k in scores.ks[-1:]]
                    row += [f"MRR@{k}={s.mrr[k]:.3f}" for k in scores.ks[-1:]]
                else:
                    row += ["–", "–"]
                rows.append(row)
            rows.append(["**macro**", "", *[_fmt(scores.macro_topk[k]) for k in scores.ks], "", ""])
            md += _table(["lang", "n", *[f"top-{k}" for k in scores.ks], "recall (gold ids)", "MRR"], rows)
        plots = plot_recall_curves(recall_curves(retrieval, match, ranks), out_dir)
        if plots:
            md += ["### Accuracy@k curves", ""]
            for lang in ["all", *sorted(k for k in plots if k != "all")]:
                if lang in plots:
                    md += [f"![accuracy@k {lang}]({plots[lang].name})", ""]
    if end_to_end:
        md += ["## End-to-end (MIA 2022 official EM / F1, percent)", ""]
        for name, scores in end_to_end.items():
            md += [f"### {name} (mode `{scores.mode}`)", "", *end_to_end_table(scores)]
    if sweep:
        md += ["## EM against the number of passages", ""]
        ns = sorted(sweep)
        md += _table(["passages", "n", "macro EM", "macro F1"],
                     [[str(n), str(sweep[n].n), _fmt(sweep[n].macro_em), _fmt(sweep[n].macro_f1)] for n in ns])
        md += [f"![EM vs passages]({plot_sweep(sweep, out_dir).name})", ""]
    if comparison:
        a, b, metric, test = comparison
        md += ["## Significance", "",
               f"Paired t-test on per-question {metric.upper()}, {a} vs {b}, n = {test.n}: "
               f"mean {_fmt(test.mean_a)} vs {_fmt(test.mean_b)} (difference {test.mean_diff:+.2f}), "
               + (f"t = {test.t:.3f}, p = {test.p_value:.4g}." if test.t is not None
                  else "t undefined (fewer than two questions or identical differences)."), ""]
    path = out_dir / "report.md"
    write_text_atomic(path, "\n".join(md))
    return path


# ------------------------------------------------------------------ terminal text (xqa eval)

def end_to_end_text(title: str, scores: EndToEndScores) -> str:
    """One system's EM / F1 per language, the macro average and what was skipped."""
    lines = [f"\n{title}  (mode {scores.mode}; EM / F1 in percent)",
             f"{'lang':<8} {'n':>7} {'EM':>7} {'F1':>7} {'no pred':>8}"]
    for lang, s in sorted(scores.per_language.items()):
        lines.append(f"{lang:<8} {s.n:>7} {s.em:>7.2f} {s.f1:>7.2f} {s.n_missing:>8}")
    n_missing = sum(s.n_missing for s in scores.per_language.values())
    lines.append(f"{'macro':<8} {scores.n:>7} {scores.macro_em:>7.2f} {scores.macro_f1:>7.2f} {n_missing:>8}")
    skipped = []
    if scores.n_no_answer:
        skipped.append(f"{scores.n_no_answer} 'No Answer'")
    if scores.n_no_gold:
        skipped.append(f"{scores.n_no_gold} without gold answers")
    if skipped:
        lines.append(f"skipped: {', '.join(skipped)}")
    return "\n".join(lines)


def mia_score_text(combined: Mapping[str, float]) -> str:
    return f"\nMIA score (mean of the two macro averages): EM {combined['em']:.2f}  F1 {combined['f1']:.2f}"


def retrieval_text(name: str, scores: Any) -> str:
    """One method's top-k accuracy (with gold passage ids: recall@k and MRR@k too) per language."""
    ks = scores.ks
    with_ids = scores.all.n_with_gold_ids > 0
    lines = [f"\nretrieval: {name}  (answer match {scores.mode}; top-k accuracy in percent)"]
    head = f"{'lang':<8} {'n':>7} " + " ".join(f"{'top-' + str(k):>8}" for k in ks)
    if with_ids:
        head += " " + " ".join(f"{'R@' + str(k):>7}" for k in ks) + " " + " ".join(
            f"{'MRR@' + str(k):>8}" for k in ks)
    lines.append(head)
    for lang, s in [*sorted(scores.per_language.items()), ("all", scores.all)]:
        row = f"{lang:<8} {s.n:>7} " + " ".join(f"{s.topk[k]:>8.2f}" for k in ks)
        if with_ids:
            if s.n_with_gold_ids:
                row += " " + " ".join(f"{s.recall[k]:>7.2f}" for k in ks)
                row += " " + " ".join(f"{s.mrr[k]:>8.4f}" for k in ks)
            else:
                row += " (no gold passage ids)"
        lines.append(row)
    lines.append(f"{'macro':<8} {'':>7} " + " ".join(f"{scores.macro_topk[k]:>8.2f}" for k in ks))
    return "\n".join(lines)


def comparison_text(name_a: str, name_b: str, metric: str, test: PairedTest) -> str:
    return (f"\npaired t-test on per-question {metric.upper()} ({test.n} questions; means over the questions, "
            f"not the macro average over languages): "
            f"{name_a} {test.mean_a:.2f} vs {name_b} {test.mean_b:.2f} (diff {test.mean_diff:+.2f}); "
            + (f"t = {test.t:.3f}, p = {test.p_value:.4g}" if test.t is not None else "t undefined"))


def sweep_text(sweep: Mapping[int, EndToEndScores]) -> str:
    """Macro EM / F1 against the number of passages read."""
    lines = ["\npassages  macro EM  macro F1"]
    lines += [f"{n:>8} {s.macro_em:>9.2f} {s.macro_f1:>9.2f}" for n, s in sweep.items()]
    return "\n".join(lines)


def coverage_text(c: Any, n_predictions: int) -> str:
    """A submission check (:class:`xqa.evaluation.coverage.Coverage`): questions, answered,
    empty and missing predictions per language."""
    lines = [f"{'lang':<8} {'questions':>9} {'answered':>9} {'empty':>7} {'missing':>8}"]
    for lang, row in [*c.per_language.items(), ("all", c.total)]:
        lines.append(f"{lang:<8} {row['questions']:>9} {row['answered']:>9} {row['empty']:>7} {row['missing']:>8}")
    lines.append(f"{n_predictions} predictions read")
    return "\n".join(lines)


def coverage_examples_text(c: Any) -> list[str]:
    """Example ids of each kind of gap (for the error stream)."""
    return [f"{kind}: e.g. {', '.join(ids)}" for kind, ids in c.examples.items() if ids]


def coverage_verdict(c: Any) -> str:
    return "coverage: complete" if c.complete else "coverage: INCOMPLETE"


def selective_text(e: Any) -> str:
    """How well each score (:func:`xqa.evaluation.selective.evaluate_records`'s results) tells
    right answers from wrong: AUROC, AURC, ECE, accuracy at each coverage, what the threshold shows."""
    from xqa.evaluation.selective import COVERAGES

    records, right, answerable, results = e.records, e.right, e.answerable, e.results
    halves = [("answerable", answerable), ("made unanswerable", ~answerable)]
    lines = [f"{len(records)} answers: " + ", ".join(f"{name} {int(m.sum())} ({right[m].mean():.1%} right)"
                                                     for name, m in halves if m.any())]
    if not e.calibrated:
        lines.append("the records carry no calibrated confidence (their reader had no calibrator: no "
                     "reader.answerability in the pipeline config, or a reader's folder given as --reader)")
    width = max(len(sc.name) for sc, _, _ in results) + 2
    lines.append(f"\n{'':<22}" + "".join(f"{sc.name:>{width}}" for sc, _, _ in results))

    def row(label: str, values: list) -> None:
        lines.append(f"{label:<22}" + "".join(f"{'—' if v is None else f'{v:.3f}':>{width}}" for v in values))

    row("AUROC ans. vs unans.", [sc.auroc for sc, _, _ in results])
    row("AURC (lower better)", [sc.aurc for sc, _, _ in results])
    row("ECE", [sc.ece for sc, _, _ in results])
    for cov in COVERAGES:
        row(f"accuracy @ {cov:.0%} cover", [sc.at_coverage[f"{cov:.1f}"] for sc, _, _ in results])
    if any(sc.shown is not None for sc, _, _ in results):
        row("shown at threshold", [sc.shown for sc, _, _ in results])
        row("  of them right", [sc.shown_accuracy for sc, _, _ in results])
        row("  answerable shown", [sc.answerable_shown for sc, _, _ in results])
    if e.states:
        lines.append(f"\n{'what is said':<22}" + "".join(f"{name:>14}" for name in e.states))
        for state, label in (("answered", "answered"), ("uncertain", "uncertain"),
                             ("not found", "not found")):
            lines.append(f"{label:<22}" + "".join(f"{s[state]:>14.1%}" for s in e.states.values()))
    return "\n".join(lines)
