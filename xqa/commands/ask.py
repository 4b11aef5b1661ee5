"""``xqa ask``: answer one question and show the evidence."""
from __future__ import annotations

import argparse

from xqa.cli_options import add_pipeline_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", help="the question, in any language")
    p.add_argument("--lang", default="auto",
                   help="the question's language code, 'auto' to identify it, or 'und' (unknown: BM25 searches "
                        "every language's index, as when the language is not identified among the pipeline's)")
    p.add_argument("--n-passages", type=int, default=None, help="passages given to the reader")
    p.add_argument("--show", type=int, default=5, help="evidence passages to print")
    p.add_argument("--json", action="store_true", help="print the answer record as JSON")
    add_pipeline_arguments(p)


def run(args: argparse.Namespace) -> int:
    import json

    from xqa.cli_options import load_pipeline
    from xqa.errors import XqaError
    from xqa.langid import UNKNOWN
    from xqa.rendering import answer_lines

    text = args.question.strip()
    if not text:
        raise XqaError("the question is empty")
    pipe = load_pipeline(args)
    asked = pipe.ask(text, args.lang, n_passages=args.n_passages)
    if args.json:
        print(json.dumps(asked.answer.to_dict(), ensure_ascii=False, indent=1))
        return 0
    lang = asked.question.lang
    print("\n".join(answer_lines(asked.answer, text, lang, args.method or pipe.config.retrieval.method,
                                 unknown_lang=lang == UNKNOWN, show=args.show,
                                 threshold=pipe.config.reader.answerability_threshold)))
    return 0
