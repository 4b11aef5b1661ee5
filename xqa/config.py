"""Pipeline configuration: typed dataclasses, loadable from JSON, overridable by flags.

A pipeline config names the artifacts (indexes, models, passages) and the
weights tuned on dev (α, μ, β, γ). Relative paths are resolved against the
folder of the config file, so a built folder (e.g. ``build/embedded``) can move.

Full-scale example (``docs/full-scale.md``)::

    {"passages": "/data/mia/passages.jsonl",
     "retrieval": {"method": "spar+scd", "k": 60, "sparse_index": "/data/mia/bm25",
                   "dense_index": "/data/mia/dense", "spar_index": "/data/mia/spar"},
     "reader": {"model": "/models/fid-mt5-base", "n_passages": 20}}
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from xqa.errors import XqaError

from retriever.combined import FusionConfig, FusionSettings

# retrieval.fallback (and xqa --fallback) for "never search again"
NO_FALLBACK = "none"
# The name of a default reader that has no name and no model.
DEFAULT_READER = "default"
# What a reader's name may be (``reader.name``, the keys of ``readers``): it is given on command lines.
READER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
READER_NAME_RULE = "letters, digits, '_', '.', '+' or '-', starting with a letter or digit"
# a model hub name ("google/mt5-base"), where no folder of that name exists
HUB_NAME = re.compile(r"[\w.-]+/[\w.-]+")
PIPELINE_FILE = "pipeline.json"   # what xqa build writes into its folder


@dataclass
class RetrievalConfig(FusionSettings):
    """The ``retrieval`` section: the fusion method and its weights (declared once, in
    :class:`retriever.combined.FusionSettings`), the depth K, the indexes, and the fallback."""

    k: int = 60
    sparse_index: str | None = None
    dense_index: str | None = None
    dense_model: str | None = None  # defaults to the model recorded in the dense index
    spar_index: str | None = None
    roman_index: str | None = None  # cross-script BM25 (xqa index sparse --cross-script)
    dhr_index: str | None = None  # densified lexical + dense vectors in one index (xqa index dhr): dlr, dhr
    pieces_index: str | None = None  # BM25 over e5 pieces, all languages (xqa index pieces): pieces, bm25-aug
    bm25_aug_model: str | None = None  # learned query augmentation (xqa train bm25-aug): bm25-aug
    # folders of registered index kinds (xqa.methods) that have no field above, by kind name
    indexes: dict[str, str] = field(default_factory=dict)
    # settings of registered methods that FusionSettings does not declare, by name
    settings: dict[str, Any] = field(default_factory=dict)
    # A question for which the method finds nothing (every query term unknown to the BM25
    # indexes) is searched again with this method, when the config names its indexes; "none": never.
    fallback: str = "dense"

    def fusion(self, **overrides: Any) -> FusionConfig:
        """The :class:`~retriever.combined.FusionConfig` of these settings, with ``overrides``."""
        extra = tuple(sorted(self.settings.items()))
        return FusionConfig.of(self, **{"extra": extra, **overrides})


@dataclass
class ReaderConfig:
    # the name ``--reader`` and the demo choose this reader by; None: its family's name (the
    # default reader; an entry of ``readers`` is named by its key)
    name: str | None = None
    model: str | None = None
    n_passages: int = 20
    beams: int = 4
    n_best: int = 4
    span_beams: int = 0  # extra candidates from a beam search restricted to passage spans (reader.fid.spans)
    max_answer_len: int = 24
    evidence_fusion: bool = True
    beta: float = 1.0
    gamma: float = 0.0
    miss: float = 0.1  # evidence fusion: mass a candidate keeps in a passage it does not occur in
    soft: bool = False  # evidence fusion: credit a non-span candidate to the passages it attended to
    same_language: float = 0.0  # span evidence fusion: δ added to the logit of a passage in the question's language
    labels: str | None = None  # answer label table: copied answers written in the question's language (xqa.world.labels)
    # P(answer right) from the answer's features (reader.answerability.Calibrator as JSON; xqa tune
    # answerability fits it); None: no calibrated probability, every answer is shown as found.
    answerability: dict[str, Any] | None = None
    # Below this calibrated probability an answer is not shown as confident: xqa answer --abstain
    # writes an empty answer, and the demo and xqa ask show it as uncertain, with its probability ...
    answerability_threshold: float = 0.5
    # P(the collection holds the answer) from the same features (a Calibrator fitted on answerable
    # vs made-unanswerable questions, xqa tune answerability); None: not computed.
    answerable: dict[str, Any] | None = None
    # Below this, an answer is "not found in this collection": a threshold on P(answerable) where the
    # config has that calibrator, else on P(right) (then no higher than answerability_threshold).
    # Fitted so that few answerable questions fall below it. None: not found = below the
    # answerability threshold (no uncertain state).
    not_found_threshold: float | None = None


@dataclass
class PipelineConfig:
    passages: str | None = None
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    # other readers the same pipeline can answer with, by name (xqa ask --reader NAME, the demo's
    # reader selector); each with its own model and settings
    readers: dict[str, ReaderConfig] = field(default_factory=dict)
    languages: list[str] = field(default_factory=list)
    examples: list[dict[str, str]] = field(default_factory=list)  # demo examples: {"question", "lang"}
    tuned: dict[str, Any] = field(default_factory=dict)  # what was tuned on dev, and the result
    about: dict[str, Any] = field(default_factory=dict)  # the collection: passages, languages, sources (demo)
    base_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("base_dir")
        return d

    def save(self, path: str | Path) -> None:
        """Write every field to ``path`` atomically (a temporary file, then a rename); paths are
        written as given, so a relative one stays relative to the file's folder."""
        from xqa.artifacts import write_json_atomic

        write_json_atomic(path, self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any], base_dir: str | Path = "") -> "PipelineConfig":
        d = dict(d)
        unknown = set(d) - ({f.name for f in fields(cls)} - {"base_dir"})
        if unknown:
            raise XqaError(f"unknown pipeline config keys: {sorted(unknown)}"
                           + (" (relative paths resolve against the config file's folder)"
                              if "base_dir" in unknown else ""))
        _check_types(cls, d, "")
        from xqa.langid import LANGUAGE_NAMES

        bad = [c for c in d.get("languages", []) if c not in LANGUAGE_NAMES]
        if bad:
            raise XqaError(f"field 'languages': unknown language code {bad[0]!r}; known codes: "
                           f"{' '.join(sorted(LANGUAGE_NAMES))}")
        _check_examples(d.get("examples", []))
        _check_about(d.get("about", {}))
        retrieval = _sub(RetrievalConfig, d.pop("retrieval", {}), "retrieval")
        reader = _sub(ReaderConfig, d.pop("reader", {}), "reader")
        from xqa import methods

        if not methods.is_method(retrieval.method):
            raise XqaError(f"retrieval.method {retrieval.method!r} is not one of {methods.method_names()}")
        if retrieval.k < 1:
            raise XqaError(f"field 'retrieval.k' should be at least 1, found {retrieval.k}")
        check_retrieval(retrieval)
        _check_reader(reader, "reader")
        readers = _readers(d.pop("readers", {}))
        if retrieval.fallback != NO_FALLBACK and not methods.is_method(retrieval.fallback):
            raise XqaError(f"retrieval.fallback {retrieval.fallback!r} is not {NO_FALLBACK!r} or one of "
                           f"{methods.method_names()}")
        unknown = sorted(set(retrieval.indexes) - {k.name for k in methods.index_kinds() if k.field is None})
        if unknown:
            raise XqaError(f"retrieval.indexes: {unknown} are not registered index kinds without a field of their own")
        cfg = cls(retrieval=retrieval, reader=reader, readers=readers, base_dir=str(base_dir), **d)
        for where, rc in (("reader", reader), *((f"readers.{n}", r) for n, r in readers.items())):
            if rc.model and Path(cfg.path(rc.model)).is_file():
                raise XqaError(f"field '{where}.model': {rc.model} is a file, not a reader (a reader is a folder: "
                               f"an artifact of xqa train reader, its run folder, or a Hugging Face checkpoint)")
        if readers:
            default = cfg.reader_name()
            if default in readers:
                raise XqaError(f"field 'readers': {default!r} is the name of the default reader ('reader.name', "
                               f"else its family's name); give the other reader another name")
        return cfg

    @classmethod
    def load(cls, path: str | Path) -> "PipelineConfig":
        """The config in ``path`` (a built folder: its ``pipeline.json``), checked; its relative
        paths resolve against the file's folder."""
        path = config_file(path)
        if path.is_dir():
            raise XqaError(f"{path}: a folder without {PIPELINE_FILE}; name the pipeline config (a folder "
                           f"that 'xqa build' or 'xqa embedded build' made holds one)")
        if not path.is_file():
            raise XqaError(f"{path}: no such pipeline config (build the embedded default with "
                           f"'xqa embedded build' or write one: docs/full-scale.md)")
        from xqa.io import json_document, json_type

        data = json_document(path)
        if not isinstance(data, dict):
            raise XqaError(f"{path}: a pipeline config is a JSON object, found {json_type(data)}")
        if isinstance(data.get("kind"), str):   # an xqa artifact's config.json
            raise XqaError(f"{path}: an xqa {data['kind']!r} artifact's config, not a pipeline config "
                           f"(xqa build and xqa embedded build write OUT/pipeline.json)")
        try:
            return cls.from_dict(data, base_dir=path.parent)
        except XqaError as e:
            raise XqaError(f"{path}: {e}") from None

    def reader_name(self) -> str:
        """The default reader's name: ``reader.name``, else the family name of its model
        (:func:`reader.registry.family_of`, from the folder's config.json, or the fallback
        family's for a model hub name), else ``"default"`` (a folder that is not there, an empty
        one, or one of a kind no registered family loads is not named after the fallback family;
        loading it says what it is)."""
        if self.reader.name:
            return self.reader.name
        if not self.reader.model:
            return DEFAULT_READER
        folder = Path(self.path(self.reader.model))
        if not folder.exists() and not HUB_NAME.fullmatch(self.reader.model):
            return DEFAULT_READER
        from xqa.artifacts import CONFIG_NAME

        if folder.is_dir() and not any((f / CONFIG_NAME).is_file() for f in (folder, folder / "best")):
            return DEFAULT_READER   # an empty folder is no model of the fallback family's either
        from reader.registry import family_of

        try:
            return family_of(folder).name
        except XqaError:   # a kind no registered family loads: loading it says so; naming it need not
            return DEFAULT_READER

    def reader_names(self) -> list[str]:
        """The readers this config answers with: the default reader's name, then ``readers``'s."""
        return [self.reader_name(), *self.readers]

    def reader_config(self, name: str | None = None) -> ReaderConfig:
        """The :class:`ReaderConfig` of the reader ``name`` (None: the default reader)."""
        if name is not None and name in self.readers:
            return self.readers[name]
        if name is None or name == self.reader_name():
            return self.reader
        raise XqaError(f"unknown reader {name!r}; this pipeline's readers: {', '.join(self.reader_names())}")

    def path(self, value: str | None) -> str | None:
        """Resolve a path from the config against the config file's folder (never the working
        folder: a path missing there is said missing, not taken from wherever the command runs).
        A model hub name (``google/mt5-base``) that is no folder there, nor here, stays as it is."""
        if value is None:
            return None
        p = Path(value)
        if p.is_absolute() or not self.base_dir:
            return str(p)
        candidate = Path(self.base_dir) / p
        if HUB_NAME.fullmatch(value) and not candidate.exists() and not p.exists():
            return value
        return str(candidate)


def config_file(path: str | Path) -> Path:
    """``path``, or the ``pipeline.json`` in it where it is a built folder."""
    path = Path(path)
    return path / PIPELINE_FILE if path.is_dir() and (path / PIPELINE_FILE).is_file() else path


def _check_examples(examples: list) -> None:
    """Each demo example an object with a non-empty ``question`` string (and, if given, a ``lang``
    string): the demo builds its page from them."""
    from xqa.io import json_type

    for i, ex in enumerate(examples):
        where = f"field 'examples[{i}]'"
        if not isinstance(ex, dict):
            raise XqaError(f"{where} should be an object {{\"question\", \"lang\"}}, found {json_type(ex)}")
        if not isinstance(ex.get("question"), str) or not ex["question"].strip():
            raise XqaError(f"{where}: 'question' should be the text of a question")
        if "lang" in ex and not isinstance(ex["lang"], str):
            raise XqaError(f"{where}: 'lang' should be a language code (a string), found {json_type(ex['lang'])}")


def _check_about(about: dict) -> None:
    """``about``'s fields that the demo and ``xqa info`` read, of the types they read them as."""
    from xqa.io import json_type

    n = about.get("passages")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise XqaError(f"field 'about.passages' should be a count of passages, found {json_type(n)} {n!r}")
    languages = about.get("languages")
    if languages is not None and (not isinstance(languages, dict) or any(
            isinstance(v, bool) or not isinstance(v, int) for v in languages.values())):
        raise XqaError("field 'about.languages' should be an object of passage counts by language "
                       "({\"en\": 978, ...})")
    if about.get("description") is not None and not isinstance(about["description"], str):
        raise XqaError(f"field 'about.description' should be a string, found {json_type(about['description'])}")


def _finite(value: float | None) -> bool:
    import math

    return value is None or math.isfinite(value)


def check_retrieval(r: RetrievalConfig, named: Callable[[str], str] | None = None) -> None:
    """The fusion settings of ``r`` in their ranges, and each of ``retrieval.settings`` a setting
    of a registered method: said here, not as a traceback from the search that uses it. ``named``
    says a setting's name as the user gave it (pipeline.json's field, a keyword of
    :meth:`xqa.pipeline.Pipeline.retrieve`; default: ``field 'retrieval.NAME'``)."""
    from retriever.fusion import SCD_ORDERS
    from xqa import methods

    named = named or (lambda name: f"field 'retrieval.{name}'")

    if r.corroborated_order not in SCD_ORDERS:
        raise XqaError(f"{named('corroborated_order')} should be one of {', '.join(SCD_ORDERS)}, "
                       f"found {r.corroborated_order!r}")
    if not 0.0 <= r.max_frac <= 1.0:
        raise XqaError(f"{named('max_frac')} should be a fraction in [0, 1], found {r.max_frac}")
    if r.k_each is not None and r.k_each < 1:
        raise XqaError(f"{named('k_each')} should be at least 1 (or null: k), found {r.k_each}")
    for name in ("alpha", "mu", "roman_weight", "lam"):
        if not _finite(getattr(r, name)):
            raise XqaError(f"{named(name)} should be a finite number, found {getattr(r, name)}")
    for name, value in r.settings.items():
        if methods.tunable_setting(name) is None:
            known = sorted(t.field for _, t in methods.tunables() if not hasattr(r, t.field))
            raise XqaError(f"{named('settings')}: {name!r} is a setting of no retrieval method"
                           + (f" (settings there: {', '.join(known)})" if known else
                              " (no registered method has settings there)"))
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not _finite(value)):
            raise XqaError(f"{named('settings.' + name)} should be a finite number, found {value!r}")


def _check_reader(reader: ReaderConfig, prefix: str) -> None:
    """The counts, calibrators and thresholds of one reader's settings (``prefix``: where they are)."""
    if not 0.0 < reader.miss <= 1.0:
        raise XqaError(f"field '{prefix}.miss' should be in (0, 1], found {reader.miss}")
    for name in ("beta", "gamma", "same_language"):
        if not _finite(getattr(reader, name)):
            raise XqaError(f"field '{prefix}.{name}' should be a finite number, found {getattr(reader, name)}")
    if reader.name is not None and not READER_NAME.fullmatch(reader.name):
        raise XqaError(f"field '{prefix}.name': {reader.name!r} is not a reader name ({READER_NAME_RULE})")
    for name, least in (("n_passages", 1), ("beams", 1), ("n_best", 1), ("max_answer_len", 1), ("span_beams", 0)):
        if getattr(reader, name) < least:
            raise XqaError(f"field '{prefix}.{name}' should be at least {least}, found {getattr(reader, name)}")
    for name in ("answerability", "answerable"):
        if getattr(reader, name) is not None:
            from reader.answerability import Calibrator

            try:
                Calibrator.from_dict(getattr(reader, name))
            except (ValueError, TypeError) as e:
                raise XqaError(f"field '{prefix}.{name}': {e}") from None
    if not 0.0 <= reader.answerability_threshold <= 1.0:
        raise XqaError(f"field '{prefix}.answerability_threshold' should be a probability in [0, 1], "
                       f"found {reader.answerability_threshold}")
    t = reader.not_found_threshold
    if t is not None and reader.answerable is None and not 0.0 <= t <= reader.answerability_threshold:
        raise XqaError(f"field '{prefix}.not_found_threshold' should be a probability no higher than "
                       f"{prefix}.answerability_threshold ({reader.answerability_threshold}), found {t}")
    if t is not None and not 0.0 <= t <= 1.0:
        raise XqaError(f"field '{prefix}.not_found_threshold' should be a probability in [0, 1], found {t}")


def _readers(d: Any) -> dict[str, ReaderConfig]:
    """The ``readers`` section: each entry a reader like ``reader``, named by its key."""
    out = {}
    for name, value in d.items():
        where = f"readers.{name}"
        if not isinstance(name, str) or not READER_NAME.fullmatch(name):
            raise XqaError(f"field 'readers': {name!r} is not a reader name ({READER_NAME_RULE})")
        if not isinstance(value, dict):
            from xqa.io import json_type

            raise XqaError(f"field '{where}' should be an object, found {json_type(value)}")
        rc = _sub(ReaderConfig, value, where)
        _check_reader(rc, where)
        if rc.name is not None and rc.name != name:
            raise XqaError(f"field '{where}.name': {rc.name!r} differs from its key {name!r} (leave it out)")
        if not rc.model:
            raise XqaError(f"field '{where}.model': the reader {name!r} names no model")
        out[name] = rc
    return out


def _sub(cls, d: dict[str, Any], name: str):
    if not isinstance(d, dict):
        raise XqaError(f"pipeline config: {name!r} must be an object")
    known = {f.name for f in fields(cls)}
    unknown = set(d) - known
    if unknown:
        raise XqaError(f"unknown keys in pipeline config {name!r}: {sorted(unknown)}")
    _check_types(cls, d, f"{name}.")
    return cls(**d)


def _check_types(cls, d: dict[str, Any], prefix: str, named: Callable[[str], str] | None = None) -> None:
    """Each value of ``d`` has the type its field of ``cls`` declares (an int passes for a float);
    ``named`` says a field's name (default: pipeline.json's ``field 'PREFIXNAME'``)."""
    named = named or (lambda name: f"field '{prefix}{name}'")
    import types
    import typing

    from xqa.io import json_type

    names = {"str": "a string", "int": "an integer", "float": "a number", "bool": "true or false",
             "list": "a list", "dict": "an object"}
    for f in fields(cls):
        if f.name not in d or f.name in ("retrieval", "reader"):
            continue
        hint = typing.get_type_hints(cls)[f.name]
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        allowed = [typing.get_origin(t) or t for t in (typing.get_args(hint) if union else [hint])]
        value = d[f.name]
        if value is None and type(None) in allowed:
            continue
        ok = any(isinstance(value, t) and not (isinstance(value, bool) and t is not bool) for t in allowed if t is not type(None))
        ok = ok or (float in allowed and isinstance(value, int) and not isinstance(value, bool))
        if not ok:
            want = " or ".join(names.get(t.__name__, t.__name__) if t is not type(None) else "null" for t in allowed)
            raise XqaError(f"{named(f.name)} should be {want}, found {json_type(value)}")


def method_for(cfg: PipelineConfig) -> str:
    """The first retrieval method (in the registry's order, :mod:`xqa.methods`) that uses the most
    of the config's indexes."""
    from xqa import methods

    usable = methods.usable(cfg.retrieval)
    if not usable:
        flags = [k.flag for k in methods.index_kinds() if any(k.name in m.needs and len(m.needs) == 1
                                                              for m in methods.methods())]
        raise XqaError(f"no index to search: name one with {', '.join(flags[:-1])} or {flags[-1]}")
    return max(usable, key=lambda m: len(methods.needs(m)))
