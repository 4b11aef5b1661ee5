"""The embedded multilingual world: a seeded generator of facts, passages and questions.

``build_world(out_dir, size="default", seed=0, overwrite=False) -> dict`` writes
``passages.jsonl`` ({"id","title","text","lang"}), ``train/dev/test.jsonl``
(XOR-TyDi/MKQA layout plus ``crosslingual``, ``entity``, ``relation``,
``positive_ids``), ``labels.jsonl`` (every answer's name in every language:
``xqa.world.labels``) and ``config.json`` (kind "world"). ``generate`` does the same
in memory. Pure Python and the JSON files in ``data/``; no network.

Features of the world that its pipeline uses, not general reading or retrieval
defaults: the answer-label table (``xqa.world.labels``) and the cross-script stop-token
share tuned on it (``xqa.world.retrieval``).
"""
from xqa.world.entities import LANGS, RELATIONS, World, build_entities
from xqa.world.generate import SIZES, SPLITS, GeneratedWorld, WorldSize, build_world, generate, world_stats
from xqa.world.labels import AnswerLabels, answer_labels

__all__ = ["LANGS", "RELATIONS", "SIZES", "SPLITS", "AnswerLabels", "GeneratedWorld", "World", "WorldSize",
           "answer_labels", "build_entities", "build_world", "generate", "world_stats"]
