"""``xqa cache``: what ``xqa build``, ``xqa convert e5`` and ``xqa reader unpack|runtime`` keep
to copy wherever the same is needed again (the converted encoder, the readers and Λ unpacked
onto it, their int8 runtimes, Λ's frozen word embeddings), and clearing it.

Examples::

    xqa cache                 # where the cache is, and each entry in it
    xqa cache --prune         # remove the entries no build links to (after deleting builds)
    xqa cache --clear         # remove them all (the next build makes its own anew)

The cache is ``$XQA_CACHE`` (default ``~/.cache/xqa``); ``XQA_CACHE=off`` turns it off
(:mod:`xqa.runtime_cache`).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from xqa.cli_config import ConfigCommand


@dataclass
class CacheConfig:
    # the options of ``xqa cache`` (:mod:`xqa.cli_config`)
    clear: bool = field(default=False, metadata={
        "help": "remove every entry of the cache; later builds make theirs anew (and store them again)"})
    prune: bool = field(default=False, metadata={
        "help": "remove the entries no build links to (their files are the cache's alone, as after the builds "
                "that made or copied them were deleted)"})


COMMAND = ConfigCommand(CacheConfig)
add_arguments = COMMAND.add_arguments


def _counts(found: list[dict]) -> str:
    return ", ".join(f"{sum(e['kind'] == kind for e in found)} {kind[:-1]}(s)" for kind in ("runtimes", "folders", "files"))


def run(args: argparse.Namespace) -> int:
    from xqa.errors import XqaError
    from xqa.runtime_cache import CACHE_ENV, cache_root, clear, entries, prune

    cfg = COMMAND.config(args)
    if cfg.clear and cfg.prune:
        raise XqaError("--clear removes every entry, --prune those no build links to: give one of them")
    root = cache_root()
    if root is None:
        print(f"xqa's cache is off ({CACHE_ENV}=off): every build makes its encoder, readers and runtimes anew")
        return 0
    if cfg.clear:
        found = entries(root)
        n, size = clear(root)
        print(f"removed {n} entries ({_counts(found)}), {size / 1e6:.0f} MB, from {root}")
        return 0
    if cfg.prune:
        n, size = prune(root)
        print(f"removed {n} of {len(entries(root)) + n} entries, {size / 1e6:.0f} MB, from {root}: "
              f"those no build links to")
        return 0
    found = entries(root)
    total, own = sum(e["bytes"] for e in found), sum(e["own_bytes"] for e in found)
    print(f"xqa cache: {root} ({_counts(found)}, {total / 1e6:.0f} MB, "
          f"{own / 1e6:.0f} MB of it in files no build shares; "
          f"${CACHE_ENV} moves it, {CACHE_ENV}=off turns it off, xqa cache --prune removes what no build "
          f"links to, --clear empties it)")
    for e in found:
        print(f"  {e['key'][:12]}  {e['made'][:16]:16}  {e['bytes'] / 1e6:5.0f} MB  {e['linked']:>2} build(s)  {e['what']}"
              + (f", {e['threads']} thread(s)" if e["threads"] is not None else "")
              + (f", first made in {e['built_in']}" if e["built_in"] else ""))
    return 0
