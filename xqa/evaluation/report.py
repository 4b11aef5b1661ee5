"""A Markdown evaluation report with PNG plots.

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
