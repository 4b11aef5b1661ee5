"""``xqa build``: a passage collection (or a folder of documents, cut into passages first) -> BM25,
cross-script BM25, dense and SPAR indexes, a reader and ``OUT/pipeline.json``, for
``xqa ask``/``answer``/``demo --config OUT/pipeline.json``.

Passages: JSONL (``{"id", "title", "text", "lang"}``; ``.gz`` too), DPR TSV (``--lang``) or a
Pyserini JsonCollection folder; or ``--documents``: files cut into passages with their
provenance (:mod:`xqa.documents`; report in ``OUT/passages-report.json``). A bad record fails
with file:line before anything is built; every stage is skipped when built and resumes when
interrupted (run the same command again).
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.build.corpus import Recipe

    d = Recipe()
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--passages", help="passage file (JSONL, .jsonl.gz, DPR .tsv) or JsonCollection folder")
    source.add_argument("--documents", help="a folder of documents (.txt .md .html .pdf .docx, WikiExtractor JSON; "
                                            "read recursively) or one file: cut into passages first (xqa passages)")
    p.add_argument("--out", required=True, help="build folder (pipeline.json and every index)")
    p.add_argument("--lang", help="language of passages that carry none (DPR TSV, JsonCollection); with --documents: "
                                  "of every document (default: identified per document)")
    p.add_argument("--dev", help="questions with answers to tune the fusion weights on (α, μ, w, β, γ); "
                                 "without: the default recipe's weights")
    p.add_argument("--reader", help="reader to use: a span or FiD reader folder, or a packed span reader "
                                    "(default: the shipped span reader, xqa/models/span-reader)")
    p.add_argument("--method", default=d.method, help="the pipeline's retrieval method")
    p.add_argument("--k", type=int, default=d.k, help="passages retrieved per question")
    p.add_argument("--n-passages", type=int, default=d.n_passages, help="passages the reader reads")
    p.add_argument("--dense-max-length", type=int, default=d.dense_max_length,
                   help="passage tokens the dense encoder reads")
    p.add_argument("--lexical-steps", type=int, default=d.lexical_steps, help="training steps of Λ (SPAR)")
    p.add_argument("--precision", choices=("auto", "int8", "fp32", "bf16"), default=d.precision,
                   help="the encoder on CPU: auto builds its int8 runtime, checks it against fp32 on real "
                        "text and uses the fastest that passes; fp32/bf16 skip the int8 runtime")
    p.add_argument("--dhr-slices", type=int, default=d.dhr_slices, metavar="M",
                   help="also build a DHR index (densified BM25 over e5 pieces in M slices + the dense "
                        "vectors, one index; methods dlr, dhr); 0: none")
    p.add_argument("--pieces", action="store_true", help="also build a BM25 index over e5 pieces (method pieces)")
    p.add_argument("--bm25-aug", metavar="MODEL", default=d.bm25_aug,
                   help="a learned BM25 query augmentation (xqa train bm25-aug) for method bm25-aug; "
                        "builds the pieces index it searches")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    from xqa.documents.options import add_document_arguments

    add_document_arguments(p.add_argument_group("with --documents"))


def run(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from xqa.build.corpus import CorpusBuild, Recipe, shipped_answerability
    from xqa.errors import XqaError
    from xqa.methods import index_kind, is_method, method_names, needs

    if not is_method(args.method):
        raise XqaError(f"--method {args.method!r} is not one of {', '.join(method_names())}")
    if args.bm25_aug and not os.path.isdir(args.bm25_aug):
        raise XqaError(f"--bm25-aug {args.bm25_aug}: no such model folder (xqa train bm25-aug writes OUT/best)")
    recipe = Recipe(method=args.method, k=args.k, n_passages=args.n_passages,
                    dense_max_length=args.dense_max_length, lexical_steps=args.lexical_steps,
                    precision=args.precision, dhr_slices=args.dhr_slices, pieces=args.pieces,
                    bm25_aug=os.path.abspath(args.bm25_aug) if args.bm25_aug else "",
                    answerability=shipped_answerability() if args.reader is None else {})
    split = None
    if args.documents:
        from xqa.documents.split import make_split

        make_split(args.split, max_tokens=args.max_tokens, overlap=args.overlap)   # checked before anything is built
        split = {"split": args.split, "max_tokens": args.max_tokens, "overlap": args.overlap, "strict": args.strict}
    build = CorpusBuild(args.passages or args.documents, args.out, lang=args.lang, dev=args.dev, reader=args.reader,
                        recipe=recipe, threads=args.threads, documents=split)
    missing = [kind for kind in map(index_kind, needs(args.method)) if kind.built_value(build) is None]
    if missing:
        hints = " and ".join(k.build_hint for k in missing if k.build_hint)
        raise XqaError(f"--method {args.method} searches {' and '.join(f'a {k.name} index' for k in missing)}, "
                       f"which this build does not make" + (f": add {hints}" if hints else ""))
    build.run()
    return 0
