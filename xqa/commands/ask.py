"""``xqa ask``: answer one question and show the evidence."""
from __future__ import annotations

import argparse

from xqa.cli_options import add_pipeline_arguments

NBEST_SHOWN = 10  # candidates printed on the n-best line
NO_ANSWER = "no answer found in this collection"


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
    import textwrap

    from xqa.cli_options import load_pipeline
    from xqa.errors import XqaError
    from xqa.langid import UNKNOWN
    from xqa.pipeline import FALLBACK_SUFFIX

    text = args.question.strip()
    if not text:
        raise XqaError("the question is empty")
    pipe = load_pipeline(args)
    asked = pipe.ask(text, args.lang, n_passages=args.n_passages)
    ans, lang = asked.answer, asked.question.lang
    if args.json:
        print(json.dumps(ans.to_dict(), ensure_ascii=False, indent=1))
        return 0
    print(f"question ({lang}{': not identified, every BM25 index searched' if lang == UNKNOWN else ''}): {text}")
    method = args.method or pipe.config.retrieval.method
    written = ans.candidates[0].written if ans.candidates else ""
    span_lang = ans.candidates[0].lang if ans.candidates else ""
    mark = f" [{span_lang}: as written in a passage in that language]" if span_lang and span_lang != lang else ""
    copied = f"; the reader copied {written!r}, written in the question's language by the label table" if written else ""
    if ans.confidence is None:
        print(f"answer: {ans.text or '(empty)'}{mark}    (p = {ans.score:.3f}, retrieval: {method}{copied})")
    else:
        how = (f"P(right) = {ans.confidence:.2f} calibrated, fused p = {ans.score:.3f}, retrieval: {method}"
               f"{copied}")
        if ans.answered:
            print(f"answer: {ans.text or '(empty)'}{mark}    ({how})")
        else:
            threshold = pipe.config.reader.answerability_threshold
            print(f"answer: {NO_ANSWER} (P(right) {ans.confidence:.2f} < threshold {threshold:.2f})")
            print(f"best guess: {ans.text or '(empty)'}{mark}    ({how})")
    if len(ans.candidates) > 1:
        # a pointer-generator reader reads ~60 candidates; the rest are in --json
        shown, rest = ans.candidates[:NBEST_SHOWN], len(ans.candidates) - NBEST_SHOWN
        print("n-best: " + " | ".join(f"{c.text or '(empty)'}{f' ← {c.written}' if c.written else ''} ({c.score:.3f})"
                                      for c in shown) + (f" | … {rest} more (--json)" if rest > 0 else ""))
    print("evidence:")
    if not ans.evidence:
        # BM25-based methods find nothing when no term of the question is in any passage
        print(f"    none: {method} retrieved no passage, so the answer is the reader's guess without "
              "evidence (another --method, e.g. dense, always retrieves)")
    elif ans.evidence[0].context.source.endswith(FALLBACK_SUFFIX):
        fallback = ans.evidence[0].context.source.removesuffix(FALLBACK_SUFFIX)
        print(f"    ({method} retrieved no passage; these come from the {fallback} fallback)")
    for i, e in enumerate(ans.evidence[: args.show], 1):
        c = e.context
        print(f" {i}. [{c.lang}] {c.title}  source={c.source} score={c.score:.3f} relevance={e.relevance:.3f}")
        print(textwrap.indent(textwrap.fill(c.text, 100), "    "))
    return 0
