"""Retrieval settings tuned on the embedded world: features of the world, not general defaults.

``CROSS_SCRIPT_STOP_FRACTION``: the cross-script BM25 index of the world leaves out of a
question's query the tokens found in at least this share of its own language's passages
(``xqa index sparse --cross-script --stop-fraction``). In one index of every language a
language's template words look as rare as names. Chosen on the world's dev split
(BM25 + cross-script, a gold passage among the first 2 for cross-lingual questions):
0.3 → 0.620, 0.1 → 0.684, 0.05 → 0.686, 0.02 → 0.658, none → 0.510; 0.1 is the larger of
the two best, so fewer words are dropped on other corpora. A corpus of your own should
measure its own share; the general default (``retriever.sparse.index``) leaves every token in.
"""
from __future__ import annotations

CROSS_SCRIPT_STOP_FRACTION = 0.1
