"""The embedded multilingual world: a seeded generator of facts, passages and questions.

``build_world(out_dir, size="default", seed=0, overwrite=False) -> dict`` writes
``passages.jsonl`` ({"id","title","text","lang"}), ``train/dev/test.jsonl``
(XOR-TyDi/MKQA layout plus ``crosslingual``, ``entity``, ``relation``,
``positive_ids``), ``labels.jsonl`` (every answer's name in every language, for
``reader.labels``) and ``config.json`` (kind "world"). ``generate`` does the same
in memory. Pure Python and the JSON files in ``data/``; no network.
"""
from xqa.world.entities import LANGS, RELATIONS, World, build_entities
from xqa.world.generate import (
           SIZES,
           SPLITS,
           GeneratedWorld,
           WorldSize,
           answer_labels,
           build_world,
           generate,
           world_stats,
           write_labels,
)

__all__ = ["LANGS", "RELATIONS", "SIZES", "SPLITS", "GeneratedWorld", "World", "WorldSize", "build_entities", "build_world",
           "generate", "world_stats", "answer_labels", "write_labels"]
