"""Build recipes: a pipeline (indexes, models, ``pipeline.json``) made stage by stage.

- :mod:`xqa.build.runner`: the stage runner every recipe uses (a stage whose artifact is
  complete is skipped, so a killed build continues where it stopped);
- :mod:`xqa.build.corpus`: the corpus recipe, any passage collection with the pretrained
  encoder and a span reader (``xqa build``);
- :mod:`xqa.build.world`: the world recipe, the generated test world with tiny models
  trained from scratch, in profiles ``world``, ``long`` and ``small``.

``xqa embedded build`` picks a recipe by its profile (:func:`embedded`). Importing this
package loads nothing.
"""
from __future__ import annotations

from pathlib import Path

# xqa embedded build --profile: "default" is the corpus recipe over the shipped sample, the
# others the world recipe's profiles (xqa.build.world.PROFILES)
EMBEDDED_PROFILES = ("default", "world", "long", "small")


def embedded(out: str | Path, profile: str = "default", seed: int = 0, threads: int = 0) -> Path:
    """Build the embedded pipeline of ``profile`` into ``out``; its ``pipeline.json``.

    ``default`` (what ``make demo`` builds): the corpus recipe over the shipped multilingual
    Wikipedia sample with the shipped span reader (``seed`` is not used). ``world``, ``long``,
    ``small``: the world recipe, seeded with ``seed``.
    """
    if profile == "default":
        from xqa.build.corpus import shipped_sample

        return shipped_sample(out, threads=threads).run()
    from xqa.build.world import WorldBuild

    return WorldBuild(out, profile=profile, seed=seed).run()
