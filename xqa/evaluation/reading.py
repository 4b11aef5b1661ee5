"""Reading retrieval results for evaluation and training: answer scorers, gold passages,
reader examples and reader outputs.

- :func:`make_scorer` — ``(prediction, answers, lang) -> (EM, F1)``: MIA 2022's official
  scorer, its language-aware variant, or simple normalised EM/F1;
- :func:`is_gold`, :func:`holds_target` — what a passage of a retrieval result holds;
- :func:`load_examples` — Fusion-in-Decoder example dicts (``reader.fid.data``) from a
  retrieval-result file, with the training passages chosen;
- :func:`reader_outputs`, :func:`fusion_set` — a reader's n-best over the results (cached
  as JSONL), and the evidence-fusion tuning set built from them.
"""
from __future__ import annotations

import json
from pathlib import Path

EVAL_MODES = ("official", "lang_aware", "simple")


def make_scorer(mode: str):
    """(prediction, answers, lang) -> (EM, F1): the MIA official scorer, or the simple fallback."""
    from reader.scoring import simple_score

    if mode == "simple":
        return simple_score
    try:
        from xqa.evaluation.mia import score_answer
    except ImportError:  # the segmenters are optional for the reader
        print("xqa.evaluation.mia unavailable: using simple normalized EM/F1")
        return simple_score

    def score(prediction: str, answers, lang: str) -> tuple[float, float]:
        return score_answer(prediction, list(answers), lang, mode=mode)

    return score


def is_gold(result, ctx) -> bool:
    """A passage is gold when the question lists it (``positive_ids``), the retrieval file marks
    it ``has_answer``, or it contains a gold answer (question language or English)."""
    from reader.evidence import normalize_answer, occurs_in

    q = result.question
    if ctx.id in set(q.meta.get("positive_ids") or ()) or ctx.has_answer:
        return True
    passage = normalize_answer(f"{ctx.title} {ctx.text}")
    return any(occurs_in(normalize_answer(a), passage) for a in (*q.answers, *q.answers_en))


def holds_target(result, ctx) -> bool:
    """Does the passage contain the training target (the first answer, question's language)?"""
    from reader.evidence import normalize_answer, occurs_in

    answers = result.question.answers
    return bool(answers) and occurs_in(normalize_answer(answers[0]), normalize_answer(f"{ctx.title} {ctx.text}"))


def load_examples(path: str, n_context: int, limit: int = 0, need_answers: bool = False,
                  contexts: str = "top", pool: int = 0, labels=None) -> list[dict]:
    """Example dicts (``reader.fid.data``) from a retrieval-result file, ctxs in the given order;
    ``contexts="gold"`` makes sure the gold passages among the first ``pool`` are included;
    ``contexts="answer"`` puts passages holding the target first and skips questions without one;
    ``contexts="evidence"`` does the same but skips only questions with no gold passage at all.

    With ``labels`` (:class:`xqa.world.labels.AnswerLabels`) a question whose answer is in none of
    its passages but another name of the answer is (the value as a passage in another language
    writes it) is trained to copy that name: the pipeline writes it in the question's language
    with the same table."""
    from reader.fid.data import example_from_records, select_contexts
    from xqa.errors import XqaError
    from xqa.io import read_results
    from xqa.distributed import main_process

    results = read_results(path)
    if limit:
        results = results[:limit]
    examples, skipped, relabelled = [], 0, 0
    for r in results:
        ctxs = list(r.ctxs)
        if contexts in ("gold", "answer", "evidence"):
            ctxs = ctxs[:pool] if pool else ctxs
            gold = [int(is_gold(r, c)) for c in ctxs]
            if contexts in ("answer", "evidence"):
                gold = [2 if holds_target(r, c) else g for c, g in zip(ctxs, gold)]
                if (2 if contexts == "answer" else 1) > max(gold, default=0):
                    skipped += 1
                    continue
            ctxs = select_contexts(ctxs, n_context, gold)
        ex = example_from_records(r.question, ctxs[:n_context])
        if need_answers and not ex["answers"]:
            continue
        if labels is not None and ex["answers"]:
            relabelled += _copy_target(ex, labels)
        examples.append(ex)
    if skipped and main_process():
        where = f"among its first {pool} passages" if pool else "among its passages"
        what = "holds the answer" if contexts == "answer" else "is gold"
        print(f"{path}: {skipped} of {len(results)} questions skipped: none {where} {what} "
              f"(--train-contexts {contexts})")
    if labels is not None and main_process():
        print(f"{path}: {relabelled} of {len(examples)} questions train on their answer's name in a passage "
              "in another language (--labels)")
    if not examples:
        raise XqaError(f"{path}: no usable questions" + (" with answers" if need_answers else ""))
    return examples


def _copy_target(ex: dict, labels) -> int:
    """Replace ``ex["answers"]`` by the answer's name as one of its passages writes it, when no
    passage holds the answer itself; 1 if replaced."""
    from reader.evidence import normalize_answer, occurs_in

    passages = [normalize_answer(f"{t} {x}") for t, x in zip(ex["titles"], ex["texts"])]
    if any(occurs_in(normalize_answer(a), p) for a in ex["answers"] for p in passages):
        return 0
    names = [[(f, normalize_answer(f)) for f in labels.forms(a)] for a in ex["answers"]]   # once per question
    for p in passages:
        for answer_names in names:
            found = [f for f, key in answer_names if occurs_in(key, p)]
            if found:
                ex["answers"] = [max(found, key=len)]   # the longest: "the Nile" over "Nile"
                return 1
    return 0


def load_results(path: str, limit: int = 0):
    """The retrieval results of ``path`` (the first ``limit``; 0: all); none is an error."""
    from xqa.errors import XqaError
    from xqa.io import read_results

    results = read_results(path)
    results = results[:limit] if limit else results
    if not results:
        raise XqaError(f"{path}: no questions")
    return results


def load_labels(path: str | None):
    """The answer label table of ``path`` (:mod:`xqa.world.labels`), or None."""
    from xqa.world.labels import AnswerLabels

    return AnswerLabels.load(path) if path else None


def beam_key(beams: int, span_beams: int = 0) -> str:
    """Cache-file stem of a beam-search setting (the n-best differs with span candidates)."""
    return f"beam{beams}" + (f".span{span_beams}" if span_beams else "")


def reading_stamp(model: str | Path, results, n_context: int) -> dict[str, str]:
    """What a reading is made of: the model's files (:func:`xqa.artifacts.content_fingerprint`)
    and each question with the passages it reads (its first ``n_context``)."""
    import hashlib

    from xqa.artifacts import content_fingerprint

    read = hashlib.sha256()
    for r in results:
        read.update(json.dumps([r.question.id, r.question.question, [c.id for c in r.ctxs[:n_context]]],
                               ensure_ascii=False).encode("utf-8") + b"\n")
    return {"model": content_fingerprint(model), "read": read.hexdigest()}


def reader_outputs(reader, results, n_context: int, beams: int, n_best: int, batch_size: int,
                   cache: Path | None = None, span_beams: int = 0, stamp: dict | None = None) -> list | None:
    """The reader's output per result (``reader.read`` of its first ``n_context`` passages), read
    from ``cache`` (JSONL, the reader's ``output_from_dict``) when it holds this reading: the same
    ``stamp`` (:func:`reading_stamp`: the same model reading the same passages of the same
    questions; its first line) and these questions. A cache of another reading is read again.

    Under torchrun the processes share the reading and only rank 0 gets the outputs (the
    others get None and should stop there).
    """
    from xqa.artifacts import write_text_atomic
    from xqa.distributed import main_process, map_sharded

    ids = [r.question.id for r in results]
    head = {"reading": stamp or {}}
    if cache is not None and cache.is_file():
        rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines() if line.strip()]
        if rows[:1] == [head] and [r.get("id") for r in rows[1:]] == ids:
            print(f"reader outputs from {cache}")
            return [reader.output_from_dict(r) for r in rows[1:]]
        if main_process():
            print(f"{cache} holds another reading (another model, questions or passages): reading again")
    outputs = map_sharded(lambda part: reader.read([r.question for r in part], [list(r.ctxs[:n_context]) for r in part],
                                                   n_context=n_context, beams=beams, n_best=n_best,
                                                   batch_size=batch_size, progress=main_process(),
                                                   span_beams=span_beams), results)
    if outputs is None:
        return None
    if cache is not None:
        write_text_atomic(cache, json.dumps(head) + "\n" + "".join(
            json.dumps({"id": i, **o.to_dict()}, ensure_ascii=False) + "\n" for i, o in zip(ids, outputs)))
    return outputs


def fusion_set(outputs, results, n_context: int, scorer, labels=None):
    """The evidence-fusion tuning set (``reader.tuning.prepare``) of a reader's outputs."""
    from reader.tuning import prepare

    return prepare(outputs, [r.ctxs[:n_context] for r in results],
                   [r.question.answers for r in results], [r.question.lang for r in results], scorer, labels)
