"""What a declaration of the registry (:mod:`xqa.methods`) holds: an index kind, a retrieval
method, a tunable setting of a method, and a build step of an index kind.

Plain frozen dataclasses of names, texts and functions; nothing is imported or loaded until a
function is called.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def _always(build: Any) -> bool:
    return True


def _smaller(value: float) -> float:
    return -value


def _general(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class BuildStep:
    """One stage of ``xqa build`` (:class:`xqa.recipes.corpus.CorpusBuild`) that makes (part of) an
    index kind in the build folder.

    ``run(build)`` makes ``build.out / folder`` (the build gives ``out``, ``passages``, ``recipe``,
    ``threads``); ``wanted(build)`` says whether the recipe asks for it (an optional part);
    ``done(build)`` whether it is built (default: the folder is a complete artifact).
    """

    title: str
    folder: str
    run: Callable[[Any], None]
    wanted: Callable[[Any], bool] = _always
    done: Callable[[Any], bool] | None = None

    def is_done(self, build: Any) -> bool:
        if self.done is not None:
            return self.done(build)
        from xqa.artifacts import is_complete

        return is_complete(build.out / self.folder)


@dataclass(frozen=True)
class IndexKind:
    """An index (or model) a retrieval method searches: a *part* of a pipeline.

    - ``name``: what methods list in :attr:`Method.needs` (``sparse``, ``dense``, ...); ``label``: how
      reports name it (default: ``name``);
    - ``flag``: its command-line option (``--sparse-index``), ``alias`` a short spelling also
      accepted by the tuning and diagnosis commands, not shown in ``--help``;
    - ``field``: the :class:`~xqa.config.RetrievalConfig` field that names its folder in
      ``pipeline.json``; ``None`` keeps it under ``retrieval.indexes[name]``;
    - ``load(folder, pipeline)``: the loaded part, given its resolved folder and the
      :class:`~xqa.pipeline.Pipeline` (its ``config``, ``config.path(...)`` and ``component(name)``
      for another part);
    - ``stages``: how ``xqa build`` makes it, in order (none: the build does not make it);
    - ``in_build(build)``: what the built ``pipeline.json`` names for it (default: the folder of
      its last stage when that stage is wanted, else nothing); ``build_hint``: the ``xqa build``
      flags that make a build name it, when the recipe may leave it out.
    """

    name: str
    flag: str
    help: str
    load: Callable[[str, Any], Any]
    field: str | None = None
    alias: str | None = None
    stages: tuple[BuildStep, ...] = ()
    in_build: Callable[[Any], str | None] | None = None
    build_hint: str = ""
    label: str = ""

    @property
    def dest(self) -> str:
        """The argparse destination of :attr:`flag`: the config field, else ``<name>_index``."""
        return self.field or f"{self.name.replace('-', '_')}_index"

    def built_value(self, build: Any) -> str | None:
        if self.in_build is not None:
            return self.in_build(build)
        if self.stages and self.stages[-1].wanted(build):
            return self.stages[-1].folder
        return None


@dataclass(frozen=True)
class Tunable:
    """A weight of a method tuned on dev questions by a grid search
    (:func:`xqa.evaluation.tuning.tune_setting`).

    - ``field``: the retrieval setting (a :class:`~xqa.config.RetrievalConfig` field, else a key of
      ``retrieval.settings`` whose value is ``default`` until set); its flag is ``--field-name``, or
      ``--NAME`` with ``name`` (``aliases``: other flags accepted, unlisted);
    - ``sides``: for the weight of a two-part score hybrid ``first + w·second``, the two index
      kinds (``xqa tune alpha --pair METHOD`` searches each once and re-ranks their union);
    - ``symbol``: how reports write it (α); ``help``: the flag's help; ``title``: the build's tuning
      stage names it so (default: ``symbol (method)``);
    - ``grid()``: the values tried by default; ``tie(value)``: among equal scores the largest
      ``tie`` wins (default: the smaller value); ``fmt``: how a value is printed;
    - ``lists(pipeline, questions, depth, batch_size)``: a fast path, returning a function of the
      value that gives the ranked lists (one per question, ``depth`` long) without searching
      again; ``None``: each value is one search with the method's retriever.
    """

    field: str
    symbol: str
    help: str
    grid: Callable[[], Sequence[float]]
    default: float | None = None
    tie: Callable[[float], Any] = _smaller
    fmt: Callable[[float], str] = _general
    lists: Callable[..., Callable[[float], list]] | None = None
    title: str = ""
    name: str = ""
    aliases: tuple[str, ...] = ()
    sides: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + (self.name or self.field).replace("_", "-")


@dataclass(frozen=True)
class Method:
    """A retrieval method: one name in ``--method``, ``pipeline.json``'s ``retrieval.method`` and
    the demo's list.

    - ``needs``: the index kinds it searches (:class:`IndexKind` names);
    - ``make(parts, fusion)``: its retriever from the loaded parts (``{kind name: part}``) and the
      :class:`~retriever.combined.FusionConfig` (``fusion.setting(name)`` reads a setting of
      ``retrieval.settings``);
    - ``label``: the demo's name of it; ``short``: a report table's column (default: ``label``);
      ``help``: one line on what it does ("Passages are retrieved by ...");
    - ``aliases``: other names reports accept for it;
    - ``tunables``: its settings tuned on dev;
    - ``listed``: offered as a pipeline method (``--method``, the demo, the default method);
      ``False`` for a view that only reports compare (SPAR's Λ half).
    """

    name: str
    needs: tuple[str, ...]
    make: Callable[[dict[str, Any], Any], Any]
    label: str
    help: str
    short: str = ""
    aliases: tuple[str, ...] = ()
    tunables: tuple[Tunable, ...] = ()
    listed: bool = True

    @property
    def column(self) -> str:
        return self.short or self.label

    def tunable(self, field: str | None = None) -> Tunable:
        """The tunable setting ``field`` (default: the method's first)."""
        from xqa.errors import XqaError

        if not self.tunables:
            raise XqaError(f"method {self.name!r} has no tunable setting")
        if field is None:
            return self.tunables[0]
        for t in self.tunables:
            if t.field == field:
                return t
        raise XqaError(f"method {self.name!r} has no tunable setting {field!r}; it has "
                       f"{', '.join(t.field for t in self.tunables)}")
