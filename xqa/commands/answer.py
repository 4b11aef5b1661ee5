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
    p.add_argument("--abstain", action="store_true",
                   help="write an empty prediction where the calibrated probability that the answer is right "
                        "is below the config's reader.answerability_threshold (the records keep the best "
                        "guess either way; the MIA metric counts an empty answer as wrong)")
    p.add_argument("--hide-gold", action="store_true",
                   help="answer as if the collection lacked each question's own paragraphs (its positive_ids "
                        "and those of its parallel versions, xling.*.positive_ids): the made-unanswerable "
                        "half that xqa tune answerability and xqa eval --selective read")
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


def write_predictions(out: Path, records: Path, order: list[str], abstain: bool = False) -> dict[str, int]:
    """The predictions of ``records`` in ``order``; with ``abstain``, an empty answer where the
    record says the answer is not ``answered`` (below the calibrated threshold)."""
    from xqa.artifacts import write_json_atomic

    by_id = {}
    with open(records, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            by_id[r["id"]] = r

    def shown(r: dict) -> str:
        return "" if abstain and r.get("answered") is False else r["answer"]

    per_lang: dict[str, dict[str, str]] = {}
    for qid in order:
        r = by_id[qid]
        per_lang.setdefault(r["lang"], {})[qid] = shown(r)
    for lang, preds in per_lang.items():
        write_json_atomic(out / "predictions" / f"{lang}.json", preds)
    write_json_atomic(out / "predictions.json", {qid: shown(by_id[qid]) for qid in order})
    return {lang: len(p) for lang, p in per_lang.items()}


def gold_passages(q) -> set[str]:
    """A question's own passages and those of its parallel versions (``positive_ids``,
    ``xling.{lang}.positive_ids``), which ``--hide-gold`` removes from the collection."""
    from xqa.errors import XqaError

    ids = set(q.meta.get("positive_ids") or [])
    for version in (q.meta.get("xling") or {}).values():
        if isinstance(version, dict):
            ids.update(version.get("positive_ids") or [])
    if not ids:
        raise XqaError(f"question {q.id!r} names no positive_ids: --hide-gold needs each question's own "
                       f"passage ids")
    return ids


def answer_lines(pipe, batch: list, args: argparse.Namespace, fuse: bool | None) -> list[str]:
    """One ``records.jsonl`` line per question of ``batch`` (an empty answer for an empty question)."""
    answerable = [q for q in batch if q.question.strip()]
    hide = getattr(args, "hide_gold", False)
    exclude = [gold_passages(q) for q in answerable] if hide else None
    answers = {a.question_id: a for a in pipe.answer(answerable, n_passages=args.n_passages,
                                                      evidence_fusion=fuse, exclude=exclude)} if answerable else {}
    lines = []
    for q in batch:
        a = answers.get(q.id)
        rec = {"id": q.id, "lang": q.lang, "question": q.question, "answer": a.text if a else "",
               "score": a.score if a else 0.0, "confidence": a.confidence if a else None,
               "answered": a.answered if a else False, "gold": list(q.answers)}
        if hide:
            rec["gold_hidden"] = True
        if q.meta.get("crosslingual"):
            rec["crosslingual"] = True
        if a:
            d = a.to_dict()
            rec["candidates"] = d["candidates"]
            rec["evidence"] = d["evidence"][: args.evidence]
            if a.features:
                rec["features"] = a.features
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
    if finished:
        with open(records, encoding="utf-8") as f:
            hidden = bool(json.loads(f.readline()).get("gold_hidden"))
        if hidden != args.hide_gold:
            raise XqaError(f"{records} holds answers {'with' if hidden else 'without'} --hide-gold; resume it "
                           f"{'with' if hidden else 'without'} the flag, or answer into another --out")
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
    counts = write_predictions(out, records, ids, abstain=args.abstain)
    print(f"{len(ids)} predictions → {out / 'predictions'} ({', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))})")
    if args.abstain:
        with open(out / "predictions.json", encoding="utf-8") as f:
            empty = sum(not a for a in json.load(f).values())
        print(f"--abstain: {empty} of {len(ids)} predictions empty (calibrated probability below "
              f"reader.answerability_threshold, or a blank question)")
    return 0
