"""Evidence fusion: reader candidates × passage relevance × retriever score.

Pure numpy/python (no torch). The extractive form of Ma et al. 2022 ("Another Look at DPR", §2.2–2.3) is

    s'_{ij} = softmax(β·r + γ·R)_i · softmax(s_i)_j

with r_i the reader's relevance of passage i, R_i its retriever score and s_i
the span scores inside passage i; identical answers (after normalisation) are
summed. FiD does not extract spans: it generates an n-best list a_1..a_k with
sequence log-probabilities ℓ_a. We define the within-passage score of
candidate a in passage i as

    s_{i,a} = ℓ_a + log(m_{i,a} + ε·(1 − m_{i,a}))

where m_{i,a} = 1 when the normalised candidate occurs in passage i (title or
text; word-boundary match, or plain substring for scripts written without
spaces) and 0 otherwise, and ε ∈ (0, 1] (``miss``) is the mass a candidate
keeps in a passage that does not contain it. Optionally (``soft``, with the
reader's per-candidate cross-attention ``candidate_relevance`` [k, N]), a
candidate that occurs in *no* passage — typically a translation of a span —
takes m_{i,a} = its own cross-attention share of passage i, i.e. the
passage it was generated from counts as (partly) containing it. Then

    score(a) = Σ_i softmax(β·r + γ·R)_i · softmax_a(s_i)_a

Properties this gives, by construction:

- the scores of the k candidates sum to 1 (a distribution over answers);
- a candidate that is a span of no passage (a translated answer, a
  paraphrase) keeps ε-reduced mass in every passage, so it stays scorable
  and wins when no span candidate is likely;
- with ε = 1 (or a single candidate) the passages stop mattering and the
  ranking is the reader's (softmax of ℓ over the n-best): the reader-only
  answer is a special case;
- a passage that contains none of the candidates spreads its weight by the
  reader's probabilities, so it neither helps nor hurts any candidate.

Candidates whose normalised text is equal are summed; the group is shown with
the surface form of its best-scoring member (not the normalised key). All
exponentials go through log-sum-exp.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp as _logsumexp

from reader.answer_text import tidy_answer
from xqa.records import Answer, Candidate, Context, Evidence

# Scripts written without spaces between words (and Hangul, where particles attach to
# words): a candidate in these scripts matches as a plain substring.
_NO_SPACE = re.compile(r"[\u0E00-\u0EFF\u1000-\u109F\u1780-\u17FF\u3040-\u30FF\u3400-\u9FFF"
                       r"\uAC00-\uD7AF\uF900-\uFAFF]")


@dataclass(frozen=True)
class FusionParams:
    """β (reader relevance), γ (retriever score), ε (mass kept where a candidate is absent),
    whether a candidate found in no passage is matched softly by its cross-attention, and δ
    (span reader: added to the passage logit of a passage in the question's language)."""

    beta: float = 1.0
    gamma: float = 0.0
    miss: float = 0.1
    soft: bool = False
    same_language: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FusionParams:
        return cls(float(d.get("beta", 1.0)), float(d.get("gamma", 0.0)), float(d.get("miss", 0.1)),
                   bool(d.get("soft", False)), float(d.get("same_language", 0.0)))


def normalize_answer(text: str) -> str:
    """Key for matching and de-duplication: NFKC, lower case, no punctuation, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
    return " ".join(text.split())


def occurs_in(answer_key: str, passage_key: str) -> bool:
    """Does a normalised answer occur in a normalised passage?"""
    if not answer_key:
        return False
    if _NO_SPACE.search(answer_key):
        return answer_key in passage_key
    return f" {answer_key} " in f" {passage_key} "


def _context_text(ctx: Context | str) -> str:
    return ctx if isinstance(ctx, str) else f"{ctx.title} {ctx.text}"


def match_matrix(candidates: Sequence[str], contexts: Sequence[Context | str]) -> np.ndarray:
    """m [N, k]: 1.0 where candidate j occurs in passage i (title or text)."""
    keys = [normalize_answer(c) for c in candidates]
    m = np.zeros((len(contexts), len(keys)), dtype=np.float64)
    for i, ctx in enumerate(contexts):
        passage = normalize_answer(_context_text(ctx))
        for j, key in enumerate(keys):
            m[i, j] = occurs_in(key, passage)
    return m


def soften(match: np.ndarray, candidate_relevance: np.ndarray | None) -> np.ndarray:
    """Soft occurrence [N, k]: a candidate in no passage takes its cross-attention share per passage."""
    if candidate_relevance is None or match.size == 0:
        return match
    share = np.asarray(candidate_relevance, dtype=np.float64).T[: match.shape[0], : match.shape[1]]  # [N, k]
    absent = match.sum(axis=0, keepdims=True) == 0
    return np.where(absent, np.clip(share, 0.0, 1.0), match)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable log-softmax (scipy's log-sum-exp); a slice of all -inf (nothing has any mass, e.g.
    a question without candidates) stays all -inf rather than NaN."""
    x = np.asarray(x, dtype=np.float64)
    total = _logsumexp(x, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):   # -inf - -inf: replaced below
        out = x - total
    return np.where(np.isneginf(total), -np.inf, out)


def logsumexp(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """log Σ exp(x) along ``axis`` (scipy's); -inf where every term is -inf."""
    return np.asarray(_logsumexp(np.asarray(x, dtype=np.float64), axis=axis))


def passage_log_weights(relevance: Sequence[float], retriever_scores: Sequence[float],
                        beta: float, gamma: float, prior: Sequence[float] | None = None) -> np.ndarray:
    """log softmax(β·r + γ·R + prior) over the N passages -> [N] (``prior`` [N], e.g. δ for
    each passage in the question's language; none: 0)."""
    r = np.nan_to_num(np.asarray(relevance, dtype=np.float64))
    R = np.nan_to_num(np.asarray(retriever_scores, dtype=np.float64))
    if r.shape != R.shape:
        raise ValueError(f"relevance has {r.shape[0]} passages but retriever scores {R.shape[0]}")
    logits = beta * r + gamma * R
    if prior is not None:
        logits = logits + np.asarray(prior, dtype=np.float64)
    return log_softmax(logits)


def candidate_log_scores(logprobs: Sequence[float], match: np.ndarray, relevance: Sequence[float],
                         retriever_scores: Sequence[float], params: FusionParams) -> np.ndarray:
    """log score(a) for each of the k candidates (before de-duplication) -> [k].

    ``match`` [N, k] from :func:`match_matrix`. With no passage (N = 0) this is
    the reader's log-softmax over the n-best.
    """
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.size == 0:
        return lp
    if match.shape[0] == 0:
        return log_softmax(lp)
    if not 0.0 < params.miss <= 1.0:
        raise ValueError(f"miss must be in (0, 1], got {params.miss}")
    log_p = passage_log_weights(relevance, retriever_scores, params.beta, params.gamma)   # [N]
    s = lp[None, :] + np.log(match + params.miss * (1.0 - match))                         # [N, k]
    return logsumexp(log_p[:, None] + log_softmax(s, axis=1), axis=0)                     # [k]


def merge_duplicates(texts: Sequence[str], log_scores: np.ndarray,
                     reader_logprobs: Sequence[float], written: Sequence[str] | None = None,
                     langs: Sequence[str] | None = None) -> list[Candidate]:
    """Sum candidates with the same normalised text as shown; keep the best member's surface form.

    A candidate is shown tidied (:func:`reader.answer_text.tidy_answer`: no edge punctuation, no
    unbalanced bracket and what follows it), and grouped by that: ``Canberra`` and the span
    ``Canberra (Melbourne was`` are one answer. Returns :class:`Candidate` records, best first,
    ``score`` a probability and
    ``reader_score`` the surface form's sequence log-probability; ``written`` [k]
    (what the reader wrote, where ``texts`` shows it translated) fills
    ``Candidate.written`` where the two differ; ``langs`` [k] (the language of the passage
    a span comes from) fills ``Candidate.lang`` with the best member's.
    """
    shown = [tidy_answer(t) for t in texts]
    groups: dict[str, list[int]] = {}
    for j, t in enumerate(shown):
        groups.setdefault(normalize_answer(t), []).append(j)
    merged = []
    for members in groups.values():
        best = max(members, key=lambda j: (log_scores[j], reader_logprobs[j]))
        total = float(logsumexp(np.asarray([log_scores[j] for j in members])))
        wrote = written[best] if written is not None and written[best] != texts[best] else ""
        merged.append(Candidate(text=shown[best], score=math.exp(total),
                                reader_score=float(reader_logprobs[best]), written=wrote,
                                lang=langs[best] if langs is not None else ""))
    merged.sort(key=lambda c: (-c.score, -c.reader_score))
    return merged


def fuse_evidence(candidates: Sequence[tuple[str, float]], relevance: Sequence[float],
                  retriever_scores: Sequence[float], contexts: Sequence[Context | str],
                  beta: float = 1.0, gamma: float = 0.0, miss: float = 0.1,
                  candidate_relevance: np.ndarray | None = None,
                  shown: Sequence[str] | None = None) -> list[Candidate]:
    """Score FiD's n-best ``candidates`` (text, log-prob) with the evidence of N passages.

    ``relevance`` [N] (reader cross-attention mass), ``retriever_scores`` [N] and
    ``contexts`` (the N passages the reader saw, ``Context`` or plain text).
    ``candidate_relevance`` [k, N] (``ReaderOutput.candidate_relevance``), when
    given, matches candidates found in no passage softly (see module doc).
    ``shown`` [k], when given, is how each candidate is answered (a copied span
    written in the question's language, :mod:`xqa.world.labels`): candidates are
    matched against the passages by the text the reader wrote, and summed and
    shown by this one. Returns de-duplicated candidates sorted by fused probability.
    """
    if len(contexts) < len(relevance):
        raise ValueError(f"{len(relevance)} relevance values but only {len(contexts)} contexts")
    texts = [t for t, _ in candidates]
    lps = [float(s) for _, s in candidates]
    match = soften(match_matrix(texts, list(contexts)[: len(relevance)]), candidate_relevance)
    log_scores = candidate_log_scores(lps, match, relevance, retriever_scores,
                                      FusionParams(beta, gamma, miss))
    return merge_duplicates(_shown(texts, shown), log_scores, lps, texts)


def _shown(texts: Sequence[str], shown: Sequence[str] | None) -> Sequence[str]:
    if shown is None:
        return texts
    if len(shown) != len(texts):
        raise ValueError(f"{len(shown)} shown texts for {len(texts)} candidates")
    return shown


def reader_only(candidates: Sequence[tuple[str, float]], shown: Sequence[str] | None = None) -> list[Candidate]:
    """The reader's own ranking (softmax over the n-best, duplicates summed), for comparison."""
    texts = [t for t, _ in candidates]
    lps = [float(s) for _, s in candidates]
    return merge_duplicates(_shown(texts, shown), log_softmax(np.asarray(lps)) if lps else np.zeros(0), lps, texts)


def build_answer(question_id: str, candidates: Sequence[tuple[str, float]], relevance: Sequence[float],
                 contexts: Sequence[Context], params: FusionParams | None = None,
                 candidate_relevance: np.ndarray | None = None, shown: Sequence[str] | None = None) -> Answer:
    """An :class:`~xqa.records.Answer`: fused best answer, n-best, and the passages as
    evidence ordered by their fused weight softmax(β·r + γ·R); retriever scores
    are the contexts' ``score``. ``params=None`` gives the reader-only answer;
    ``candidate_relevance`` is used when ``params.soft``; ``shown`` as in
    :func:`fuse_evidence`."""
    n = len(relevance)
    ctxs = list(contexts)[:n]
    scores = [c.score for c in ctxs]
    if params is None:
        ranked = reader_only(candidates, shown)
        order = np.argsort(-np.asarray(relevance, dtype=np.float64), kind="stable")
    else:
        ranked = fuse_evidence(candidates, relevance, scores, ctxs, params.beta, params.gamma, params.miss,
                               candidate_relevance if params.soft else None, shown)
        order = np.argsort(-passage_log_weights(relevance, scores, params.beta, params.gamma), kind="stable")
    evidence = tuple(Evidence(context=ctxs[i], relevance=float(relevance[i])) for i in order)
    best = ranked[0] if ranked else Candidate("", 0.0)
    return Answer(question_id=question_id, text=best.text, score=best.score,
                  candidates=tuple(ranked), evidence=evidence)


# --------------------------------------------------------------------------- spans (extractive)


def span_log_scores(spans: Sequence[Any], norm: Sequence[float], relevance: Sequence[float],
                    retriever_scores: Sequence[float], beta: float, gamma: float,
                    prior: Sequence[float] | None = None) -> np.ndarray:
    """log s'_{ij} = log softmax(β·r + γ·R + prior)_i + s_ij − log Σ_j' exp(s_ij') for each span -> [m].

    ``spans`` are the span reader's (``.passage`` i, ``.score`` s_ij); ``norm`` [N] is each
    passage's log-normaliser over every span it allows (Ma et al. 2022, §2.2-2.3, extractive form)."""
    if not len(spans):
        return np.zeros(0)
    log_p = passage_log_weights(relevance, retriever_scores, beta, gamma, prior)       # [N]
    norm = np.asarray(norm, dtype=np.float64)
    return np.asarray([log_p[s.passage] + s.score - norm[s.passage] for s in spans], dtype=np.float64)


def fuse_spans(spans: Sequence[Any], norm: Sequence[float], relevance: Sequence[float],
               retriever_scores: Sequence[float], beta: float = 1.0, gamma: float = 0.0,
               langs: Sequence[str] | None = None, prior: Sequence[float] | None = None) -> list[Candidate]:
    """Evidence fusion of extracted spans: s'_{ij} summed over identical answers (normalised
    text, across passages and within one), each group shown in its best member's surface form.
    ``score`` is the group's probability, ``reader_score`` its best member's span score;
    ``langs`` [N] (the passages' languages) marks each answer with its passage's language;
    ``prior`` [N] is added to the passage logits."""
    log_scores = span_log_scores(spans, norm, relevance, retriever_scores, beta, gamma, prior)
    span_langs = [langs[s.passage] for s in spans] if langs is not None else None
    return merge_duplicates([s.text for s in spans], log_scores, [s.score for s in spans], langs=span_langs)


def same_language_prior(contexts: Sequence[Context], question_lang: str, delta: float) -> list[float] | None:
    """δ for each passage in the question's language, 0 for the others (None when δ is 0 or the
    question's language is unknown)."""
    if not delta or not question_lang or question_lang == "und":
        return None
    return [delta if c.lang == question_lang else 0.0 for c in contexts]


def build_span_answer(question_id: str, out: Any, contexts: Sequence[Context],
                      params: FusionParams | None = None, question_lang: str = "") -> Answer:
    """An :class:`~xqa.records.Answer` from a span reader's output (``reader.span.SpanOutput``).

    With ``params`` (β, γ): evidence fusion over every passage. Without: the reader alone —
    its most relevant passage's best span (the passage weights are softmax(r)). With
    ``params.same_language`` δ, a passage in ``question_lang`` gets δ added to its logit, so an
    answer written in the question's language wins over an equal one in another. Evidence is
    ordered by the passage weights either way."""
    n = len(out.relevance)
    ctxs = list(contexts)[:n]
    scores = [c.score for c in ctxs]
    beta, gamma = (params.beta, params.gamma) if params is not None else (1.0, 0.0)
    if params is None:
        top = int(np.argmax(out.relevance)) if n else 0
        spans = [s for s in out.spans if s.passage == top] or list(out.spans)
    else:
        spans = list(out.spans)
    prior = same_language_prior(ctxs, question_lang, params.same_language) if params is not None else None
    ranked = fuse_spans(spans, out.norm, out.relevance, scores, beta, gamma, [c.lang for c in ctxs], prior)
    weights = passage_log_weights(out.relevance, scores, beta, gamma, prior) if n else np.zeros(0)
    order = np.argsort(-weights, kind="stable")
    evidence = tuple(Evidence(context=ctxs[i], relevance=float(np.exp(weights[i]))) for i in order)
    best = ranked[0] if ranked else Candidate("", 0.0)
    return Answer(question_id=question_id, text=best.text, score=best.score,
                  candidates=tuple(ranked), evidence=evidence)
