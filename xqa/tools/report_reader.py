"""``xqa report reader``: EM/F1 of greedy, beam and evidence fusion per language.

Evidence fusion's β, γ, ε are tuned on ``--dev`` (or read from ``--fusion``)
and applied to ``--test``. Scores are split by language and by whether the
question is cross-lingual (its ``crosslingual`` field, as the embedded world
writes it; questions without the field count as same-language). Writes a
Markdown report (``--out``) and the numbers beside it as JSON.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

METHODS = ("greedy", "beam", "fusion")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.cli_options import add_reading_arguments
    from xqa.reader_artifacts import add_base_argument

    p.add_argument("--model", required=True, help="a FiD reader: artifact, training run folder, or a packed FiD "
                                                  "or a run of xqa train reader --family fid --kit with --base"
                                                  "")
    add_base_argument(p)
    p.add_argument("--test", required=True, help="test retrieval results with answers (FILE:LANG: the language "
                                                 "of records without one)")
    p.add_argument("--dev", help="dev retrieval results to tune fusion on (unless --fusion; FILE:LANG too)")
    p.add_argument("--fusion", help="tuned fusion JSON (xqa tune fusion) instead of tuning on --dev")
    p.add_argument("--out", required=True, help="Markdown report path (numbers go to the same name .json)")
    add_reading_arguments(p)


def _group_scores(rows: list[dict]) -> dict:
    """Mean EM/F1 per method for a list of scored rows."""
    out: dict = {"n": len(rows)}
    for m in METHODS:
        out[m] = {"em": sum(r[m][0] for r in rows) / max(1, len(rows)),
                  "f1": sum(r[m][1] for r in rows) / max(1, len(rows))}
    return out


def summarize(rows: list[dict]) -> dict:
    """Overall, same-language vs cross-lingual, and per (language, setting) scores."""
    by_setting: dict[str, list[dict]] = defaultdict(list)
    by_lang: dict[tuple[str, str], list[dict]] = defaultdict(list)
    langs: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        setting = "cross" if r["crosslingual"] else "same"
        by_setting[setting].append(r)
        by_lang[(r["lang"], setting)].append(r)
        langs[r["lang"]].append(r)
    macro = {m: {k: sum(_group_scores(v)[m][k] for v in langs.values()) / max(1, len(langs))
                 for k in ("em", "f1")} for m in METHODS}
    return {"overall": _group_scores(rows), "macro": macro,
            "setting": {s: _group_scores(v) for s, v in sorted(by_setting.items())},
            "language": {f"{lang}/{s}": _group_scores(v) for (lang, s), v in sorted(by_lang.items())}}


def _speed(meta: dict) -> str:
    if meta["greedy_q_per_s"] is None:
        return "Reading speed: not measured (reader outputs from the cache)."
    return f"Reading speed: {meta['greedy_q_per_s']:.1f} q/s greedy, {meta['beam_q_per_s']:.1f} q/s beam."


def _spans(meta: dict) -> str:
    n = meta.get("span_beams", 0)
    return (f" + {n} span-constrained candidates (the beam columns rank the merged n-best by the reader alone)"
            if n else "")


def markdown(summary: dict, fusion: dict, meta: dict) -> str:
    f = lambda x: f"{x:.3f}"
    lines = [f"# Reader report: {meta['model']}", "",
             (f"Test: `{meta['test']}` ({summary['overall']['n']} questions), {meta['n_context']} passages, "
             f"beam {meta['beams']} / n-best {meta['n_best']}{_spans(meta)}, EM/F1 mode `{meta['eval_mode']}`"
             + (f"; answers copied in another language are written in the question's by `{meta['labels']}`"
                if meta.get("labels") else "") + ". "
             f"Fusion: β={fusion['beta']:.4g}, γ={fusion['gamma']:.4g}, ε={fusion['miss']:.3g} "
             f"(tuned on dev: F1 {fusion.get('dev_f1', float('nan')):.3f}, "
             f"reader alone {fusion.get('reader_only_f1', float('nan')):.3f}). "
             + _speed(meta)), "",
             "| | " + " | ".join(f"{m} EM | {m} F1" for m in METHODS) + " |",
             "|---|" + "---:|" * (2 * len(METHODS))]

    def row(name: str, s: dict) -> str:
        return f"| {name} | " + " | ".join(f"{f(s[m]['em'])} | {f(s[m]['f1'])}" for m in METHODS) + " |"

    lines.append(row(f"all ({summary['overall']['n']})", summary["overall"]))
    lines.append("| macro over languages | " + " | ".join(
        f"{f(summary['macro'][m]['em'])} | {f(summary['macro'][m]['f1'])}" for m in METHODS) + " |")
    for s, v in summary["setting"].items():
        lines.append(row(f"{'cross-lingual' if s == 'cross' else 'same-language'} ({v['n']})", v))
    lines += ["", "Per language (same-language / cross-lingual questions):", "",
              "| language | n | " + " | ".join(f"{m} EM | {m} F1" for m in METHODS) + " |",
              "|---|---:|" + "---:|" * (2 * len(METHODS))]
    for key, v in summary["language"].items():
        lines.append(f"| {key} | {v['n']} | " + " | ".join(
            f"{f(v[m]['em'])} | {f(v[m]['f1'])}" for m in METHODS) + " |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    import torch

    from reader.fid.inference import FiDReader
    from reader.tuning import choose, params_from, tune_fusion
    from xqa.artifacts import write_json_atomic, write_text_atomic
    from xqa.evaluation.reading import make_scorer
    from xqa.evaluation.reading import beam_key, fusion_set, load_labels, load_results, reader_outputs, reading_stamp
    from xqa.errors import XqaError
    from xqa.distributed import init_distributed, main_process

    if args.threads:
        torch.set_num_threads(args.threads)
    init_distributed()  # under torchrun: join the job (and on GPUs take this process's own) before loading
    if not (args.fusion or args.dev):
        raise XqaError("give --dev to tune evidence fusion, or --fusion with tuned weights")
    scorer = make_scorer(args.eval_mode)
    labels = load_labels(args.labels)
    from xqa.reader_artifacts import readable_reader

    folder = readable_reader(args.model, args.base, log=lambda line: print(line, flush=True))
    reader = FiDReader.load(folder)
    n_context = args.n_context or reader.n_context
    cache = Path(args.cache) if args.cache else None
    if args.fusion:
        fusion = json.loads(Path(args.fusion).read_text(encoding="utf-8"))
    else:
        dev = [r for r in load_results(args.dev, args.limit) if r.question.answers]
        dev_out = reader_outputs(reader, dev, n_context, args.beams, args.n_best, args.batch_size,
                                 cache / f"dev.{beam_key(args.beams, args.span_beams)}.jsonl" if cache else None,
                                 args.span_beams, reading_stamp(folder, dev, n_context) if cache else None)
        # under torchrun the processes share the reading; rank 0 alone tunes and reports
        fusion = (tune_fusion(fusion_set(dev_out, dev, n_context, scorer, labels), progress=True)
                  if main_process() else None)
    test = [r for r in load_results(args.test, args.limit) if r.question.answers]
    stamp = reading_stamp(folder, test, n_context) if cache else None
    cached = bool(cache) and (cache / "test.greedy.jsonl").is_file()  # then speeds are not measured
    t0 = time.perf_counter()
    greedy = reader_outputs(reader, test, n_context, 1, 1, args.batch_size,
                            cache / "test.greedy.jsonl" if cache else None, stamp=stamp)
    t1 = time.perf_counter()
    beam = reader_outputs(reader, test, n_context, args.beams, args.n_best, args.batch_size,
                          cache / f"test.{beam_key(args.beams, args.span_beams)}.jsonl" if cache else None,
                          args.span_beams, stamp)
    t2 = time.perf_counter()
    if not main_process():
        return 0
    packed = fusion_set(beam, test, n_context, scorer, labels)
    picked = choose(packed, params_from(fusion))
    shown = labels.shown if labels is not None else (lambda text, lang: text)
    rows = []
    for q, (r, g, b) in enumerate(zip(test, greedy, beam)):
        fused = b.candidates[picked[q]][0] if b.candidates else ""
        lang = r.question.lang
        preds = {"greedy": shown(g.text, lang), "beam": shown(b.text, lang), "fusion": shown(fused, lang)}
        row = {"id": r.question.id, "lang": r.question.lang,
               "crosslingual": bool(r.question.meta.get("crosslingual", False)),
               "answers": list(r.question.answers), "predictions": preds}
        for m, text in preds.items():
            row[m] = scorer(text, r.question.answers, r.question.lang)
        rows.append(row)
    summary = summarize(rows)
    meta = {"model": str(args.model), "test": str(args.test), "n_context": n_context, "beams": args.beams,
            "n_best": args.n_best, "span_beams": args.span_beams, "eval_mode": args.eval_mode, "labels": args.labels,
            "greedy_q_per_s": None if cached else len(test) / max(t1 - t0, 1e-9),
            "beam_q_per_s": None if cached else len(test) / max(t2 - t1, 1e-9)}
    out = Path(args.out)
    write_text_atomic(out, markdown(summary, fusion, meta))
    write_json_atomic(out.with_suffix(".json"), {"meta": meta, "fusion": fusion, "summary": summary})
    print(markdown(summary, fusion, meta))
    print(f"report written to {out} and {out.with_suffix('.json')}")
    return 0
