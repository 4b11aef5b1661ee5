"""``xqa tune answerability``: fit the calibrated probability that an answer is right.

Reads ``xqa answer`` records of questions with known answers — one run over the whole
collection and one with ``--hide-gold`` (the questions' own paragraphs removed, so their
answers should not be found) — and fits a logistic regression of "the answer is right"
(official F1 ≥ 0.5) on each answer's features (``reader.answerability``). The threshold is
the lowest calibrated probability at which the shown answers are right at least
``--precision`` of the time. Writes ``OUT/config.json``, and with ``--write-config`` puts the
calibrator and threshold into the pipeline config (``reader.answerability``,
``reader.answerability_threshold``).

Example (the shipped corpus's tuning questions)::

    xqa answer --questions xqa/corpus/questions.jsonl.gz --where split=tune --out runs/tune
    xqa answer --questions xqa/corpus/questions.jsonl.gz --where split=tune --hide-gold --out runs/tune-hidden
    xqa tune answerability --records runs/tune runs/tune-hidden --out runs/answerability --write-config
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.commands._common import CONFIG_HELP

    p.add_argument("--records", nargs="+", required=True, metavar="RECORDS",
                   help="xqa answer records (OUT/records.jsonl or OUT) of questions with gold answers; "
                        "include a --hide-gold run so the fit sees unanswerable questions")
    p.add_argument("--out", required=True, help="folder for config.json (the calibrator, threshold, fit figures)")
    p.add_argument("--precision", type=float, default=None,
                   help="share of shown answers that should be right at the threshold (default 0.75)")
    p.add_argument("--l2", type=float, default=1.0, help="L2 penalty on the standardised coefficients")
    p.add_argument("--config", default=None, help=CONFIG_HELP)
    p.add_argument("--write-config", action="store_true",
                   help="write the calibrator and threshold into the pipeline config")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xqa.artifacts import write_json_atomic
    from xqa.errors import XqaError
    from xqa.evaluation import selective

    if args.precision is not None and not 0.0 < args.precision <= 1.0:
        raise XqaError(f"--precision {args.precision}: a share in (0, 1]")
    records = selective.read_records(args.records)
    result = selective.fit(records, args.precision, args.l2)
    cal, t = result.calibrator, result.threshold
    cal.fitted_on["records"] = [str(p) for p in args.records]
    tr = result.train
    print(f"fitted on {cal.fitted_on['answers']} answers ({cal.fitted_on['right']} right; "
          f"{cal.fitted_on['answerable']} answerable, {cal.fitted_on['unanswerable']} made unanswerable)")
    print("coefficients (standardised features): " + ", ".join(f"{f} {w:+.2f}" for f, w in zip(cal.features, cal.coef)))
    print(f"on these answers: AUROC {'—' if tr.auroc is None else f'{tr.auroc:.3f}'}, ECE {tr.ece:.3f}, "
          f"AURC {tr.aurc:.3f}")
    print(f"threshold {t:.3f}: {tr.shown:.1%} of answers shown, {tr.shown_accuracy:.1%} of them right "
          f"(wanted ≥ {result.precision:.0%})"
          + (f"; {tr.answerable_shown:.1%} of answerable questions answered" if tr.answerable_shown is not None else ""))
    out = Path(args.out)
    write_json_atomic(out / "config.json", result.to_dict())
    print(f"calibrator: {out / 'config.json'}")
    if args.write_config:
        from xqa.commands._common import config_path
        from xqa.config import PipelineConfig

        path = config_path(args)
        cfg = PipelineConfig.load(path)
        cfg.reader.answerability = cal.to_dict()
        cfg.reader.answerability_threshold = t
        cfg.tuned["answerability"] = {"threshold": t, "precision": result.precision, "records": cal.fitted_on["records"]}
        cfg.save(path)
        print(f"written into {path} (reader.answerability, reader.answerability_threshold)")
    return 0
