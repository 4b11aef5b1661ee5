"""``xqa tune answerability``: fit the calibrated probability that an answer is right.

Reads ``xqa answer`` records of questions with known answers — one run over the whole
collection and one with ``--hide-gold`` (the questions' own paragraphs removed, so their
answers should not be found) — and fits a logistic regression of "the answer is right"
(official F1 ≥ 0.5) on each answer's features (``reader.answerability``). The threshold is
the lowest calibrated probability at which the shown answers are right at least
``--precision`` of the time; the not-found threshold, below it, the highest below which at most
``--not-found-share`` of the answerable questions fall (between the two, an answer is shown as
uncertain). Writes ``OUT/config.json``, and with ``--write-config`` puts the calibrator and
thresholds into the pipeline config (``reader.answerability``, ``reader.answerability_threshold``,
``reader.not_found_threshold``; those of ``readers.NAME`` for records of ``xqa answer --reader
NAME``, and a reader's folder given as ``--reader DIR`` joins ``readers`` under its folder's name).
The fit is :func:`xqa.evaluation.tuning.tune_answerability`.

Example (the shipped corpus's tuning questions)::

    xqa answer --questions xqa/corpus/questions.jsonl.gz --where split=tune --out runs/tune
    xqa answer --questions xqa/corpus/questions.jsonl.gz --where split=tune --hide-gold --out runs/tune-hidden
    xqa tune answerability --records runs/tune runs/tune-hidden --out runs/answerability --write-config
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.cli_options import pipeline_config_option, write_config_option
from xqa.evaluation.tuning import AnswerabilityTuneConfig

WRITE_HELP = ("write the calibrator and threshold into the pipeline config, into the settings of the reader "
              "that answered the records")
COMMAND = ConfigCommand(AnswerabilityTuneConfig, exclude=("write_config",), extra=(
    pipeline_config_option(), write_config_option(WRITE_HELP)),
    groups={None: ("records", "out", "precision", "not_found_share", "not_found_score", "l2", "config",
                   "write_config")})
add_arguments = COMMAND.add_arguments


FEW = 20   # right or wrong answers below which a fit is said to rest on too few


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xqa.cli_options import config_path
    from xqa.evaluation.tuning import tune_answerability

    write = config_path(args) if args.write_config else None
    if write is not None and not write.is_file():
        from xqa.config import PipelineConfig

        PipelineConfig.load(write)  # the error that names the missing file
    cfg = COMMAND.config(args, write_config=write)
    result = tune_answerability(cfg)
    cal, t = result.calibrator, result.threshold
    tr = result.train
    print(f"fitted on {cal.fitted_on['answers']} answers ({cal.fitted_on['right']} right; "
          f"{cal.fitted_on['answerable']} answerable, {cal.fitted_on['unanswerable']} made unanswerable)"
          + (f", retrieved by {cal.fitted_on['method']}: it judges answers of that method only"
             if cal.fitted_on.get("method") else ""))
    right, wrong = cal.fitted_on["right"], cal.fitted_on["answers"] - cal.fitted_on["right"]
    if min(right, wrong) < FEW:
        import sys

        print(f"xqa tune answerability: warning: {right} right and {wrong} wrong answers are few to fit on "
              f"(fewer than {FEW} of either): the probabilities and the threshold rest on them; answer more "
              f"questions (xqa answer, with and without --hide-gold) and fit again", file=sys.stderr)
    print("coefficients (standardised features): " + ", ".join(f"{f} {w:+.2f}" for f, w in zip(cal.features, cal.coef)))
    print(f"on these answers: AUROC {'—' if tr.auroc is None else f'{tr.auroc:.3f}'}, ECE {tr.ece:.3f}, "
          f"AURC {tr.aurc:.3f}")
    print(f"threshold {t:.3f}: {tr.shown:.1%} of answers shown, {tr.shown_accuracy:.1%} of them right "
          f"(wanted ≥ {result.precision:.0%})"
          + (f"; {tr.answerable_shown:.1%} of answerable questions answered" if tr.answerable_shown is not None else ""))
    nf = result.not_found
    if result.not_found_threshold is not None:
        auc = nf["auroc"]
        print(f"answerable vs made unanswerable on these answers: AUROC {auc['calibrated']:.3f} of P(right), "
              f"{auc['answerable']:.3f} of P(answerable), a regression fitted for that label")
        on = "P(answerable)" if nf["score"] == "answerable" else "P(right)"
        print(f"not-found threshold {result.not_found_threshold:.3f} on {on} (at most {nf['share']:.0%} of "
              f"answerable questions below it):")
        for kind, s in nf["states"].items():
            print(f"  {kind} ({s['n']}): answered {s['answered']:.1%}, shown as uncertain {s['uncertain']:.1%}, "
                  f"not found {s['not found']:.1%}")
    else:
        print("no not-found threshold: the records hold no --hide-gold run (or no run without it)")
    print(f"calibrator: {Path(cfg.out) / 'config.json'}")
    if write is not None:
        at = "reader" if result.reader is None else f"readers.{result.reader}"
        print(f"written into {write} ({at}.answerability, {at}.answerability_threshold, "
              f"{at}.answerable, {at}.not_found_threshold)"
              + (f"; xqa ask --reader {result.reader} answers with it" if result.reader else ""))
    return 0
