"""``xqa answer``: answer a whole evaluation set — retrieve, read, fuse evidence
(:func:`xqa.runs.answer_questions`).

Resumable: every finished batch is appended to ``OUT/records.jsonl`` (flushed
and synced), and a rerun skips the questions already there, so a killed run
continues where it stopped with nothing duplicated or lost. When all questions
are answered the predictions are written in the MIA submission layout: one
JSON object per language mapping id → answer (``OUT/predictions/{lang}.json``),
and all of them in ``OUT/predictions.json``.

Under ``torchrun --nproc-per-node N -m xqa.cli answer ...`` N processes share
every round of questions (torchrun gives each one CPU thread); rank 0 writes.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from xqa.cli_options import add_pipeline_arguments, add_selection_arguments
from xqa.runs import AnswerConfig as D


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", nargs="+", required=True,
                   help="question files (XOR/MIA/MKQA JSONL, SQuAD JSON, NQ-open JSONL)")
    p.add_argument("--lang", default=None, help="language of questions whose records carry none")
    p.add_argument("--out", required=True, help="output folder (records.jsonl, predictions/)")
    p.add_argument("--batch-size", type=int, default=D.batch_size, help="questions per batch")
    p.add_argument("--n-passages", type=int, default=D.n_passages, help="passages given to the reader")
    p.add_argument("--no-evidence-fusion", action="store_true",
                   help="answer with the reader's own best candidate (for comparison)")
    p.add_argument("--evidence", type=int, default=D.evidence, help="evidence passages kept per record")
    p.add_argument("--abstain", action="store_true",
                   help="write an empty prediction where the calibrated probability that the answer is right "
                        "is below the config's reader.answerability_threshold (the records keep the best "
                        "guess either way; the MIA metric counts an empty answer as wrong)")
    p.add_argument("--hide-gold", action="store_true",
                   help="answer as if the collection lacked each question's own paragraphs (its positive_ids "
                        "and those of its parallel versions, xling.*.positive_ids): the made-unanswerable "
                        "half that xqa tune answerability and xqa eval --selective read")
    add_pipeline_arguments(p)
    add_selection_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import load_pipeline, read_questions, to_config
    from xqa.runs import answer_questions

    questions = read_questions(args)  # an id repeated within or across the files is an error
    ids = [q.id for q in questions]
    done = answer_questions(lambda: load_pipeline(args), questions,
                            to_config(D, args, evidence_fusion=not args.no_evidence_fusion))
    if not done.counts:  # another process of a torchrun job
        return 0
    out = Path(args.out)
    print(f"{len(ids)} predictions → {out / 'predictions'} "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(done.counts.items()))})")
    if args.abstain:
        print(f"--abstain: {done.empty} of {len(ids)} predictions empty (calibrated probability below "
              f"reader.answerability_threshold, or a blank question)")
    return 0
