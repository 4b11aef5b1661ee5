"""``xqa diagnose reading``: the reader alone, given the passage that holds the answer.

End-to-end scores mix two failures: the evidence was not retrieved, or the reader
did not read it. This diagnosis removes the first. For each question it keeps one
passage from the retrieval results, the first (in fused order) that is listed
evidence (``positive_ids`` / ``has_answer``) and contains the target answer (the
question's first answer) — or, for questions that list no evidence, the first
that contains it — and reads it alone, greedily (or, with ``--span-beams K``, as the
pipeline reads: beam search plus K passage-span candidates, which a reader
trained with ``--copy-attention`` starts where its copy head points, and the
best-scored candidate kept). Reported per language and per
``relation`` (when the questions carry one, as the embedded world's do):

- EM / F1 (``--eval-mode``);
- ``copied``: share of answers that occur in the passage (the reader copied a span,
  right or wrong);
- the target's cross-entropy at its first token and over all its tokens
  (teacher-forced): a first-token CE near log(#candidates of the type) means the
  reader does not know *which* span is asked for.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.reader_artifacts import add_base_argument

    p.add_argument("--model", required=True, help="a FiD reader: artifact, training run folder, or a packed FiD "
                                                  "or a run of xqa train reader --family fid --kit with --base"
                                                  " (the span reader given its paragraph: xqa report gold)")
    add_base_argument(p)
    p.add_argument("--results", required=True, help="retrieval results with answers (JSON list or JSONL; "
                                                    "FILE:LANG: the language of records without one)")
    p.add_argument("--limit", type=int, default=400, help="questions with such a passage to read (0: all)")
    p.add_argument("--batch-size", type=int, default=16, help="questions per batch")
    p.add_argument("--span-beams", type=int, default=0,
                   help="also search K passage-span candidates (with 4 free beams) and keep the best-scored "
                        "answer (0: greedy)")
    p.add_argument("--eval-mode", choices=["official", "lang_aware", "simple"], default="official",
                   help="EM/F1: MIA official, its language-aware variant, or simple normalized")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    p.add_argument("--out", help="also write the numbers to this JSON file")


def evidence_passage(result):
    """The passage to read for ``result``, or None (see the module docstring)."""
    from xqa.evaluation.reading import holds_target

    listed = set(result.question.meta.get("positive_ids") or ())
    marks = listed or any(c.has_answer for c in result.ctxs)
    for ctx in result.ctxs:
        if holds_target(result, ctx) and (not marks or ctx.id in listed or ctx.has_answer):
            return ctx
    return None


def target_ce(reader, examples) -> list[tuple[float, float]]:
    """(first-token CE, mean CE over the target's tokens incl. </s>) per example, teacher-forced."""
    import torch

    from reader.fid.data import encode_answers, encode_passages

    batch = encode_passages(reader.tokenizer, examples, 1, reader.max_length)
    labels = encode_answers(reader.tokenizer, [ex["answers"][0] for ex in examples], reader.max_answer_len)
    with torch.no_grad():
        dec = reader.model.t5.prepare_decoder_input_ids_from_labels(labels=labels)   # logits of every position
        out = reader.model(batch["input_ids"], batch["attention_mask"], batch["passage_mask"], decoder_input_ids=dec)
    logp = out.logits.float().log_softmax(-1)
    mask = labels != -100
    ce = -logp.gather(-1, labels.clamp(min=0)[:, :, None]).squeeze(-1) * mask     # [B, T]
    return [(float(ce[b, 0]), float(ce[b].sum() / mask[b].sum())) for b in range(len(examples))]


def run(args: argparse.Namespace) -> int:
    import torch

    from reader.fid.data import example_from_records
    from reader.evidence import normalize_answer, occurs_in
    from reader.fid.inference import FiDReader
    from xqa.evaluation.reading import make_scorer
    from xqa.evaluation.reading import load_results
    from xqa.errors import XqaError

    if args.threads:
        torch.set_num_threads(args.threads)
    from xqa.reader_artifacts import readable_reader

    reader = FiDReader.load(readable_reader(args.model, args.base, log=lambda line: print(line, flush=True)))
    scorer = make_scorer(args.eval_mode)
    picked, skipped = [], 0
    for r in load_results(args.results):
        if not r.question.answers:
            continue
        ctx = evidence_passage(r)
        if ctx is None:
            skipped += 1
            continue
        picked.append((r, example_from_records(r.question, [ctx])))
        if args.limit and len(picked) >= args.limit:
            break
    if not picked:
        raise XqaError(f"{args.results}: no question has a passage that holds its answer")
    print(f"{len(picked)} questions read with their evidence passage "
          f"({skipped} skipped: no passage holds the answer)")
    examples = [ex for _, ex in picked]
    beams = 4 if args.span_beams else 1
    outs = reader.read_examples(examples, n_context=1, beams=beams, n_best=beams, batch_size=args.batch_size,
                                progress=True, span_beams=args.span_beams)
    ces = []
    for i in range(0, len(examples), args.batch_size):
        ces += target_ce(reader, examples[i:i + args.batch_size])
    groups: dict[str, list[dict]] = defaultdict(list)
    for (r, ex), out, (ce1, ce) in zip(picked, outs, ces):
        em, f1 = scorer(out.text, r.question.answers, r.question.lang)
        passage = normalize_answer(f"{ex['titles'][0]} {ex['texts'][0]}")
        copied = bool(out.text.strip()) and occurs_in(normalize_answer(out.text), passage)
        row = {"em": em, "f1": f1, "copied": float(copied), "ce_first": ce1, "ce": ce}
        groups["all"].append(row)
        groups[f"lang {r.question.lang}"].append(row)
        if r.question.meta.get("relation"):
            groups[f"relation {r.question.meta['relation']}"].append(row)
    table = {g: {"n": len(rows), **{k: sum(x[k] for x in rows) / len(rows)
                                    for k in ("em", "f1", "copied", "ce_first", "ce")}}
             for g, rows in groups.items()}
    print("\n| group | n | EM | F1 | copied | CE first token | CE per token |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for g in ["all"] + sorted(k for k in table if k != "all"):
        t = table[g]
        print(f"| {g} | {t['n']} | {t['em']:.3f} | {t['f1']:.3f} | {t['copied']:.3f} | "
              f"{t['ce_first']:.2f} | {t['ce']:.2f} |")
    if args.out:
        from xqa.artifacts import write_json_atomic

        write_json_atomic(args.out, {"model": str(args.model), "results": str(args.results), "groups": table})
    return 0
