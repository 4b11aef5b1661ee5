"""Diagnostics of the lexical model Λ (SPAR, Chen et al. 2022, §6, Tables 6 and 7).

- :func:`rbo` — rank-biased overlap (Webber, Moffat & Zobel 2010), the
  extrapolated form ``RBO_ext`` for two finite rankings of possibly different
  lengths, persistence ``p`` = 0.9 as in the paper. SPAR reports ~0.5-0.6 for
  Λ against BM25 and ~0.1 for DPR against BM25.
- :func:`mean_rbo` — the mean over a batch of paired ranked lists.
- :func:`shuffle_tokens` — the token-shuffled stress test: the order of each
  question's tokens is permuted; BM25 and Λ should not care, a dense
  retriever does.
"""
from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

import regex

RBO_P = 0.9


def rbo(a: Sequence[Hashable], b: Sequence[Hashable], p: float = RBO_P) -> float:
    """Extrapolated rank-biased overlap of rankings ``a`` and ``b`` (Webber et al. eq. 32).

    With ``X_d`` the overlap of the two depth-``d`` prefixes, ``s``/``l`` the
    shorter/longer length (for ``d > s`` ``X_d`` counts the whole shorter list)::

        RBO_ext = (1-p)/p * ( sum_{d=1..l} X_d/d p^d + sum_{d=s+1..l} X_s (d-s)/(s d) p^d )
                  + ( (X_l - X_s)/l + X_s/s ) p^l

    It is 1 for identical rankings, 0 for disjoint ones, symmetric, and
    weights the top: depth ``d`` carries weight ``(1-p) p^(d-1)``. Repeated
    items keep their first occurrence. Two empty rankings give 1; one empty
    ranking gives 0.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    a, b = _dedup(a), _dedup(b)
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(short), len(long_)
    seen_s: set = set()
    seen_l: set = set()
    x = 0  # overlap of the prefixes seen so far
    total = 0.0
    x_s = 0
    for d in range(1, l + 1):
        item_l = long_[d - 1]
        if d <= s:
            item_s = short[d - 1]
            if item_s == item_l:
                x += 1
            else:
                x += (item_s in seen_l) + (item_l in seen_s)
            seen_s.add(item_s)
            seen_l.add(item_l)
            if d == s:
                x_s = x
        else:
            x += item_l in seen_s
            seen_l.add(item_l)
            total += x_s * (d - s) / (s * d) * p ** d
        total += x / d * p ** d
    return (1 - p) / p * total + ((x - x_s) / l + x_s / s) * p ** l


def mean_rbo(lists_a: Sequence[Sequence[Hashable]], lists_b: Sequence[Sequence[Hashable]],
             p: float = RBO_P, depth: int | None = None) -> float:
    """Mean :func:`rbo` over paired rankings, each cut to ``depth`` first when given."""
    if len(lists_a) != len(lists_b):
        raise ValueError(f"{len(lists_a)} rankings against {len(lists_b)}")
    if not lists_a:
        return float("nan")
    cut = (lambda x: list(x)[:depth]) if depth else list
    return sum(rbo(cut(x), cut(y), p) for x, y in zip(lists_a, lists_b)) / len(lists_a)


_TOKEN = regex.compile(r"\S+")


def shuffle_tokens(text: str, rng: random.Random) -> str:
    """``text`` with its white-space tokens in a random order (SPAR Table 7).

    A text of one token (e.g. unsegmented Chinese or Japanese) is returned
    unchanged: there is nothing to shuffle without a segmenter.
    """
    tokens = _TOKEN.findall(text)
    rng.shuffle(tokens)
    return " ".join(tokens)


def _dedup(items: Sequence[Hashable]) -> list:
    seen: set = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


__all__ = ["RBO_P", "mean_rbo", "rbo", "shuffle_tokens"]
