"""``xqa eval``: score predictions (official MIA EM/F1), retrieval results, significance, reports.

Examples::

    xqa eval --gold dev.jsonl --predictions preds.json --json scores.json
    xqa eval --gold xor_dev.jsonl mkqa_dev/ --predictions preds/ --mia
    xqa eval --retrieval dense.json scd.json --names dense scd --k 1 5 20 100
    xqa eval --gold dev.jsonl --compare a.json b.json
    xqa eval --gold test_questions/ --predictions preds/ --coverage   # a submission check, no scores
    xqa eval --gold dev.jsonl --sweep 1=p1.json 5=p5.json 20=p20.json --report out/
    xqa eval --selective runs/test runs/test-hidden --plot selective.png   # confidence: AUROC, AURC, ECE
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from xqa.cli_options import add_selection_arguments

    add_selection_arguments(parser)
    e2e = parser.add_argument_group("end-to-end (MIA 2022 official EM / F1)")
    e2e.add_argument("--gold", nargs="+", metavar="PATH",
                     help="gold question files or folders (XOR-TyDi/MIA/MKQA JSONL and the other "
                          "layouts xqa reads); needed by --predictions, --compare and --sweep")
    e2e.add_argument("--predictions", nargs="+", metavar="PATH",
                     help="predictions of one system: JSON objects id -> answer (one file, several "
                          "per-language files or a folder of them), an MIA submission file, or "
                          "JSONL answer records {id, answer}")
    e2e.add_argument("--mode", choices=("official", "lang_aware"), default="official",
                     help="official: segment exactly the codes the MIA scripts know (ja, zh_cn/hk/tw, "
                          "th, km; a bare zh is split on white space); lang_aware: also segment zh")
    e2e.add_argument("--mia", action="store_true",
                     help="score the gold as the MIA 2022 evaluation: XOR-TyDi and MKQA questions "
                          "(source field, else ids <number>_<lang>) as two parts; the MIA score is "
                          "the mean of the two macro averages")
    e2e.add_argument("--coverage", action="store_true",
                     help="check, without scoring, that every --gold question (answers not needed, e.g. "
                          "a test set) has one non-empty string prediction; lists what is missing per "
                          "language and exits 1 if anything is")
    e2e.add_argument("--per-question", action="store_true",
                     help="include every question's EM and F1 in the --json output")

    ret = parser.add_argument_group("retrieval")
    ret.add_argument("--retrieval", nargs="+", metavar="FILE",
                     help="retrieval-result files (JSON list or JSONL, DPR/FiD layout), one per method")
    ret.add_argument("--names", nargs="+", metavar="NAME",
                     help="a name for each --retrieval file (default: the file names)")
    ret.add_argument("--k", nargs="+", type=int, default=[1, 5, 20, 100], metavar="K",
                     help="cut-offs for top-k accuracy, recall@k and MRR@k")
    ret.add_argument("--match", choices=("dpr", "lang_aware"), default="dpr",
                     help="answer matching: DPR's has_answer, or substring matching for ja/zh/th/km/ko")
    ret.add_argument("--default-lang", metavar="CODE",
                     help="language of result records that carry no 'lang' (e.g. DPR's own files)")

    cmp_ = parser.add_argument_group("significance")
    cmp_.add_argument("--compare", nargs=2, metavar=("PRED_A", "PRED_B"),
                      help="paired t-test between two systems' per-question scores on --gold "
                           "(each a prediction file or folder)")
    cmp_.add_argument("--metric", choices=("f1", "em"), default="f1",
                      help="per-question score compared by --compare")

    sel = parser.add_argument_group("selective answering (how well a score tells right answers from wrong)")
    sel.add_argument("--selective", nargs="+", metavar="RECORDS",
                     help="xqa answer records (OUT/records.jsonl or OUT): coverage-accuracy, AURC, ECE and, "
                          "given a --hide-gold run too, AUROC of answerable vs made-unanswerable questions, for "
                          "the calibrated confidence and the fused probability; right = official F1 >= 0.5")
    sel.add_argument("--plot", metavar="PNG",
                     help="--selective: the reliability diagram and coverage-accuracy curve (default: "
                          "selective.png beside the first records file)")
    sel.add_argument("--calibrator", metavar="PATH",
                     help="--selective: score the records' features with this calibrator instead of the "
                          "confidence they carry: a pipeline config (its reader.answerability and threshold) "
                          "or xqa tune answerability's output folder")
    sel.add_argument("--threshold", type=float, default=None,
                     help="--selective: count as shown the answers whose confidence is at least this "
                          "(default: the records' own 'answered' flags, i.e. the config's threshold)")

    rep = parser.add_argument_group("report")
    rep.add_argument("--report", metavar="DIR",
                     help="write DIR/report.md with PNG plots of everything scored in this run")
    rep.add_argument("--sweep", nargs="+", metavar="SPEC",
                     help="EM against the number of passages read: N=PREDICTIONS (file or folder) "
                          "for each N, or a JSON file {\"N\": \"predictions path\"} (paths relative "
                          "to that file); scored on --gold")

    parser.add_argument("--json", metavar="OUT", help="also write every figure as JSON to OUT")


def _coverage(args: argparse.Namespace) -> int:
    """``--coverage``: one non-empty string answer per gold question id (a submission check)."""
    from xqa.artifacts import write_json_atomic
    from xqa.evaluation import inputs, report
    from xqa.evaluation.coverage import coverage

    preds = inputs.load_predictions(args.predictions)
    c = coverage(inputs.load_gold(args.gold), preds)
    print(report.coverage_text(c, len(preds)))
    for line in report.coverage_examples_text(c):
        print(line, file=sys.stderr)
    if args.json:
        write_json_atomic(args.json, {"coverage": c.to_dict()})
    print(report.coverage_verdict(c))
    return 0 if c.complete else 1


def _selective(args: argparse.Namespace) -> int:
    """``--selective``: the calibrated confidence and the fused probability as selective scores."""
    from xqa.artifacts import write_json_atomic
    from xqa.errors import XqaError
    from xqa.evaluation import selective
    from xqa.evaluation.report import selective_text

    records = selective.read_records(args.selective)
    if args.where or args.per_lang:
        raise XqaError("--selective scores whole records files; select the questions when answering them")
    if args.calibrator:
        records = selective.rescore(records, *selective.load_calibrator(args.calibrator))
    e = selective.evaluate_records(records, args.mode, args.threshold)
    if not e.records:
        raise XqaError(f"{' '.join(args.selective)}: no record with a gold answer to score")
    print(selective_text(e))
    plot = Path(args.plot) if args.plot else Path(e.records[0]["_source"].rsplit(":", 1)[0]).parent / "selective.png"
    selective.plot(e.results, plot)
    print(f"\nplot: {plot}")
    if args.json:
        write_json_atomic(args.json, {"selective": {sc.name: sc.to_dict() for sc, _, _ in e.results},
                                      "answers": len(e.records), "answerable": int(e.answerable.sum()),
                                      "right": int(e.right.sum())})
        print(f"figures: {args.json}")
    return 0


def _print_e2e(title: str, scores: Any) -> None:
    from xqa.evaluation.report import end_to_end_text

    print(end_to_end_text(title, scores))
    if scores.n == 0:
        print(f"warning: {title}: no question with a gold answer was scored", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from xqa.artifacts import write_json_atomic
    from xqa.errors import XqaError
    from xqa.evaluation import inputs, mia, report, retrieval, significance

    if args.selective:
        return _selective(args)
    if not (args.predictions or args.retrieval or args.compare or args.sweep):
        raise XqaError("nothing to score: give --predictions, --retrieval, --compare, --sweep or --selective")
    if (args.predictions or args.compare or args.sweep) and not args.gold:
        raise XqaError("--predictions, --compare and --sweep need --gold")
    if args.names and (not args.retrieval or len(args.names) != len(args.retrieval)):
        raise XqaError("--names needs exactly one name per --retrieval file")
    if args.mia and not args.predictions:
        raise XqaError("--mia scores --predictions; give them")
    if args.coverage:
        if not (args.gold and args.predictions):
            raise XqaError("--coverage needs --gold (the questions) and --predictions")
        return _coverage(args)

    out: dict[str, Any] = {}
    to_report: dict[str, Any] = {}  # what --report writes
    gold = inputs.load_gold(args.gold) if args.gold else []
    if args.where or args.per_lang:
        from xqa.cli_options import select_questions

        gold = select_questions(gold, args.where, args.per_lang)

    if args.predictions:
        preds = inputs.load_predictions(args.predictions)
        if args.mia:
            xor_q, mkqa_q = mia.split_mia(gold)
            xor, mkqa = mia.evaluate(xor_q, preds, args.mode), mia.evaluate(mkqa_q, preds, args.mode)
            _print_e2e("XOR-TyDi", xor)
            _print_e2e("MKQA", mkqa)
            combined = mia.mia_score(xor, mkqa)
            print(report.mia_score_text(combined))
            out["mia"] = {"xor_tydi": xor.to_dict(args.per_question),
                          "mkqa": mkqa.to_dict(args.per_question), "score": combined}
            to_report["end_to_end"] = {"XOR-TyDi": xor, "MKQA": mkqa}
        else:
            scores = mia.evaluate(gold, preds, args.mode)
            _print_e2e("end-to-end", scores)
            out["end_to_end"] = scores.to_dict(args.per_question)
            to_report["end_to_end"] = {"predictions": scores}

    if args.retrieval:
        names = args.names or [Path(p).name for p in args.retrieval]
        if len(set(names)) != len(names):
            raise XqaError(f"retrieval method names must differ, got {names}; use --names")
        results = {n: inputs.load_retrieval_results(p, args.default_lang) for n, p in zip(names, args.retrieval)}
        out["retrieval"] = {}
        for name, res in results.items():
            ranks = retrieval.first_answer_ranks(res, args.match)
            scores = retrieval.score_retrieval(res, args.k, args.match, ranks=ranks)
            print(report.retrieval_text(name, scores))
            out["retrieval"][name] = scores.to_dict()
        to_report["retrieval"] = results

    if args.compare:
        a_path, b_path = args.compare
        a = mia.evaluate(gold, inputs.load_predictions([a_path]), args.mode)
        b = mia.evaluate(gold, inputs.load_predictions([b_path]), args.mode)
        test = significance.compare_systems(a, b, args.metric)
        na, nb = Path(a_path).name, Path(b_path).name
        print(report.comparison_text(na, nb, args.metric, test))
        out["compare"] = {"a": a_path, "b": b_path, "metric": args.metric, **test.to_dict()}
        to_report["comparison"] = (na, nb, args.metric, test)

    if args.sweep:
        sweep = {n: mia.evaluate(gold, inputs.load_predictions([p]), args.mode)
                 for n, p in sorted(inputs.parse_sweep(args.sweep).items())}
        print(report.sweep_text(sweep))
        out["sweep"] = {str(n): s.to_dict() for n, s in sweep.items()}
        to_report["sweep"] = sweep

    if args.report:
        path = report.write_report(args.report, ks=args.k, match=args.match, **to_report)
        print(f"\nreport: {path}")
    if args.json:
        write_json_atomic(args.json, out)
        print(f"figures: {args.json}")
    sys.stdout.flush()
    return 0
