"""Command-line options shared by the commands, and what they turn into.

- the pipeline a command runs: a pipeline config (``--config``, ``$XQA_CONFIG`` or the embedded
  build's) and/or indexes named on the command line (:func:`add_pipeline_arguments`,
  :func:`add_source_arguments`, :func:`pipeline_config`, :func:`load_pipeline`);
- the questions it reads: files, a language for files that carry none, a selection
  (:func:`add_selection_arguments`, :func:`add_question_arguments`, :func:`read_questions`).

Each index flag and each weight flag comes from its declaration in :mod:`xqa.methods` (an index
kind's short spelling is also accepted by the tuning and diagnosis commands, unlisted in ``--help``).
"""
from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from pathlib import Path

from xqa.cli_config import at_least

# The pipeline config used when the command line names none: $XQA_CONFIG, else the embedded build's.
DEFAULT_CONFIG = "build/embedded/pipeline.json"
CONFIG_ENV = "XQA_CONFIG"


def corpus_options() -> tuple[str, ...]:
    """The argparse destinations of the options that name a corpus: every index kind's, and passages."""
    from xqa.methods import index_kinds

    return (*(k.dest for k in index_kinds()), "passages")


def tuned_settings() -> tuple[str, ...]:
    """The retrieval settings the command line may set: the method, K, SCD's share, every tunable
    weight of :mod:`xqa.methods`, the fallback."""
    from xqa.methods import tunables

    return ("method", "k", "max_frac", *(t.field for _, t in tunables()), "fallback")


CONFIG_HELP = (f"pipeline config JSON (default: ${CONFIG_ENV}, else {DEFAULT_CONFIG}, which 'make demo' "
               "builds; indexes or passages named on the command line without --config are the whole "
               "corpus: no default config is read)")


def add_pipeline_arguments(p: argparse.ArgumentParser, method_default: str | None = None) -> None:
    from xqa.config import NO_FALLBACK
    from xqa.methods import method_names

    methods = method_names()
    g = p.add_argument_group("pipeline")
    g.add_argument("--config", default=None, help=CONFIG_HELP)
    g.add_argument("--method", "--retriever", dest="method", choices=methods, default=method_default,
                   help="retrieval method (default: the config's; for indexes named on the command line "
                        "without --config, the first method that uses the most of them)")
    g.add_argument("--k", type=at_least(1), default=None, help="passages to retrieve (default: the config's)")
    add_index_arguments(g, alias=False)
    g.add_argument("--passages", default=None, help="passages file of those indexes (JSONL or DPR TSV)")
    g.add_argument("--max-frac", type=at_least(0.0, float, 1.0), default=None,
                   help="SCD: share of K open to sparse-only hits")
    add_weight_arguments(g)
    g.add_argument("--fallback", choices=(*methods, NO_FALLBACK), default=None,
                   help="method that searches again for a question the method finds nothing for "
                        f"(default: the config's, dense when it names a dense index; '{NO_FALLBACK}': never)")


def add_weight_arguments(g) -> None:
    """One option per tunable setting of :mod:`xqa.methods` (``--alpha``, ``--mu``, ...)."""
    from xqa.methods import tunables

    finite = at_least(-math.inf, float)   # a weight: any finite number
    for _, t in tunables():
        g.add_argument(t.flag, dest=t.field, type=finite, default=None, help=t.help)
        for alias in t.aliases:
            g.add_argument(alias, dest=t.field, type=finite, default=None, help=argparse.SUPPRESS)


def config_path(args: argparse.Namespace) -> Path | None:
    """The pipeline config a command starts from: ``--config``; else, unless the command line
    names a corpus (indexes or passages), ``$XQA_CONFIG`` or the embedded build's. An explicit
    corpus never mixes with the default config's indexes, passages or fallback. A built folder
    stands for its ``pipeline.json``."""
    if getattr(args, "config", None):
        path = Path(args.config)
    elif any(getattr(args, name, None) for name in corpus_options()):
        return None
    else:
        path = Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)
    from xqa.config import config_file

    return config_file(path)


def missing_config(path: Path, args: argparse.Namespace, more: str = ""):
    """The :class:`~xqa.errors.XqaError` for a pipeline config ``path`` that is not there, naming
    where the path came from: ``--config``, ``$XQA_CONFIG`` or the embedded default's place."""
    from xqa.errors import XqaError

    if getattr(args, "config", None):
        return XqaError(f"{path}: no such pipeline config (--config)")
    if os.environ.get(CONFIG_ENV):
        return XqaError(f"{path}: no such pipeline config (named by ${CONFIG_ENV}); unset it for the embedded "
                        f"default, or point it at a pipeline.json")
    return XqaError(f"{path}: no such pipeline config; run 'make demo' (or 'xqa embedded build') first, "
                    f"or name a config with --config,{more or ' or one with $' + CONFIG_ENV}")


def pipeline_config(args: argparse.Namespace):
    """The :class:`~xqa.config.PipelineConfig` of :func:`config_path` (an empty one for a corpus
    named on the command line), with the command line's corpus and settings applied."""
    from xqa.config import PipelineConfig
    from xqa.errors import XqaError

    path = config_path(args)
    if path is None:
        cfg = PipelineConfig(base_dir=os.getcwd())
    elif path.exists() or getattr(args, "config", None):
        cfg = PipelineConfig.load(path)
    else:
        raise missing_config(path, args, " or indexes with --sparse-index/--dense-index and their --passages")
    from xqa.methods import index_kinds, set_index

    r = cfg.retrieval
    for kind in index_kinds():
        if getattr(args, kind.dest, None):
            set_index(r, kind, os.path.abspath(getattr(args, kind.dest)))
    if getattr(args, "passages", None):
        cfg.passages = os.path.abspath(args.passages)
    if path is None:
        if not cfg.passages:
            raise XqaError("indexes named on the command line need their passages: add --passages FILE "
                           "(or name a pipeline config with --config)")
        if not getattr(args, "method", None):
            from xqa.config import method_for

            r.method = method_for(cfg)
    return cfg


def add_index_argument(g, name: str, alias: bool = True) -> None:
    """The option of the index kind ``name`` (:mod:`xqa.methods`); with ``alias`` its short spelling too."""
    from xqa.methods import index_kind

    kind = index_kind(name)
    g.add_argument(kind.flag, dest=kind.dest, default=None, help=kind.help)
    if alias and kind.alias:
        g.add_argument(kind.alias, dest=kind.dest, default=None, help=argparse.SUPPRESS)


def add_index_arguments(g, alias: bool = True) -> None:
    """The option of every index kind, in declaration order."""
    from xqa.methods import index_kinds

    for kind in index_kinds():
        add_index_argument(g, kind.name, alias)


def add_source_arguments(p: argparse.ArgumentParser, passages_required: bool = False) -> None:
    """The retrievers of the tuning and diagnosis commands: a pipeline config and/or index folders."""
    g = p.add_argument_group("retrievers (a pipeline config, or folders; folders override the config)")
    g.add_argument("--config", default=None, help=CONFIG_HELP)
    add_index_arguments(g)
    g.add_argument("--passages", required=passages_required,
                   help="passage file (JSONL or DPR TSV); default: the config's")


def load_pipeline(args: argparse.Namespace, needed: Sequence[str] = (), say=None):
    """A Pipeline from :func:`pipeline_config` with the settings of :func:`add_pipeline_arguments`
    that the command line gives applied; the index kinds ``needed`` (:mod:`xqa.methods` names:
    sparse, dense, spar, ...) must be named. Loads nothing yet; ``say``: the pipeline's loading
    announcements (:class:`xqa.pipeline.Pipeline`)."""
    from xqa.errors import XqaError
    from xqa.methods import index_flags, index_value
    from xqa.pipeline import Pipeline

    cfg = pipeline_config(args)
    r = cfg.retrieval
    for key in tuned_settings():
        if getattr(args, key, None) is not None:
            if hasattr(r, key):
                setattr(r, key, getattr(args, key))
            else:
                r.settings[key] = getattr(args, key)
    missing = [n for n in needed if not index_value(r, n)]
    if missing:
        raise XqaError(f"no {' / '.join(missing)} index: give {index_flags(missing)} "
                       f"or a --config that names it (looked for {config_path(args) or 'none'})")
    if needed and not cfg.passages:
        raise XqaError("no passage file: give --passages or a --config that names one")
    return Pipeline(cfg, say=say)


def reader_choice(config, value: str | None, say=None, flag: str = "--reader") -> str | None:
    """``--reader``'s value as the name of one of ``config``'s readers (a
    :class:`~xqa.config.PipelineConfig`, changed in place). A name of its readers stays as it is. A
    folder (a reader, a training run's folder, one unpacked with ``xqa reader unpack``, or a packed
    one or a kit run, made over the encoder of the pipeline's dense index by
    :func:`xqa.reader_artifacts.unpacked_reader`) joins
    ``config.readers``, named by its path as given (``NAME=FOLDER``: by NAME), with the default
    reader's settings (passages read, n-best, evidence fusion's weights), or those of the
    ``fusion.json`` it carries (``xqa tune fusion --out FOLDER/fusion.json``), but none of the
    config's calibrators: those were fitted on the default reader's scores, so the folder's
    answers carry no P(right) (``say``, where given, is told so when the config has them). Not a
    reader: an error naming ``flag``, now, before anything loads."""
    from xqa.config import READER_NAME
    from xqa.errors import XqaError

    if value is None or value in config.reader_names():
        return value
    name, sep, folder = value.partition("=")
    if not sep or Path(value).expanduser().exists() or not READER_NAME.fullmatch(name.strip()):
        name, folder = os.path.normpath(value), value
    elif name.strip() in config.reader_names():
        raise XqaError(f"{flag} {value}: {name.strip()!r} is already the name of one of the pipeline's readers "
                       f"({', '.join(config.reader_names())})")
    name = name.strip()
    path = Path(folder).expanduser()
    if not path.exists():
        if sep or os.sep in folder or "/" in folder or folder.startswith((".", "~")):
            raise XqaError(f"{flag} {value}: no such reader folder")
        return value   # an unknown name: reader_config names the readers there are
    if not path.is_dir():
        raise XqaError(f"{flag} {value} is a file; give a reader's folder or the name of one of "
                       f"the pipeline's readers ({', '.join(config.reader_names())})")
    from dataclasses import replace

    from reader.registry import artifact, family_of
    from xqa.recipes.corpus import check_reader, reader_fusion_file, tuned_reader_settings

    check_reader(path, flag)   # what xqa build --reader takes, said as it says it

    fusion = reader_fusion_file(path)   # xqa tune fusion --out FOLDER/fusion.json: how it reads best
    model = path.resolve()
    try:
        role = artifact(path)[1]
    except XqaError:
        role = "reader"
    if role in ("packed", "kit"):   # xqa reader pack's 21.8 MB, or a kit run's shards: made over the
        encoder = pipeline_encoder(config)   # pipeline's encoder, as xqa build does
        if encoder is None:
            raise XqaError(f"{flag} {value}: a {'packed reader' if role == 'packed' else 'reader trained from a kit'}"
                           f", and this pipeline has no converted encoder (its dense index's, or its build's "
                           f"encoder/) to put it onto: "
                           + (f"xqa reader unpack --delta {value} --base ENCODER --out DIR" if role == "packed" else
                              f"xqa reader pack --reader {value} --base ENCODER --out P, then xqa reader unpack "
                              f"--delta P --base ENCODER --out DIR"))
        from xqa.reader_artifacts import unpacked_reader

        model = unpacked_reader(path, encoder, log=say or (lambda line: None))
    family_of(model)   # another kind of xqa folder is said here
    tuned = tuned_reader_settings(fusion.parent) if fusion is not None else {}
    config.readers[name] = replace(config.reader, name=None, model=str(model), answerability=None,
                                   answerable=None, not_found_threshold=None, **tuned)
    if say is not None and (tuned or config.reader.answerability is not None):
        say(f"reader {name}: read with " + (f"the settings of its {fusion}" if tuned else
                                            "the config's reader settings")
            + ("; its answers carry no P(right) (the config's calibrators were fitted on the scores of "
               "the config's own reader, not this one's)"
               if config.reader.answerability is not None else ""))
    return name


def pipeline_encoder(config) -> Path | None:
    """The converted encoder (``xqa convert e5``'s folder) a packed reader or a kit run is put onto
    in this pipeline: the one its dense index was encoded with, else, where that index was encoded
    by another model (a retriever of ``xqa train retriever``), the ``encoder/`` of the build the
    config is in; None where there is neither."""
    import json

    from retriever.dense.encode import resolve_model_dir
    from xqa.artifacts import is_complete
    from xqa.encoders.info import read_info
    from xqa.errors import XqaError

    candidates = []
    index = config.path(config.retrieval.dense_index) if config.retrieval.dense_index else None
    if index is not None and is_complete(index):
        model = json.loads((Path(index) / "config.json").read_text(encoding="utf-8")).get("model")
        try:
            candidates.append(resolve_model_dir(index, model) if isinstance(model, dict) else None)
        except (XqaError, KeyError):
            pass
    if config.base_dir:
        candidates.append(Path(config.base_dir) / "encoder")
    for folder in candidates:
        if folder is not None and is_complete(folder) and read_info(folder) is not None:
            return Path(folder)
    return None


def add_selection_arguments(p: argparse.ArgumentParser) -> None:
    """The group of :class:`xqa.runs.QuestionSelection`'s options (``--where``, ``--per-lang``)."""
    from xqa.cli_config import ConfigCommand
    from xqa.runs import QuestionSelection

    ConfigCommand(QuestionSelection, groups={"question selection": ("where", "per_lang")}).add_arguments(p)


def select_questions(questions: list, where: list[str] | None = None, per_lang: int = 0) -> list:
    """``questions`` whose fields match every ``FIELD=VALUE`` of ``where``, then the first
    ``per_lang`` of each (language as :func:`xqa.records.reads_as` tells it, cross-lingual or not) group, in
    their order. Deterministic, so ``xqa answer`` and ``xqa eval`` given the same flags take the
    same questions."""
    from xqa.errors import XqaError
    from xqa.records import reads_as

    conds = []
    for w in where or []:
        field, sep, value = w.partition("=")
        if not sep or not field:
            raise XqaError(f"--where {w!r}: expected FIELD=VALUE")
        conds.append((field, value))

    def field_of(q, name: str) -> str:
        v = getattr(q, name, None) if name in ("id", "lang", "question") else q.meta.get(name)
        if isinstance(v, bool) or v is None:
            return str(bool(v)).lower()
        return str(v)

    def same(have: str, want: str) -> bool:   # true/false as a record's JSON writes them, or capitalised
        return have == want or (have in ("true", "false") and have == want.lower())

    out = [q for q in questions if all(same(field_of(q, f), v) for f, v in conds)]
    if questions and conds and not out:
        raise XqaError(_selects_nothing(questions, conds, field_of, same))
    if per_lang:
        seen: dict[tuple, int] = {}
        kept = []
        for q in out:
            key = (reads_as(q), bool(q.meta.get("crosslingual")))
            if seen.get(key, 0) < per_lang:
                seen[key] = seen.get(key, 0) + 1
                kept.append(q)
        out = kept
    return out


def _selects_nothing(questions: list, conds: list[tuple[str, str]], field_of, same) -> str:
    """Why ``--where`` kept none of ``questions``: the first condition that no question meets
    alone, with the values its field takes (a misspelt value or field name, most often)."""
    def has(q, name: str) -> bool:
        return name in ("id", "lang", "question") or name in q.meta

    where = " ".join(f"--where {f}={v}" for f, v in conds)
    for name, value in conds:
        if any(same(field_of(q, name), value) for q in questions):
            continue
        if not any(has(q, name) for q in questions):
            fields = sorted({k for q in questions[:1000] for k in q.meta} | {"id", "lang", "question"})
            return (f"{where} selects none of the {len(questions):,} questions: no question has a field "
                    f"{name!r} (their fields: {', '.join(fields[:12])}{', ...' if len(fields) > 12 else ''})")
        values = sorted({field_of(q, name) for q in questions if has(q, name)})
        shown = ", ".join(values[:12]) + (f", ... ({len(values)} values)" if len(values) > 12 else "")
        return f"{where} selects none of the {len(questions):,} questions: {name} takes {shown}"
    return f"{where} selects none of the {len(questions):,} questions: no question meets all of them at once"


def add_question_arguments(p: argparse.ArgumentParser, flag: str = "--dev") -> None:
    """A question file with answers (``flag``), its selection, and the answer matching."""
    p.add_argument(flag, required=True, dest="questions",
                   help="questions with answers (and positive_ids for --metric recall), any question layout")
    p.add_argument("--lang", help="language of question files that carry none")
    p.add_argument("--max-questions", type=at_least(0), default=0, help="use the first N questions only (0: all)")
    add_selection_arguments(p)
    p.add_argument("--match", choices=("dpr", "lang_aware"), default="lang_aware",
                   help="answer matching: DPR's token rule, or substring for unsegmented scripts")


def read_questions(args: argparse.Namespace, languages: Sequence[str] = ()) -> list:
    """The questions the command line names: ``args.questions`` (a file or a list of files; an id
    repeated within or across files is an error) read with ``--lang`` (``auto``: each language
    identified, :func:`identify_languages` onto ``languages``, the pipeline's), selected by ``--where`` and
    ``--per-lang`` (:func:`select_questions`), then the first ``--max-questions``. Options a command
    lacks select nothing; a command with ``--max-questions`` needs at least one question."""
    from xqa.errors import XqaError
    from xqa.io import read_question_files

    paths = [args.questions] if isinstance(args.questions, (str, Path)) else list(args.questions)
    out = read_question_files(paths, lang=getattr(args, "lang", None), auto=True)
    out = identify_languages(out, languages)
    where, per_lang = getattr(args, "where", None), getattr(args, "per_lang", 0)
    if where or per_lang:
        out = select_questions(out, where, per_lang)
    if hasattr(args, "max_questions"):
        if args.max_questions:
            out = out[: args.max_questions]
        if not out:
            raise XqaError(f"{args.questions}: no questions")
    return out


def identify_languages(questions: Sequence, languages: Sequence[str] = (), say=None) -> list:
    """``questions`` with each language left to identify (``--lang auto``: ``lang`` :data:`xqa.records.AUTO_LANG`)
    identified as ``xqa ask`` identifies a question's: :func:`xqa.langid.identify` mapped onto
    ``languages`` (``zh`` → ``zh_cn``; a language without a BM25 index, or none identified: ``und``,
    with the language it reads as in ``meta["identified"]``). ``say``: where the count of each
    language goes (default: stderr)."""
    from collections import Counter
    from dataclasses import replace

    from xqa.records import AUTO_LANG

    todo = [i for i, q in enumerate(questions) if q.lang == AUTO_LANG]
    if not todo:
        return list(questions)
    from xqa.langid import identify, searched_language

    out, counts = list(questions), Counter()
    for i in todo:
        q = out[i]
        lang, identified = searched_language(identify(q.question), languages)
        meta = dict(q.meta)
        if identified:
            meta["identified"] = identified
        out[i] = replace(q, lang=lang, meta=meta)
        counts[f"{lang} ({identified})" if identified else lang] += 1
    line = (f"--lang auto: {len(todo)} question(s) identified as "
            + ", ".join(f"{code} {n}" for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))
    if say is None:
        import sys

        print(line, file=sys.stderr)
    else:
        say(line)
    return out


def write_config_option(help: str):
    """``--write-config``: a switch that has a tuning command store what it found in the
    pipeline config it read (:func:`config_path`); an extra option of the command's
    :class:`~xqa.cli_config.ConfigCommand`, in place of the config's ``write_config`` path."""
    from xqa.cli_config import Option

    return Option(name="write_config", flag="--write-config", kind=bool, default=False, help=help)


def pipeline_config_option():
    """``--config``, the pipeline config, as an extra option of a :class:`~xqa.cli_config.ConfigCommand`."""
    from xqa.cli_config import Option

    return Option(name="config", flag="--config", kind=str, default=None, optional=True, help=CONFIG_HELP)


def add_reading_arguments(p: argparse.ArgumentParser) -> None:
    """How ``xqa tune fusion`` and ``xqa report reader`` read the dev results with a reader: the
    reading fields of :class:`~xqa.evaluation.tuning.FusionTuneConfig`."""
    from xqa.cli_config import ConfigCommand
    from xqa.evaluation.tuning import READING_FIELDS, FusionTuneConfig

    ConfigCommand(FusionTuneConfig, groups={None: READING_FIELDS},
                  exclude=("model", "dev", "out", "passes", "base", "write_config")).add_arguments(p)
