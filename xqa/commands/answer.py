"""``xqa answer``: answer a whole evaluation set — retrieve, read, fuse evidence.

Resumable: every finished batch is appended to ``OUT/records.jsonl`` (flushed
and synced), and a rerun skips the questions already there, so a killed run
continues where it stopped with nothing duplicated or lost. When all questions
are answered the predictions are written in the MIA submission layout: one
JSON object per language mapping id → answer (``OUT/predictions/{lang}.json``),
and all of them in ``OUT/predictions.json``.

Under ``torchrun --nproc-per-node N -m xqa.cli answer ...`` N processes share
every round of questions (torchrun gives each one CPU thread); rank 0 writes.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
from pathlib import Path

from xqa.commands._common import add_pipeline_arguments, add_selection_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", nargs="+", required=True,
                   help="question files (XOR/MIA/MKQA JSONL, SQuAD JSON, NQ-open JSONL)")
    p.add_argument("--lang", default=None, help="language of questions whose records carry none")
    p.add_argument("--out", required=True, help="output folder (records.jsonl, predictions/)")
    p.add_argument("--batch-size", type=int, default=16, help="questions per batch")
    p.add_argument("--n-passages", type=int, default=None, help="passages given to the reader")
    p.add_argument("--no-evidence-fusion", action="store_true",
                   help="answer with the reader's own best candidate (for comparison)")
    p.add_argument("--evidence", type=int, default=5, help="evidence passages kept per record")
    add_pipeline_arguments(p)
    add_selection_arguments(p)


def done_ids(records: Path) -> set[str]:
    """Ids already answered; a torn last line (a kill mid-write, a full disk) is cut off, and so is
    a last line without its newline, which the next record would otherwise be glued to."""
    if not records.is_file():
        return set()
    ids, good = set(), 0
    with open(records, "rb") as f:
        for line in f:
            try:
                if not line.endswith(b"\n"):
                    break
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
                break
            good += len(line)
    if good != records.stat().st_size:
        with open(records, "r+b") as f:
            f.truncate(good)
    return ids


def write_predictions(out: Path, records: Path, order: list[str]) -> dict[str, int]:
    from xqa.artifacts import write_json_atomic

    by_id = {}
    with open(records, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            by_id[r["id"]] = r
    per_lang: dict[str, dict[str, str]] = {}
    for qid in order:
        r = by_id[qid]
        per_lang.setdefault(r["lang"], {})[qid] = r["answer"]
    for lang, preds in per_lang.items():
        write_json_atomic(out / "predictions" / f"{lang}.json", preds)
    write_json_atomic(out / "predictions.json", {qid: by_id[qid]["answer"] for qid in order})
    return {lang: len(p) for lang, p in per_lang.items()}


def answer_lines(pipe, batch: list, args: argparse.Namespace, fuse: bool | None) -> list[str]:
    """One ``records.jsonl`` line per question of ``batch`` (an empty answer for an empty question)."""
    answerable = [q for q in batch if q.question.strip()]
    answers = {a.question_id: a for a in pipe.answer(answerable, n_passages=args.n_passages,
                                                      evidence_fusion=fuse)} if answerable else {}
    lines = []
    for q in batch:
        a = answers.get(q.id)
        rec = {"id": q.id, "lang": q.lang, "question": q.question, "answer": a.text if a else "",
               "score": a.score if a else 0.0, "gold": list(q.answers)}
        if a:
            d = a.to_dict()
            rec["candidates"] = d["candidates"]
            rec["evidence"] = d["evidence"][: args.evidence]
        lines.append(json.dumps(rec, ensure_ascii=False) + "\n")
    return lines


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from xqa.commands._common import load_pipeline, read_question_files
    from xqa.errors import XqaError
    from xqa.training import init_distributed, main_process, map_sharded

    questions = read_question_files(args.questions, args.lang, args.where, args.per_lang)
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise XqaError(f"question id {dup!r} occurs more than once in {args.questions}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = out / "records.jsonl"
    finished = done_ids(records)
    todo = [q for q in questions if q.id not in finished]
    if finished and main_process():
        print(f"resuming: {len(finished)} of {len(questions)} questions already answered")
    info = init_distributed()  # under torchrun: join the job (and on GPUs take this process's own) before loading
    pipe = load_pipeline(args) if todo else None
    fuse = False if args.no_evidence_fusion else None
    # Under torchrun each process answers a strided share of every round of world x batch-size
    # questions; rank 0 gathers the records, in order, and alone writes them.
    main = info.main
    step = args.batch_size * info.processes
    with (open(records, "a", encoding="utf-8") if main else contextlib.nullcontext()) as f, \
            tqdm(total=len(questions), initial=len(questions) - len(todo), desc="answer", unit="q",
                 disable=not main) as bar:
        for i in range(0, len(todo), step):
            batch = todo[i:i + step]
            lines = map_sharded(lambda share: answer_lines(pipe, share, args, fuse), batch)
            if lines is None:
                continue
            f.write("".join(lines))
            f.flush()
            os.fsync(f.fileno())
            bar.update(len(batch))
    if not main:
        return 0
    counts = write_predictions(out, records, ids)
    print(f"{len(ids)} predictions → {out / 'predictions'} ({', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))})")
    return 0
