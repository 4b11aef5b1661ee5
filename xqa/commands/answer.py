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

from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_pipeline_arguments, add_selection_arguments
from xqa.errors import XqaError
from xqa.runs import AnswerConfig, QuestionFiles

QUESTIONS = ConfigCommand(QuestionFiles)
COMMAND = ConfigCommand(AnswerConfig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    QUESTIONS.add_arguments(p)
    COMMAND.add_arguments(p)
    add_pipeline_arguments(p)
    add_selection_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import load_pipeline, read_questions, reader_choice
    from xqa.runs import answer_questions, answer_settings, score_line, warn_unaskable

    cfg = COMMAND.config(args)
    if Path(cfg.out).exists() and not Path(cfg.out).is_dir():
        raise XqaError(f"--out {cfg.out} is a file; xqa answer writes a folder there (records.jsonl, "
                       f"predictions/): name a new or an earlier run's folder")
    from xqa.records import AUTO_LANG

    pipeline = load_pipeline(args)   # its config alone: nothing loads before a question is answered
    folder = cfg.reader is not None and cfg.reader not in pipeline.config.reader_names()
    cfg.reader = reader_choice(pipeline.config, cfg.reader, say=_say)   # a reader folder joins its readers
    if cfg.abstain and pipeline.config.reader_config(cfg.reader).answerability is None:
        raise XqaError(f"--abstain leaves out answers by their calibrated probability, and the reader "
                       f"{pipeline.config.reader_name() if cfg.reader is None else cfg.reader} has no calibrator "
                       f"(reader.answerability; xqa tune answerability fits one): nothing would be left out")
    if cfg.abstain:
        from xqa import methods

        method, calibrator = methods.method(pipeline.config.retrieval.method).name, pipeline.calibrator_of(cfg.reader)
        fitted = calibrator.fitted_on.get("method")
        if not calibrator.fits_method(method):
            raise XqaError(f"--abstain leaves out answers by their calibrated probability, and the reader's "
                           f"calibrator was fitted on answers retrieved by {fitted}, not {method}: their "
                           f"retrieval scores differ in scale, so it gives these answers none (answer with "
                           f"--method {fitted}, or fit one on {method}'s answers: xqa tune answerability)")
    # an id repeated within or across the files is an error; --lang auto: onto the pipeline's languages
    languages = pipeline.config.languages if args.lang == AUTO_LANG else ()
    questions = read_questions(args, languages)
    ids = [q.id for q in questions]
    warn_unaskable(questions, "answer", "each gets an empty prediction")
    # an unknown --reader is an error before anything is answered, and so is resuming with other settings
    settings = answer_settings(pipeline.config, cfg, reader_folder=folder)
    done = answer_questions(pipeline, questions, cfg, settings)
    if not done.counts:  # another process of a torchrun job
        return 0
    out = Path(cfg.out)
    print(f"{len(ids)} predictions → {out / 'predictions'} "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(done.counts.items()))})")
    if cfg.abstain:
        print(f"--abstain: {done.empty} of {len(ids)} predictions empty (calibrated probability below "
              f"reader.answerability_threshold, or a blank question)")
    if cfg.submission:
        from xqa.runs import write_submission

        parts, lacking = write_submission(out, questions)
        print(f"MIA submission → {out / 'submission.json'} ({', '.join(f'{k}: {v}' for k, v in parts.items())})"
              + (f"; eval.ai wants every subset, and it lacks {', '.join(lacking)}" if lacking else ""))
    elif (out / "submission.json").is_file():   # an earlier run's: these predictions are not in it
        (out / "submission.json").unlink()
        print(f"removed {out / 'submission.json'}: it held an earlier run's predictions (--submission writes "
              f"this run's)")
    line = score_line(questions, out, gold_args(args))
    if line:
        print(line)
    return 0


def gold_args(args: argparse.Namespace) -> str:
    """The ``xqa eval`` options naming the questions this command answered: ``--gold`` with the
    same files, ``--lang``, ``--where`` and ``--per-lang`` (quoted for a shell)."""
    import shlex

    files = [args.questions] if isinstance(args.questions, (str, Path)) else list(args.questions)
    words = ["--gold", *map(str, files)]
    if getattr(args, "lang", None):
        words += ["--lang", args.lang]
    for where in getattr(args, "where", None) or []:
        words += ["--where", where]
    if getattr(args, "per_lang", 0):
        words += ["--per-lang", str(args.per_lang)]
    return shlex.join(words)


def _say(line: str) -> None:
    import sys

    print(f"xqa answer: {line}", file=sys.stderr, flush=True)
