"""``xqa eval``: score predictions (official MIA EM/F1), retrieval results, significance, reports.

Examples::

    xqa eval --gold dev.jsonl --predictions preds.json --json scores.json
    xqa eval --gold xor_dev.jsonl mkqa_dev/ --predictions preds/ --mia
    xqa eval --retrieval dense.json scd.json --names dense scd --k 1 5 20 100
    xqa eval --gold dev.jsonl --compare a.json b.json
    xqa eval --gold test_questions/ --predictions preds/ --coverage   # a submission check, no scores
    xqa eval --gold dev.jsonl --sweep 1=p1.json 5=p5.json 20=p20.json --report out/
    xqa eval --selective runs/test runs/test-hidden --plot selective.png   # confidence: AUROC, AURC, ECE
"""
from __future__ import annotations

import argparse
import sys

from xqa.cli_config import ConfigCommand
from xqa.evaluation.scoring import EvalConfig

COMMAND = ConfigCommand(EvalConfig, settings=True, groups={
    "question selection": ("where", "per_lang"),
    "end-to-end (MIA 2022 official EM / F1)": ("gold", "lang", "predictions", "mode", "mia", "coverage", "per_question"),
    "retrieval": ("retrieval", "names", "k", "match", "default_lang"),
    "significance": ("compare", "metric"),
    "selective answering (how well a score tells right answers from wrong)": ("selective", "plot", "calibrator",
                                                                              "threshold", "not_found_threshold"),
    "report": ("report", "sweep"),
    None: ("json",)})
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.evaluation.scoring import evaluate

    result = evaluate(COMMAND.config(args))
    for text, to_stderr in result.lines:
        print(text, file=sys.stderr if to_stderr else sys.stdout)
    sys.stdout.flush()
    return result.status
