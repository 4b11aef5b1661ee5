"""``xqa ask``: answer one question and show the evidence."""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_pipeline_arguments
from xqa.runs import AskConfig

COMMAND = ConfigCommand(AskConfig)
STDIN = "-"   # the question that stands for standard input's questions, one a line


def add_arguments(p: argparse.ArgumentParser) -> None:
    COMMAND.add_arguments(p)
    add_pipeline_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.cli_options import load_pipeline, reader_choice
    from xqa.pipeline import AUTO, given_language, question_text

    cfg = COMMAND.config(args)
    stream = cfg.question == STDIN
    text = None if stream else question_text(cfg.question)
    pipe = load_pipeline(args, say=_say)
    cfg.reader = reader_choice(pipe.config, cfg.reader, say=_say)   # a reader folder joins the config's readers
    pipe.check(reader=cfg.reader)  # a missing index or reader is an error now, before anything loads
    if cfg.lang != AUTO:
        given_language(cfg.lang, pipe.config.languages)   # so is an unknown --lang
    if stream:
        return _ask_stream(pipe, cfg, args)
    found = None
    if cfg.lang == AUTO:   # lingua loads its models in another process while this one loads the pipeline's
        from xqa.langid.model import identify_elsewhere

        found = identify_elsewhere(text, say=_say)
    pipe.prepare(reader=cfg.reader)
    _answer(pipe, cfg, args, text, found=found() if found is not None else None)
    return 0


def _answer(pipe, cfg, args: argparse.Namespace, text: str, found: str | None = None, jsonl: bool = False,
            question_id: str = "q") -> None:
    """Answer ``text`` and print it: the answer, n-best and evidence, or the record (its ``id``:
    ``question_id``) as JSON (one line of it where ``jsonl``)."""
    import json

    from xqa.langid import UNKNOWN
    from xqa.rendering import answer_lines

    asked = pipe.ask(text, cfg.lang, question_id=question_id, n_passages=cfg.n_passages, reader=cfg.reader,
                     found=found)
    if cfg.json:   # the question and the language it was searched in first, as xqa answer's records
        record = asked.answer.to_dict()
        record = {"id": record.pop("id"), "question": asked.question.question, "lang": asked.question.lang,
                  **record}
        if cfg.reader is not None:   # as xqa answer's records name it
            record["reader"] = cfg.reader
        n = cfg.n_passages or pipe.config.reader_config(cfg.reader).n_passages   # read; K at least that
        record.update(detected=asked.detected, identified=asked.identified or None,   # as the demo's record
                      method=pipe.config.retrieval.method, k=max(pipe.config.retrieval.k, n), n_passages=n)
        print(json.dumps(record, ensure_ascii=False, indent=None if jsonl else 1), flush=True)
        return
    lang = asked.question.lang
    rc = pipe.config.reader_config(cfg.reader)
    searched = pipe.script_indexes(text)
    from xqa import methods

    method = methods.method(args.method or pipe.config.retrieval.method).name
    calibrator = pipe.calibrator_of(cfg.reader)
    why = (f"no P(right): the calibrator was fitted on {calibrator.fitted_on['method']}'s answers"
           if calibrator is not None and not calibrator.fits_method(method) else "")
    print("\n".join(answer_lines(asked.answer, text, lang, args.method or pipe.config.retrieval.method,
                                 unknown_lang=lang == UNKNOWN, identified=asked.identified, searched=searched,
                                 show=cfg.show,
                                 threshold=rc.answerability_threshold,
                                 not_found_threshold=rc.not_found_threshold, uncalibrated=why,
                                 indexed=not pipe.config.languages or lang in pipe.config.languages,
                                 fused=rc.evidence_fusion)), flush=True)


def _ask_stream(pipe, cfg, args: argparse.Namespace) -> int:
    """``xqa ask -``: the questions of standard input, one a line, each answered as it comes with
    the pipeline loaded once (a prompt on stderr where stdin is a terminal, where Ctrl-C stops
    the answer under way and Ctrl-D ends; blank lines skipped; a record's ``id`` is its line number).
    A question that cannot be asked is reported with its line number (with ``--json``, in a record
    of its own with an ``error``) and the rest go on; the exit status is 1 when any was."""
    import sys

    from xqa.errors import XqaError
    from xqa.pipeline import AUTO, question_text

    interactive = sys.stdin.isatty()
    pipe.prepare(reader=cfg.reader)
    if cfg.lang == AUTO:
        from xqa.langid import warm_up

        warm_up()   # lingua's models, which the first question would otherwise wait for
    if interactive:
        _say("ready: one question a line; end of input (Ctrl-D) ends")
    asked = failed = 0
    for number, line in enumerate(_lines(sys.stdin, interactive), 1):
        if not line.strip():
            continue
        try:
            text = question_text(line)
            if asked and not cfg.json:
                print(flush=True)   # a blank line between answers
            _answer(pipe, cfg, args, text, jsonl=True, question_id=str(number))
            asked += 1
        except XqaError as e:
            failed += 1
            _say(f"<stdin>:{number}: {e}")
            if cfg.json:   # a record for every question line, the ones that could not be asked too
                import json

                print(json.dumps({"id": str(number), "question": line.strip(), "error": str(e)},
                                 ensure_ascii=False), flush=True)
        except KeyboardInterrupt:
            if not interactive:
                raise
            _say("interrupted: that question is left unanswered")   # at a prompt, Ctrl-C stops one answer
    if not interactive:
        _say(f"{asked} question(s) answered" + (f", {failed} could not be asked" if failed else ""))
    return 1 if failed else 0


def _lines(stdin, interactive: bool):
    """The lines of ``stdin``; where it is a terminal, each after a prompt on stderr."""
    import sys

    while True:
        if interactive:
            print("question> ", end="", file=sys.stderr, flush=True)
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            line = ""
        if not line:
            if interactive:
                print(file=sys.stderr)
            return
        yield line.rstrip("\n")


def _say(line: str) -> None:
    """What loads while a cold ``xqa ask`` waits, on stderr (stdout holds only the answer)."""
    import sys

    print(f"xqa ask: {line}", file=sys.stderr, flush=True)
