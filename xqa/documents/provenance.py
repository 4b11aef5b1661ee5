"""Where a passage came from, for people: ``xqa ask``'s evidence lines and the demo's table.

A passage cut from a document (:mod:`xqa.documents`) carries its provenance in ``meta``:
``source`` (the file), ``page`` (PDF), ``start``/``end`` (character offsets in the
document's text), ``url`` (a WikiExtractor article). Pure functions; passages without
provenance give ``""``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def describe(meta: Mapping[str, Any] | None) -> str:
    """``reports/q3.pdf, page 4, characters 1200–1830``, or ``https://…`` for an article
    with an address; ``""`` without provenance."""
    if not meta:
        return ""
    parts = []
    if meta.get("url"):
        parts.append(str(meta["url"]))
        if meta.get("source"):
            parts.append(f"from {meta['source']}")
    elif meta.get("source"):
        parts.append(str(meta["source"]))
    if meta.get("page") is not None:
        end = meta.get("page_end")
        parts.append(f"pages {meta['page']}–{end}" if end and end != meta["page"] else f"page {meta['page']}")
    if meta.get("start") is not None and meta.get("end") is not None and not meta.get("url"):
        parts.append(f"characters {meta['start']}–{meta['end']}")
    return ", ".join(parts)


def link(meta: Mapping[str, Any] | None) -> str:
    """The passage's web address (``http(s)`` only), or ``""``."""
    url = str((meta or {}).get("url") or "")
    return url if url.startswith(("http://", "https://")) else ""
