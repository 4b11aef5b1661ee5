"""``xqa report gold``: a reader's EM/F1 given each question's own paragraph, on the real
evaluation-only sets (``../shared/data``).

Sets: MLQA dev's 7 same-language pairs and (``--crosslingual``) its 42 cross-lingual pairs
(question in one language, paragraph in another), JaQuAD dev, JSQuAD valid, iApp Wiki QA test,
ARCD test, CMRC 2018 dev, DRCD dev and SQuAD v1.1 dev; or (``--file``) a user's own QA files in
``xqa data own``'s layouts, checked as that command checks them. Each question is read with its gold
paragraph alone; the answer is the reader's own (an extractive reader's best span). Two scores, each the maximum over the
gold answers, in the paragraph's language:

- EM/F1: the MIA 2022 rules in their language-aware form (``lang_aware``: a bare ``zh``
  segmented by jieba too; xqa's end-to-end reports score the official form, where it is one
  string);
- script EM/F1: the MLQA / SQuAD v1.1 evaluation scripts' rules (:mod:`xqa.evaluation.mlqa`),
  as published extractive readers report them.
"""
from __future__ import annotations

import argparse
import random

SINGLE_SETS = ("jaquad-dev", "jsquad-valid", "iapp-test", "arcd-test", "cmrc-dev", "drcd-dev", "squad-dev")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.reader_artifacts import add_base_argument

    p.add_argument("--model", required=True,
                   help="reader folder (any reader family's, or its training run); a packed reader or a run of "
                        "xqa train reader --kit with --base")
    add_base_argument(p)
    p.add_argument("--data", default=None, help="the real QA sets folder (default: $XQA_DATA or ../shared/data)")
    p.add_argument("--limit", type=int, default=500, help="questions per set or pair, sampled by --seed (0: all)")
    p.add_argument("--crosslingual", action="store_true", help="also MLQA's 42 cross-lingual pairs")
    p.add_argument("--cross-limit", type=int, default=100, help="questions per cross-lingual pair")
    p.add_argument("--sets", nargs="*", default=None, help=f"only these (mlqa, {', '.join(SINGLE_SETS)})")
    p.add_argument("--file", nargs="+", default=None, metavar="FILE[:LANG]",
                   help="score these QA files of your own instead (xqa data own's layouts: SQuAD JSON or JSONL "
                        "with question, answers, context; ':LANG' or --lang gives a file's language); "
                        "no --data needed")
    p.add_argument("--lang", default=None,
                   help="with --file: language of the questions whose record and file give none")
    p.add_argument("--seed", type=int, default=0, help="seed of the --limit and --cross-limit samples")
    p.add_argument("--batch-size", type=int, default=16, help="rows per model batch")
    p.add_argument("--json", help="write the scores (and each question's prediction) to this JSON file")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "int8"), default=None,
                   help="CPU precision of the reader (default: its own setting; int8 needs its int8 runtime)")


def _questions(path, limit: int, seed: int, qlang: str, clang: str) -> list[tuple]:
    from xqa.data.sets import clean_context, squad_paragraphs

    rows = []
    for para in squad_paragraphs(path):
        text = clean_context(para.context)
        for qa in para.qas:
            answers = [clean_context(t) for t, _ in qa.answers]
            if answers:
                rows.append((qa.id, qa.question, answers, para.title, text, qlang, clang))
    if limit and len(rows) > limit:
        rows = random.Random(seed).sample(rows, limit)
    return rows


def _own_name(spec: str) -> str:
    from xqa.io import split_spec

    return split_spec(spec)[0].name


def _own_questions(spec: str, lang: str | None, limit: int, seed: int) -> list[tuple]:
    """The rows of a user's QA file (:mod:`xqa.data.own`), checked as ``xqa data own`` checks it."""
    from xqa.data.own import read_own

    rows = [(q.id, q.question, q.answers, q.title, q.context, q.lang, q.lang) for q in read_own(spec, lang)]
    if limit and len(rows) > limit:
        rows = random.Random(seed).sample(rows, limit)
    return rows


def run(args: argparse.Namespace) -> int:
    import time

    import torch

    from xqa.data.sets import MLQA_LANGS, SETS, data_root, mlqa_file
    from xqa.evaluation import mlqa
    from xqa.evaluation.mia import score_answer
    from xqa.pipeline import load_reader
    from xqa.records import Context, Question

    if args.threads:
        torch.set_num_threads(args.threads)
    root = data_root(args.data) if not args.file else None
    from xqa.reader_artifacts import readable_reader

    reader = load_reader(readable_reader(args.model, args.base, log=lambda line: print(line, flush=True)))
    timed = hasattr(reader, "cpu_precision")   # a reader whose CPU precision is a setting
    if args.precision:
        if not timed:
            raise SystemExit(f"--precision: the {reader.family} reader has no CPU precision setting")
        reader.settings.precision = args.precision
    if timed:
        print(f"reading in {reader.cpu_precision()}", flush=True)
    groups: list[tuple[str, list[tuple]]] = []
    want = set(args.sets) if args.sets else None
    if args.file:
        want = set()
        groups += [(_own_name(spec), _own_questions(spec, args.lang, args.limit, args.seed)) for spec in args.file]
    if want is None or "mlqa" in want:
        for c in MLQA_LANGS:
            groups.append((f"mlqa {c}-{c}", _questions(mlqa_file(root, c, c), args.limit, args.seed, c, c)))
        if args.crosslingual:
            for c in MLQA_LANGS:
                for q in MLQA_LANGS:
                    if c != q:
                        groups.append((f"mlqa {c}-{q}", _questions(mlqa_file(root, c, q), args.cross_limit,
                                                                   args.seed, q, c)))
    for name in SINGLE_SETS:
        if want is None or name in want:
            s = SETS[name]
            groups.append((name, _questions(s.file(root), args.limit, args.seed, s.lang, s.lang)))
    table, details = [], {}
    t0 = time.perf_counter()
    n_read = 0
    for name, rows in groups:
        qs = [Question(id=r[0], question=r[1], lang=r[5]) for r in rows]
        ctxs = [[Context(id=r[0], title=r[3], text=r[4], lang=r[6], score=0.0, source="gold")] for r in rows]
        outs = reader.read(qs, ctxs, n_best=1, batch_size=args.batch_size)
        em = f1 = sem = sf1 = 0.0
        preds = {}
        for r, out in zip(rows, outs):
            # the answer is scored in its paragraph's language (MLQA's answers are spans of it)
            lang = "zh_cn" if r[6] == "zh" else r[6]
            e, f = score_answer(out.text, r[2], lang, mode="lang_aware")
            em, f1 = em + e, f1 + f
            e, f = mlqa.score(out.text, r[2], r[6])
            sem, sf1 = sem + e, sf1 + f
            preds[r[0]] = out.text
        n = max(1, len(rows))
        n_read += len(rows)
        table.append({"set": name, "question_lang": rows[0][5] if rows else "", "context_lang": rows[0][6] if rows else "",
                      "n": len(rows), "em": em / n, "f1": f1 / n, "script_em": sem / n, "script_f1": sf1 / n})
        details[name] = preds
        print(f"{name:<16} {len(rows):>5}  EM {em / n:.3f}  F1 {f1 / n:.3f}  script EM {sem / n:.3f}  "
              f"script F1 {sf1 / n:.3f}", flush=True)
    same = [t for t in table if t["set"].startswith("mlqa") and t["question_lang"] == t["context_lang"]]
    cross = [t for t in table if t["set"].startswith("mlqa") and t["question_lang"] != t["context_lang"]]
    summary = {}
    for part, group in (("same_language", same), ("crosslingual", cross)):
        for key in ("f1", "em", "script_f1", "script_em"):
            if group:
                summary[f"mlqa_{part}_{key}"] = sum(t[key] for t in group) / len(group)
    seconds = time.perf_counter() - t0
    summary["questions"] = n_read
    summary["seconds"] = round(seconds, 1)
    for k, v in summary.items():
        print(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
    if args.json:
        from xqa.artifacts import write_json_atomic

        write_json_atomic(args.json, {"model": str(args.model), "limit": args.limit, "seed": args.seed,
                                      "mode": "lang_aware", "script_mode": "mlqa", "summary": summary, "table": table,
                                      "predictions": details})
    return 0
