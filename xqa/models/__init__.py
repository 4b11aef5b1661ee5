"""Shipped model weights: the span reader as its int8 difference to multilingual-e5-small."""
