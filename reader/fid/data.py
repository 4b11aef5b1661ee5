"""FiD inputs: passage formatting, tokenization into fixed ``n_context`` blocks, collation.

Every question becomes exactly ``n_context`` encoder rows, one per passage, each
the text ``question: {q} lang: {lang} title: {title} context: {text}``
truncated to ``max_length`` tokens (Tu & Padmanabhan 2022, the MIA 2022 system, §3.3). A question with fewer
passages is padded with question-only rows whose ``passage_mask`` is 0: the
encoder still sees at least one real token in every row (so no attention row is
fully masked), and the decoder never attends to them.

Retrieved passages are kept in the order given: the fused order of the
retrieval result IS the ranking (re-sorting ``ctxs`` by score would silently undo
Sparse-Corroborate-Dense).
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from xqa.records import Context, Question


def format_passage(question: str, lang: str, title: str, text: str) -> str:
    """The encoder input of one (question, passage) pair."""
    return f"question: {question} lang: {lang} title: {title} context: {text}"


# The fixed words of :func:`format_passage`, by name: a training kit (``xqa reader kit``) keeps
# their token ids so that rows cut from its token arrays (:func:`row_from_ids`) are the rows the
# reader reads.
KIT_MARKERS = {"question": "question:", "lang": "lang:", "title": "title:", "context": "context:"}


def row_from_ids(markers: Mapping[str, Sequence[int]], cls_id: int, sep_id: int, question: Sequence[int],
                 lang: Sequence[int], title: Sequence[int], text: Sequence[int] | None,
                 max_length: int) -> list[int]:
    """:func:`format_passage` (``text`` None: :func:`format_question_only`) from token ids, between
    ``cls_id`` and ``sep_id`` and cut to ``max_length`` as the tokenizer cuts it: a SentencePiece
    tokenizer that splits at white space gives the same pieces for the parts as for the whole."""
    row = [*markers["question"], *question, *markers["lang"], *lang]
    if text is not None:
        row += [*markers["title"], *title, *markers["context"], *text]
    return [cls_id, *row[: max_length - 2], sep_id]


def format_question_only(question: str, lang: str) -> str:
    """The encoder input of a padding row (or of a question without passages)."""
    return f"question: {question} lang: {lang}"


def format_decoder_prompt(question: str, lang: str) -> str:
    """The decoder's prompt in front of the answer (readers trained with ``--decoder-prompt``)."""
    return f"question: {question} lang: {lang} answer:"


def encode_prompts(tokenizer, examples: Sequence[Mapping[str, Any]], start_id: int,
                   max_length: int = 48) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
    """Decoder prompts: each the start token, then :func:`format_decoder_prompt`'s pieces
    (no ``</s>``; the question cut from the left so ``answer:`` always ends it).

    Returns the unpadded id lists (for training targets) and, for generation, ``ids`` and
    ``mask`` [B, P] padded on the left, so that every row's answer starts at column P:
    the decoder's relative positions make left padding invisible to the real tokens.
    """
    rows = []
    for ex in examples:
        ids = tokenizer(format_decoder_prompt(ex["question"], ex.get("lang", "")),
                        add_special_tokens=False)["input_ids"]
        rows.append([start_id] + ids[-(max_length - 1):])
    P = max(len(r) for r in rows)
    ids = torch.full((len(rows), P), start_id, dtype=torch.long)
    mask = torch.zeros(len(rows), P, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, P - len(r):] = torch.tensor(r)
        mask[b, P - len(r):] = 1
    return rows, ids, mask


def prompted_targets(prompts: Sequence[Sequence[int]], labels: torch.Tensor,
                     pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced decoder inputs and labels [B, T'] for prompt + answer.

    ``labels`` [B, T] are :func:`encode_answers`'s (``</s>``-ended, -100 padded).
    Row b reads ``prompt + answer`` and is trained only on the answer: the last prompt
    token predicts the answer's first token, as the start token does without a prompt.
    Rows are padded on the right (nothing before a real token attends to padding).
    """
    rows_in, rows_lab = [], []
    for prompt, lab in zip(prompts, labels.tolist()):
        answer = [t for t in lab if t >= 0]
        rows_in.append(list(prompt) + answer[:-1])
        rows_lab.append([-100] * (len(prompt) - 1) + answer)
    T = max(len(r) for r in rows_in)
    dec_in = torch.full((len(rows_in), T), pad_id, dtype=torch.long)
    out = torch.full((len(rows_in), T), -100, dtype=torch.long)
    for b, (r, lab) in enumerate(zip(rows_in, rows_lab)):
        dec_in[b, :len(r)] = torch.tensor(r)
        out[b, :len(lab)] = torch.tensor(lab)
    return dec_in, out


def example_from_record(record: Mapping[str, Any], n_context: int | None = None) -> dict[str, Any]:
    """A plain-dict training/eval example from a retrieval-result record (DPR/FiD layout).

    Keeps ``ctxs`` in the given order and only what the reader needs, so a
    ``datasets.Dataset`` or a list of these is cheap to hold for 20k questions.
    """
    ctxs = list(record.get("ctxs") or [])
    if n_context is not None:
        ctxs = ctxs[:n_context]
    return {
        "id": str(record["id"]),
        "question": str(record["question"]),
        "lang": str(record.get("lang") or ""),
        "answers": [str(a) for a in record.get("answers") or []],
        "titles": [str(c.get("title") or "") for c in ctxs],
        "texts": [str(c.get("text") or "") for c in ctxs],
    }


def example_from_records(question: Question, contexts: Sequence[Context]) -> dict[str, Any]:
    """The same example dict from ``xqa.records`` objects."""
    return {
        "id": question.id,
        "question": question.question,
        "lang": question.lang,
        "answers": list(question.answers),
        "titles": [c.title for c in contexts],
        "texts": [c.text for c in contexts],
    }


def select_contexts(ctxs: Sequence[Any], n: int, gold: Sequence[bool | int], max_gold: int | None = None) -> list[Any]:
    """Training contexts that include the gold passages: ``n`` of ``ctxs``, in the given order.

    Takes the gold passages first (at most ``max_gold``, default ``n - 1`` so one
    non-gold passage always remains to learn to ignore), then the best-ranked
    others, and returns the chosen ones in their fused order: a selection, never a
    re-sort. ``gold`` may also hold priorities (ints, 0 = not gold): higher ones are
    taken first, ties by rank. With no gold passage this is simply the first ``n``.
    """
    max_gold = n - 1 if max_gold is None else max_gold
    if n <= 1:
        max_gold = n
    ranked = sorted((i for i, g in enumerate(gold) if g), key=lambda i: (-int(gold[i]), i))
    chosen = ranked[:max_gold]
    for i in range(len(ctxs)):
        if len(chosen) >= n:
            break
        if i not in chosen:
            chosen.append(i)
    return [ctxs[i] for i in sorted(chosen)]


def encode_passages(tokenizer, examples: Sequence[Mapping[str, Any]], n_context: int,
                    max_length: int) -> dict[str, torch.Tensor]:
    """Tokenize ``examples`` into FiD encoder blocks.

    Returns ``input_ids`` and ``attention_mask`` of shape [B, n_context, L] (L the
    longest row in this batch, at most ``max_length``) and ``passage_mask``
    [B, n_context] (1 for a real passage). A question with no passage at all gets
    one question-only row that counts as real, so the decoder has something to read.
    """
    texts: list[str] = []
    passage_mask = torch.zeros(len(examples), n_context, dtype=torch.long)
    for b, ex in enumerate(examples):
        q, lang = ex["question"], ex.get("lang", "")
        pairs = list(zip(ex["titles"], ex["texts"]))[:n_context]
        for title, text in pairs:
            texts.append(format_passage(q, lang, title, text))
        passage_mask[b, : len(pairs)] = 1
        if not pairs:
            passage_mask[b, 0] = 1
        texts.extend([format_question_only(q, lang)] * (n_context - len(pairs)))
    enc = tokenizer(texts, max_length=max_length, truncation=True, padding="longest",
                    return_tensors="pt")
    B, L = len(examples), enc["input_ids"].shape[1]
    return {
        "input_ids": enc["input_ids"].view(B, n_context, L),          # [B*N, L] -> [B, N, L]
        "attention_mask": enc["attention_mask"].view(B, n_context, L),
        "passage_mask": passage_mask,
    }


def _piece_spans(pieces: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """SentencePiece pieces -> (their text, "▁" read as a space; each piece's [start, end) in it)."""
    text, spans = "", []
    for piece in pieces:
        piece = piece.replace("\u2581", " ")
        spans.append((len(text), len(text) + len(piece)))
        text += piece
    return text, spans


def copy_attention_targets(tokenizer, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Where the decoder should look to copy each answer token: a mask [B, T, N*L].

    ``mask[b, t, p]`` is 1 when encoder position ``p`` (row-major over the N
    passage rows of question ``b``, as :meth:`reader.fid.model.FiD.encode` lays them
    out for the decoder) holds text of answer token ``t`` in an occurrence of the
    whole answer in one of the rows. Matching is done on the pieces' text, not on
    token ids, because SentencePiece cuts an answer differently alone and in
    context ("▁東京" alone, "は東京で" in a Japanese sentence, "▁1958." before a
    full stop): a decoder step points at every passage token overlapping its
    piece's characters. Steps with no target (``</s>``, padding, answers found in
    no passage) are all-zero rows; the loss skips them.
    """
    B, N, L = input_ids.shape
    T = labels.shape[1]
    mask = torch.zeros(B, T, N * L)
    special = set(getattr(tokenizer, "all_special_ids", ()))
    rows: dict[tuple[int, ...], tuple[str, list[tuple[int, int]]]] = {}
    for b in range(B):
        steps = [(t, i) for t, i in enumerate(labels[b].tolist()) if i >= 0 and i not in special]
        if not steps:
            continue
        a_text, a_spans = _piece_spans(tokenizer.convert_ids_to_tokens([i for _, i in steps]))
        lead = len(a_text) - len(a_text.lstrip())
        core = a_text.strip()
        if not core:
            continue
        for n in range(N):
            row = input_ids[b, n].tolist()
            key = tuple(row)
            if key not in rows:   # candidates of one question share its passages: read each row once
                rows[key] = _piece_spans(tokenizer.convert_ids_to_tokens(row))
            p_text, p_spans = rows[key]
            start = p_text.find(core)
            while start >= 0:
                for (t, _), (s, e) in zip(steps, a_spans):
                    s, e = max(s - lead, 0) + start, max(e - lead, 1) + start   # a leading "▁" -> first char
                    e = min(e, start + len(core))
                    for p, (ps, pe) in enumerate(p_spans):
                        if ps < e and pe > s and row[p] not in special:
                            mask[b, t, n * L + p] = 1.0
                start = p_text.find(core, start + 1)
    return mask


def encode_answers(tokenizer, answers: Sequence[str], max_length: int) -> torch.Tensor:
    """Decoder targets [B, T]: the answer's pieces (at most ``max_length`` - 1) and ``</s>``,
    padding set to -100 (ignored by the loss). No ``<s>`` in front, also where the tokenizer puts
    one before a text (XLM-R's, of a warm-started reader): the decoder's start token is not a target."""
    rows = [ids[: max_length - 1] + [tokenizer.eos_token_id]
            for ids in tokenizer(list(answers), add_special_tokens=False)["input_ids"]]
    labels = torch.full((len(rows), max(len(r) for r in rows)), -100, dtype=torch.long)
    for b, r in enumerate(rows):
        labels[b, : len(r)] = torch.tensor(r)
    return labels


@dataclass
class FiDCollator:
    """Turn example dicts into a training batch: encoder blocks plus ``labels``.

    The target is the first gold answer (in the question's language), or, with
    ``sample_answers``, one gold answer drawn at random each time the example is
    seen. Examples without an answer get an empty target (just ``</s>``). With
    ``prompt`` the batch also holds ``decoder_input_ids``: the decoder reads the question
    (:func:`format_decoder_prompt`) before the answer, and ``labels`` are -100 over it.
    """

    tokenizer: Any
    n_context: int
    max_length: int = 192
    max_answer_len: int = 24
    sample_answers: bool = False
    copy_targets: bool = False   # add ``copy_mask`` (copy_attention_targets) for guided cross-attention
    prompt: bool = False         # the decoder reads format_decoder_prompt before the answer
    start_id: int = 0            # the decoder's start token (T5: the padding id)
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def target(self, ex: Mapping[str, Any]) -> str:
        answers = ex.get("answers") or [""]
        return self._rng.choice(answers) if self.sample_answers else answers[0]

    def __call__(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        batch = encode_passages(self.tokenizer, examples, self.n_context, self.max_length)
        batch["labels"] = encode_answers(self.tokenizer, [self.target(ex) for ex in examples],
                                         self.max_answer_len)
        if self.prompt:
            prompts, _, _ = encode_prompts(self.tokenizer, examples, self.start_id)
            batch["decoder_input_ids"], batch["labels"] = prompted_targets(prompts, batch["labels"], self.start_id)
        if self.copy_targets:
            batch["copy_mask"] = copy_attention_targets(self.tokenizer, batch["input_ids"], batch["labels"])
        return batch
