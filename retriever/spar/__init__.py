"""SPAR (paper 000): a dense lexical model Λ that imitates BM25, joined to a dense retriever.

- :mod:`retriever.spar.diagnostics` — rank-biased overlap, token shuffling.
"""
from retriever.spar.diagnostics import RBO_P, mean_rbo, rbo, shuffle_tokens

__all__ = ["RBO_P", "mean_rbo", "rbo", "shuffle_tokens"]
