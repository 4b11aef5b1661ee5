"""Retrieval metrics over DPR/FiD result records.

A result record is a plain dict
``{"id", "question", "answers", "lang", "ctxs": [{"id", "title", "text", "lang", "score", "source"}]}``
with ``ctxs`` in rank order. Metrics:

* **top-k accuracy** (percent): share of questions with a gold answer string in
  one of the first k passages' *text* (DPR checks the text, not the title);
* **recall@k** (percent): mean share of a question's gold passage ids found in
  the first k passages, over questions that carry gold ids (``positive_ids``,
  or DPR's ``positive_ctxs`` with ``id``/``passage_id``);
* **MRR@k** (in [0, 1]): mean reciprocal rank of the first gold passage id
  within the first k (0 when none), over the same questions.

``has_answer`` has two modes:

* ``"dpr"``: DPR's ``has_answer`` (string match): NFD-normalize, tokenize with
  ``([\\p{L}\\p{N}\\p{M}]+)|([^\\p{Z}\\p{C}])``, lower-case, and look for the
  answer's tokens as a contiguous run of the text's tokens. Like DPR, an
  answer with no tokens (an empty string) matches any text.
* ``"lang_aware"``: for Japanese, Chinese, Thai, Khmer and Korean, where a run
  of letters is a whole phrase to that tokenizer (``東京都の人口`` is one
  token, so ``東京`` never matches), it is a substring match on NFKC-normalized,
  case-folded, white-space-collapsed text (NFKC also unifies full- and
  half-width digits); any other language uses the DPR rule.
  The rule applies when the question's or the passage's language is one of those.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from xqa.errors import XqaError
from xqa.evaluation.languages import UNSEGMENTED_LANGUAGES

MATCH_MODES = ("dpr", "lang_aware")

_DPR_TOKEN = regex.compile(r"([\p{L}\p{N}\p{M}]+)|([^\p{Z}\p{C}])",
                           flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)


def dpr_tokens(text: str) -> list[str]:
    """DPR's SimpleTokenizer words, NFD-normalized and lower-cased."""
    return [m.group().lower() for m in _DPR_TOKEN.finditer(unicodedata.normalize("NFD", text))]


def _contains_run(tokens: Sequence[str], run: Sequence[str]) -> bool:
    n = len(run)
    return any(list(tokens[i:i + n]) == list(run) for i in range(len(tokens) - n + 1))


def _substring_key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def has_answer(text: str, answers: Iterable[str], lang: str | None = None, mode: str = "dpr") -> bool:
    """Does ``text`` contain one of ``answers``? See the module docstring for the modes."""
    if mode not in MATCH_MODES:
        raise XqaError(f"unknown answer-match mode {mode!r}; choose one of {', '.join(MATCH_MODES)}")
    answers = [answers] if isinstance(answers, str) else list(answers)
    text_tokens = dpr_tokens(text)
    if any(_contains_run(text_tokens, dpr_tokens(a)) for a in answers):
        return True
    if mode == "lang_aware" and lang in UNSEGMENTED_LANGUAGES:
        key = _substring_key(text)
        return any(k and k in key for k in map(_substring_key, answers))
    return False


def _match_lang(result: Mapping[str, Any], ctx: Mapping[str, Any]) -> str | None:
    ctx_lang = ctx.get("lang")
    return ctx_lang if ctx_lang in UNSEGMENTED_LANGUAGES else result.get("lang")


def answer_hits(result: Mapping[str, Any], mode: str = "dpr", k: int | None = None) -> list[bool]:
    """``has_answer`` for each of the first ``k`` (default all) passages of one result."""
    ctxs = result["ctxs"] if k is None else result["ctxs"][:k]
    answers = result["answers"]
    return [has_answer(c.get("text") or "", answers, _match_lang(result, c), mode) for c in ctxs]


def first_answer_rank(result: Mapping[str, Any], mode: str = "dpr", k: int | None = None) -> int | None:
    """1-based rank of the first passage holding an answer (within the first k), or None."""
    ctxs = result["ctxs"] if k is None else result["ctxs"][:k]
    answers = result["answers"]
    for rank, c in enumerate(ctxs, 1):
        if has_answer(c.get("text") or "", answers, _match_lang(result, c), mode):
            return rank
    return None


def first_answer_ranks(results: Sequence[Mapping[str, Any]], mode: str = "dpr",
                       k: int | None = None) -> list[int | None]:
    """``first_answer_rank`` of every result: compute once, derive any top-k from it."""
    return [first_answer_rank(r, mode, k) for r in results]


def accuracy_from_ranks(ranks: Sequence[int | None], ks: Iterable[int]) -> dict[int, float]:
    """Top-k accuracy (percent) from first-answer ranks; 0.0 for no questions."""
    n = len(ranks)
    return {k: (100.0 * sum(r is not None and r <= k for r in ranks) / n if n else 0.0) for k in ks}


def topk_accuracy(results: Sequence[Mapping[str, Any]], ks: Iterable[int], mode: str = "dpr") -> dict[int, float]:
    """Top-k answer accuracy (percent) for each k, over all given results."""
    ks = _check_ks(ks)
    return accuracy_from_ranks(first_answer_ranks(results, mode, max(ks)), ks)


def gold_passage_ids(result: Mapping[str, Any]) -> set[str] | None:
    """The question's gold passage ids, or None when the record carries none."""
    ids = result.get("positive_ids")
    if ids is None and isinstance(result.get("positive_ctxs"), list):
        ids = [c.get("id", c.get("passage_id")) for c in result["positive_ctxs"] if isinstance(c, dict)]
        ids = [i for i in ids if i is not None]
    if not ids:
        return None
    return {str(i) for i in ids}


def _with_gold_ids(results: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], set[str]]]:
    out = []
    for r in results:
        gold = gold_passage_ids(r)
        if gold:
            out.append((r, gold))
    return out


def recall_at_k(results: Sequence[Mapping[str, Any]], ks: Iterable[int]) -> dict[int, float]:
    """Mean share (percent) of gold passage ids among the first k, over questions that have gold ids."""
    ks = _check_ks(ks)
    pairs = _with_gold_ids(results)
    out = {}
    for k in ks:
        total = 0.0
        for r, gold in pairs:
            top = {str(c.get("id")) for c in r["ctxs"][:k]}
            total += len(gold & top) / len(gold)
        out[k] = 100.0 * total / len(pairs) if pairs else 0.0
    return out


def mrr_at_k(results: Sequence[Mapping[str, Any]], ks: Iterable[int]) -> dict[int, float]:
    """Mean reciprocal rank (in [0, 1]) of the first gold passage id within the first k."""
    ks = _check_ks(ks)
    pairs = _with_gold_ids(results)
    ranks = []
    for r, gold in pairs:
        ranks.append(next((i for i, c in enumerate(r["ctxs"], 1) if str(c.get("id")) in gold), None))
    return {k: (sum(1.0 / x for x in ranks if x is not None and x <= k) / len(ranks) if ranks else 0.0)
            for k in ks}


def _check_ks(ks: Iterable[int]) -> list[int]:
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise XqaError(f"k values must be positive integers, got {ks}")
    return ks


@dataclass
class LanguageRetrieval:
    lang: str
    n: int
    topk: dict[int, float]  # percent
    n_with_gold_ids: int = 0
    recall: dict[int, float] = field(default_factory=dict)  # percent; empty without gold ids
    mrr: dict[int, float] = field(default_factory=dict)  # in [0, 1]; empty without gold ids


@dataclass
class RetrievalScores:
    """Per-language, pooled (``all``) and macro-averaged retrieval metrics."""

    mode: str
    ks: list[int]
    per_language: dict[str, LanguageRetrieval]
    all: LanguageRetrieval

    @property
    def macro_topk(self) -> dict[int, float]:
        langs = list(self.per_language.values())
        return {k: (sum(s.topk[k] for s in langs) / len(langs) if langs else 0.0) for k in self.ks}

    def to_dict(self) -> dict[str, Any]:
        def one(s: LanguageRetrieval) -> dict[str, Any]:
            d: dict[str, Any] = {"n": s.n, "topk_accuracy": {str(k): v for k, v in s.topk.items()}}
            if s.n_with_gold_ids:
                d["n_with_gold_ids"] = s.n_with_gold_ids
                d["recall"] = {str(k): v for k, v in s.recall.items()}
                d["mrr"] = {str(k): v for k, v in s.mrr.items()}
            return d

        return {
            "match": self.mode,
            "ks": self.ks,
            "all": one(self.all),
            "macro": {"topk_accuracy": {str(k): v for k, v in self.macro_topk.items()}},
            "per_language": {lang: one(s) for lang, s in sorted(self.per_language.items())},
        }


def _score_group(lang: str, results: Sequence[Mapping[str, Any]], ranks: Sequence[int | None],
                 ks: list[int]) -> LanguageRetrieval:
    n_gold = len(_with_gold_ids(results))
    return LanguageRetrieval(
        lang, len(results), accuracy_from_ranks(ranks, ks), n_gold,
        recall_at_k(results, ks) if n_gold else {}, mrr_at_k(results, ks) if n_gold else {})


def score_retrieval(results: Sequence[Mapping[str, Any]], ks: Iterable[int], mode: str = "dpr",
                    ranks: Sequence[int | None] | None = None) -> RetrievalScores:
    """All retrieval metrics, per language (the result's ``lang``), pooled and macro-averaged.

    ``ranks``: precomputed ``first_answer_ranks(results, mode)`` (saves a second
    pass over the passages when the caller also draws curves).
    """
    ks = _check_ks(ks)
    if ranks is None:
        ranks = first_answer_ranks(results, mode, max(ks))
    elif len(ranks) != len(results):
        raise XqaError("ranks and results differ in length")
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        groups.setdefault(str(r.get("lang")), []).append(i)
    per_language = {
        lang: _score_group(lang, [results[i] for i in idx], [ranks[i] for i in idx], ks)
        for lang, idx in groups.items()
    }
    return RetrievalScores(mode, ks, per_language, _score_group("all", results, ranks, ks))


def accuracy_curve(results: Sequence[Mapping[str, Any]], max_k: int, mode: str = "dpr") -> list[float]:
    """Top-k accuracy (percent) for k = 1 … max_k, from one pass over the passages."""
    acc = accuracy_from_ranks(first_answer_ranks(results, mode, max_k), range(1, max_k + 1))
    return [acc[k] for k in range(1, max_k + 1)]
