"""``xqa ask``: answer one question and show the evidence."""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_pipeline_arguments
from xqa.runs import AskConfig

COMMAND = ConfigCommand(AskConfig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    COMMAND.add_arguments(p)
    add_pipeline_arguments(p)


def run(args: argparse.Namespace) -> int:
    import json

    from xqa.cli_options import load_pipeline
    from xqa.langid import UNKNOWN
    from xqa.pipeline import AUTO, given_language, question_text
    from xqa.rendering import answer_lines

    cfg = COMMAND.config(args)
    text = question_text(cfg.question)
    pipe = load_pipeline(args, say=_say)
    pipe.check(reader=cfg.reader)  # a missing index or reader is an error now, before anything loads
    if cfg.lang != AUTO:
        given_language(cfg.lang, pipe.config.languages)   # so is an unknown --lang
    found = None
    if cfg.lang == AUTO:   # lingua loads its models in another process while this one loads the pipeline's
        from xqa.langid.model import identify_elsewhere

        found = identify_elsewhere(text, say=_say)
    pipe.prepare(reader=cfg.reader)
    asked = pipe.ask(text, cfg.lang, n_passages=cfg.n_passages, reader=cfg.reader,
                     found=found() if found is not None else None)
    if cfg.json:
        print(json.dumps(asked.answer.to_dict(), ensure_ascii=False, indent=1))
        return 0
    lang = asked.question.lang
    rc = pipe.config.reader_config(cfg.reader)
    searched = pipe.script_indexes(text)
    print("\n".join(answer_lines(asked.answer, text, lang, args.method or pipe.config.retrieval.method,
                                 unknown_lang=lang == UNKNOWN, identified=asked.identified, searched=searched,
                                 show=cfg.show,
                                 threshold=rc.answerability_threshold,
                                 not_found_threshold=rc.not_found_threshold)))
    return 0


def _say(line: str) -> None:
    """What loads while a cold ``xqa ask`` waits, on stderr (stdout holds only the answer)."""
    import sys

    print(f"xqa ask: {line}", file=sys.stderr, flush=True)
