"""SPAR: RBO and shuffling diagnostics, teacher data, Λ training, the SPAR index."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retriever.spar.diagnostics import mean_rbo, rbo, shuffle_tokens

# --- rank-biased overlap ----------------------------------------------------------


def test_rbo_by_hand_equal_lengths():
    # X = 1, 1, 3 at depths 1..3; A = 1, 1/2, 1
    # (0.1/0.9) * (1*0.9 + 0.5*0.81 + 1*0.729) + 1*0.729 = 0.226 + 0.729
    assert rbo([1, 2, 3], [1, 3, 2], p=0.9) == pytest.approx(0.955)


def test_rbo_by_hand_uneven_lengths():
    # s=2, l=3; X_1=1, X_2=1, X_3=|{1,2} & {1,3,2}|=2; X_s=1
    # (0.1/0.9) * (0.9 + 0.405 + 2/3*0.729 + 1*(3-2)/(2*3)*0.729) + ((2-1)/3 + 1/2) * 0.729
    want = (0.1 / 0.9) * (0.9 + 0.405 + 0.486 + 0.1215) + (1 / 3 + 1 / 2) * 0.729
    assert want == pytest.approx(0.82)
    assert rbo([1, 2], [1, 3, 2], p=0.9) == pytest.approx(want)
    assert rbo([1, 3, 2], [1, 2], p=0.9) == pytest.approx(want)


def test_rbo_edge_cases():
    assert rbo([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert rbo([1, 2, 3], [4, 5, 6]) == 0.0
    assert rbo([], []) == 1.0
    assert rbo([1], []) == 0.0
    with pytest.raises(ValueError, match="p must be"):
        rbo([1], [1], p=1.0)


def series_rbo(a, b, p, depth=4000):
    """RBO as its defining series (1-p) sum_d p^(d-1) A_d, with Webber's extrapolation of A_d."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(short), len(long_)

    def overlap(d):
        return len(set(short[: min(d, s)]) & set(long_[: min(d, l)]))

    x_s, x_l = overlap(s), overlap(l)
    total = 0.0
    for d in range(1, depth + 1):
        if d <= s:
            agreement = overlap(d) / d
        elif d <= l:
            agreement = overlap(d) / d + x_s * (d - s) / (s * d)
        else:
            agreement = (x_l - x_s) / l + x_s / s
        total += (1 - p) * p ** (d - 1) * agreement
    return total


ranking = st.lists(st.integers(0, 12), unique=True, min_size=1, max_size=10)


@settings(max_examples=150, deadline=None)
@given(a=ranking, b=ranking, p=st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_rbo_matches_its_series_and_is_a_similarity(a, b, p):
    r = rbo(a, b, p)
    assert r == pytest.approx(series_rbo(a, b, p), abs=1e-9)
    assert r == pytest.approx(rbo(b, a, p))
    assert -1e-12 <= r <= 1 + 1e-12
    if not set(a) & set(b):
        assert r == 0.0


def test_mean_rbo_cuts_to_depth():
    assert mean_rbo([[1, 2, 9]], [[1, 2, 8]], depth=2) == pytest.approx(1.0)
    assert mean_rbo([[1, 2], [1]], [[1, 2], [2]]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        mean_rbo([[1]], [])


@given(st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=4), max_size=8), st.integers(0, 99))
def test_shuffle_tokens_permutes_tokens(tokens, seed):
    text = " ".join(tokens)
    out = shuffle_tokens(text, random.Random(seed))
    assert sorted(out.split()) == sorted(tokens)
