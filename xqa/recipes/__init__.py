"""Build recipes: a pipeline (indexes, models, ``pipeline.json``) made stage by stage.

- :mod:`xqa.recipes.runner`: the stage runner every recipe uses (a stage whose artifact is
  complete is skipped, so a killed build continues where it stopped);
- :mod:`xqa.recipes.corpus`: the corpus recipe, any passage collection with the pretrained
  encoder and a span reader (``xqa build``);
- :mod:`xqa.recipes.world`: the world recipe, the generated test world with tiny models
  trained from scratch, in profiles ``world``, ``long`` and ``small``.

``xqa embedded build`` picks a recipe by its profile (:func:`embedded`). Importing this
package loads nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# xqa embedded build --profile: "default" is the corpus recipe over the shipped sample, the
# others the world recipe's profiles (xqa.recipes.world.PROFILES)
EMBEDDED_PROFILES = ("default", "world", "long", "small")


@dataclass
class EmbeddedConfig:
    """What ``xqa embedded build`` builds (its options, :mod:`xqa.cli_config`); :func:`embedded`'s arguments."""

    out: str = field(default="build/embedded", metadata={"help": "folder of the embedded default"})
    profile: str = field(default="default", metadata={
        "choices": EMBEDDED_PROFILES,
        "help": "default: real Wikipedia paragraphs, the pretrained encoder and the shipped span reader (make "
                "demo); world: the generated world with tiny models trained from scratch; long: world with a "
                "reader trained 4,000 steps instead of 2,400; small: a small world and short training (tests)"})
    seed: int = field(default=0, metadata={"help": "seed of the world and of training"})
    threads: int = field(default=0, metadata={
        "help": "torch CPU threads of the stages run in this process (0: all cores); the reader's stages run "
                "as one-thread processes"})


def embedded(out: str | Path, profile: str = "default", seed: int = 0, threads: int = 0) -> Path:
    """Build the embedded pipeline of ``profile`` into ``out``; its ``pipeline.json``.

    ``default`` (what ``make demo`` builds): the corpus recipe over the shipped multilingual
    Wikipedia sample with the shipped span reader (``seed`` is not used). ``world``, ``long``,
    ``small``: the world recipe, seeded with ``seed``.
    """
    if profile == "default":
        from xqa.recipes.corpus import shipped_sample

        return shipped_sample(out, threads=threads).run()
    from xqa.recipes.world import WorldBuild

    return WorldBuild(out, profile=profile, seed=seed).run()
