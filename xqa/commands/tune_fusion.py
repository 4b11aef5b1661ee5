"""``xqa tune fusion``: grid-search the evidence-fusion weights β, γ (and ε) on dev
(:func:`xqa.evaluation.tuning.tune_fusion`).

Runs the reader (beam search, n-best) over the dev retrieval results, then
searches coarse to fine (``reader.tuning``) for the weights that maximise mean
F1 of the fused answer, and writes them to a JSON file together with the dev
scores of fusion and of the reader alone. ``--cache`` keeps the reader outputs
(JSONL) so a rerun only redoes the search.
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.evaluation.tuning import FusionTuneConfig

COMMAND = ConfigCommand(FusionTuneConfig, settings=True, exclude=("write_config",))
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.evaluation.tuning import tune_fusion

    cfg = COMMAND.config(args)
    best = tune_fusion(cfg)
    if best is None:  # another process of a torchrun job: it shared the reading, rank 0 tunes
        return 0
    weights = " ".join(f"{k}={best[k]:.4g}" if isinstance(best[k], float) else f"{k}={best[k]}"
                       for k in best["tuned"])
    print(f"{weights}: dev F1 {best['dev_f1']:.4f} (reader alone {best['reader_only_f1']:.4f}) -> {cfg.out}")
    return 0
