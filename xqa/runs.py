"""Runs over whole question sets: search them (the DPR / FiD result layout) and answer them.

:func:`answer_questions` is resumable: every finished batch is appended to
``OUT/records.jsonl`` (flushed and synced), and a rerun skips the questions already there, so
a killed run continues where it stopped with nothing duplicated or lost. When all questions
are answered the predictions are written in the MIA submission layout: one JSON object per
language mapping id → answer (``OUT/predictions/{lang}.json``), and all of them in
``OUT/predictions.json``. Under ``torchrun`` the processes share every round of questions;
rank 0 writes.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xqa.errors import XqaError

SEARCH_BATCH_SIZE = 64  # questions per search call


def warn_unaskable(questions: Sequence, command: str, outcome: str) -> list[str]:
    """The ids of ``questions`` with nothing to search for (:func:`xqa.pipeline.askable`), said once on
    stderr (by rank 0 of a torchrun job) with what ``command`` does with them (``outcome``)."""
    import sys

    from xqa.distributed import main_process
    from xqa.pipeline import askable

    blank = [q.id for q in questions if not askable(q.question)]
    if blank and main_process():
        shown = ", ".join(map(repr, blank[:5])) + (f" and {len(blank) - 5} more" if len(blank) > 5 else "")
        print(f"xqa {command}: warning: {len(blank)} of {len(questions)} questions have nothing to search for "
              f"(blank, or no letter or digit): {shown}; {outcome}", file=sys.stderr)
    return blank


def search_questions(pipe, questions: Sequence, out: str | Path | None = None, trec: str | Path | None = None,
                     batch_size: int = SEARCH_BATCH_SIZE, progress: bool = True) -> list:
    """Retrieve passages for ``questions`` with ``pipe`` (a :class:`~xqa.pipeline.Pipeline`), in
    batches of ``batch_size``; the :class:`~xqa.records.RetrievalResult` list, also written to
    ``out`` (``.json`` list or ``.jsonl``) and as a TREC run to ``trec`` when given."""
    from tqdm.auto import tqdm

    from xqa.io import write_results, write_trec_run
    from xqa.pipeline import askable
    from xqa.records import RetrievalResult

    if trec is not None:   # said before anything is searched
        from xqa.io import check_trec_id

        for q in questions:
            check_trec_id(q.id, "question")
        for pid in pipe.store.ids():   # any of them may be found
            check_trec_id(pid, "passage")
    results = []
    with tqdm(total=len(questions), desc=f"search ({pipe.config.retrieval.method})", unit="q",
              disable=not progress) as bar:
        for i in range(0, len(questions), batch_size):
            chunk = questions[i:i + batch_size]
            searched = [q for q in chunk if askable(q.question)]   # nothing to search for: no passages
            found = dict(zip((q.id for q in searched), pipe.retrieve(searched))) if searched else {}
            for q in chunk:
                results.append(RetrievalResult(q, tuple(found.get(q.id, ()))))
            bar.update(len(chunk))
    if out is not None:
        write_results(out, results)
    if trec is not None:
        write_trec_run(trec, results, tag=pipe.config.retrieval.method)
    return results


# The fields' metadata are the options of ``xqa search``, ``answer`` and ``ask`` (:mod:`xqa.cli_config`).
@dataclass
class QuestionFiles:
    """The question files a run reads (:func:`xqa.cli_options.read_questions`)."""

    questions: list[str] = field(metadata={
        "nargs": "+", "help": "question files (XOR/MIA/MKQA JSONL, SQuAD JSON, NQ-open JSONL, EntityQuestions "
                                   "JSON, DPR's question TSV (.tsv/.csv), a question a line (.txt, with --lang))"})
    lang: str | None = field(default=None, metadata={
        "help": "language of questions whose records carry none; 'auto': identify each one's, as xqa ask does "
                "(a language the pipeline has no BM25 index for: searched as 'und')"})


@dataclass
class QuestionSelection:
    """Which of the questions read a run takes (:func:`xqa.cli_options.select_questions`)."""

    where: list[str] = field(default_factory=list, metadata={
        "append": True, "metavar": "FIELD=VALUE",
        "help": "only questions whose record has FIELD equal to VALUE (e.g. split=test, "
                "crosslingual=true, lang=de); repeatable"})
    per_lang: int = field(default=0, metadata={
        "metavar": "N", "help": "only the first N selected questions of each language (and of each side of "
                                "crosslingual) in file order (0: all)"})


@dataclass
class SearchConfig:
    """Where :func:`search_questions`' results go (``xqa search``)."""

    out: str = field(metadata={"help": "results file: .json (list) or .jsonl"})
    trec: str | None = field(default=None, metadata={"help": "also write a TREC run file here"})
    batch_size: int = field(default=SEARCH_BATCH_SIZE, metadata={"min": 1, "help": "questions per search call"})


READER_HELP = ("the reader that answers: by name, the pipeline config's reader (reader.name, else its "
               "family's name) or one of its readers; or a reader's folder (a trained or adapted reader, "
               "e.g. xqa train reader's OUT, a --kit run's too, or a packed one: these made over the pipeline's "
               "encoder), read "
               "with the config's reader settings (or its own fusion.json's, from xqa tune fusion), its "
               "answers without P(right) (default: the config's reader)")


@dataclass
class AskConfig:
    """One question for :meth:`xqa.pipeline.Pipeline.ask` and how ``xqa ask`` shows its answer."""

    question: str = field(metadata={"positional": True, "help": (
        "the question, in any language; '-': the questions of standard input, one a line, each "
        "answered as it comes with the pipeline loaded once (--json: one record a line, its id the "
        "line number)")})
    lang: str = field(default="auto", metadata={
        "help": "the question's language code, 'auto' to identify it, or 'und' (unknown: BM25 searches "
                "the index of every language written in the question's script, as when the language is not "
                "identified among the pipeline's)"})
    n_passages: int | None = field(default=None, metadata={"min": 1, "help": "passages given to the reader"})
    reader: str | None = field(default=None, metadata={"metavar": "NAME|FOLDER", "help": READER_HELP})
    show: int = field(default=5, metadata={"help": "evidence passages to print"})
    json: bool = field(default=False, metadata={"help": "print the answer record as JSON"})


@dataclass
class AnswerConfig:
    out: str = field(metadata={"help": "output folder (records.jsonl, predictions/)"})
    batch_size: int = field(default=16, metadata={"min": 1, "help": "questions per batch"})
    n_passages: int | None = field(default=None, metadata={"min": 1,   # None: the config's
        "help": "passages given to the reader"})
    reader: str | None = field(default=None, metadata={"metavar": "NAME|FOLDER", "help": READER_HELP})
    evidence_fusion: bool = field(default=True, metadata={
        "help": "answer with the reader's own best candidate (for comparison)"})
    evidence: int = field(default=5, metadata={"help": "evidence passages kept per record"})
    abstain: bool = field(default=False, metadata={
        "help": "write an empty prediction where the calibrated probability that the answer is right "
                "is below the config's reader.answerability_threshold (the records keep the best "
                "guess either way; the MIA metric counts an empty answer as wrong)"})
    hide_gold: bool = field(default=False, metadata={
        "help": "answer as if the collection lacked each question's own paragraphs (its positive_ids "
                "and those of its parallel versions, xling.*.positive_ids): the made-unanswerable "
                "half that xqa tune answerability and xqa eval --selective read"})
    submission: bool = field(default=False, metadata={
        "help": "also write OUT/submission.json, the MIA 2022 shared task's eval.ai submission: "
                "{\"xor-tydi\": {id: answer}, \"mkqa-LANG\": {id: answer}, ...} (a question is MKQA's by its "
                "'source', else by an id NUMBER_LANG, as xqa eval --mia splits them)"})


@dataclass
class Answered:
    """What :func:`answer_questions` did: the questions' ids, how many a previous run had
    answered, and predictions per language (empty on processes other than rank 0)."""

    ids: list[str]
    resumed: int
    counts: dict[str, int]
    empty: int = 0                   # with abstain: predictions left empty


RUN_FILE = "run.json"   # in an xqa answer folder: the settings its records were answered with


def answer_questions(pipe, questions: Sequence, config: AnswerConfig,
                     settings: dict[str, Any] | None = None) -> Answered:
    """Answer ``questions`` with ``pipe`` (a Pipeline, or a function that makes one, called only
    if a question is left to answer) into ``config.out``, resuming a run there; then write the
    predictions. ``settings``: what shapes the answers (:func:`answer_settings`), kept in
    ``run.json``; resuming a run made with other settings is an error. Another process answering
    into the same folder is an error too (an OS lock, :func:`xqa.artifacts.exclusive`)."""
    from xqa.artifacts import exclusive
    from xqa.distributed import main_process

    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise XqaError(f"question id {dup!r} occurs more than once in the question set")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    with (exclusive(out, f"{out} is being written by another xqa answer") if main_process()
          else contextlib.nullcontext()):   # under torchrun rank 0 alone writes
        return _answer_into(pipe, questions, ids, out, config, settings)


def _answer_into(pipe, questions: Sequence, ids: list[str], out: Path, config: AnswerConfig,
                 settings: dict[str, Any] | None) -> Answered:
    """:func:`answer_questions` in ``out``, which this process alone writes."""
    from tqdm.auto import tqdm

    from xqa.distributed import init_distributed, main_process, map_sharded

    records = out / "records.jsonl"
    finished = done_ids(records)
    if finished:
        with open(records, encoding="utf-8") as f:
            hidden = bool(json.loads(f.readline()).get("gold_hidden"))
        if hidden != config.hide_gold:
            raise XqaError(f"{records} holds answers {'with' if hidden else 'without'} --hide-gold; resume it "
                           f"{'with' if hidden else 'without'} the flag, or answer into another --out")
        with open(records, encoding="utf-8") as f:
            reader = json.loads(f.readline()).get("reader")
        if reader != config.reader:
            raise XqaError(f"{records} holds answers of " + (f"--reader {reader}" if reader else "the config's reader")
                           + "; resume it with " + (f"--reader {reader}" if reader else "no --reader")
                           + ", or answer into another --out")
    if settings is not None:
        _check_run_settings(out, settings, resuming=bool(finished))
    if finished:
        _check_same_questions(records, questions)
    todo = [q for q in questions if q.id not in finished]
    if finished and main_process():
        others = len(finished) - (len(questions) - len(todo))
        print(f"resuming: {len(questions) - len(todo)} of {len(questions)} questions already answered"
              + (f" ({records.name} also holds {others} answer{'s' if others != 1 else ''} to other questions)"
                 if others else ""))
    info = init_distributed()  # under torchrun: join the job (and on GPUs take this process's own) before loading
    if todo and callable(pipe) and not hasattr(pipe, "answer"):
        pipe = pipe()
    if todo and config.hide_gold and getattr(pipe, "store", None) is not None:
        check_hidden(todo, pipe.store)
    # Under torchrun each process answers a strided share of every round of world x batch-size
    # questions; rank 0 gathers the records, in order, and alone writes them.
    main = info.main
    step = config.batch_size * info.processes
    with (open(records, "a", encoding="utf-8") if main else contextlib.nullcontext()) as f, \
            tqdm(total=len(questions), initial=len(questions) - len(todo), desc="answer", unit="q",
                 disable=not main) as bar:
        written = len(questions) - len(todo)
        try:
            for i in range(0, len(todo), step):
                batch = todo[i:i + step]
                lines = map_sharded(lambda share: answer_lines(pipe, share, config), batch)
                if lines is None:
                    continue
                f.write("".join(lines))
                f.flush()
                os.fsync(f.fileno())
                bar.update(len(batch))
                written += len(batch)
        except KeyboardInterrupt:
            if main:
                bar.close()
                print(f"{out}: stopped with {written} of {len(questions)} questions answered (in {records.name}); "
                      f"the same command resumes", file=sys.stderr, flush=True)
            raise
    if not main:
        return Answered(ids, len(finished), {})
    counts = write_predictions(out, records, ids, abstain=config.abstain)
    empty = 0
    if config.abstain:
        with open(out / "predictions.json", encoding="utf-8") as f:
            empty = sum(not a for a in json.load(f).values())
    return Answered(ids, len(finished), counts, empty)


def answer_settings(pipeline_config, config: AnswerConfig, reader_folder: bool = False) -> dict[str, Any]:
    """What shapes the records of an ``xqa answer`` run: the pipeline's passages, languages,
    retrieval and readers (command-line overrides applied; paths resolved against the config's
    folder) and the answering options (passages read, evidence passages kept, evidence fusion,
    reader, --hide-gold).
    ``reader_folder``: the reader was given as a folder (``--reader DIR``), whose files are
    stamped too (:func:`xqa.artifacts.files_stamp`), so that a reader trained again in it is not
    taken for the one a resumed run began with."""
    d = pipeline_config.to_dict()
    reader = pipeline_config.reader_config(config.reader)
    n_passages = config.n_passages or reader.n_passages   # as read
    answer = {"n_passages": n_passages, "evidence_fusion": config.evidence_fusion, "reader": config.reader,
              "hide_gold": config.hide_gold, "evidence": config.evidence}
    if reader_folder and reader.model and Path(reader.model).is_dir():
        from reader.registry import resolve
        from xqa.artifacts import files_stamp
        from xqa.reader_artifacts import unpacked_identity

        answer["reader_files"] = (unpacked_identity(reader.model)   # a packed reader: its packed files
                                  or files_stamp(resolve(reader.model)[1]))   # a training run: its best/
    return {"pipeline": {k: d[k] for k in ("passages", "languages", "retrieval", "reader", "readers")},
            "folder": str(Path(pipeline_config.base_dir or ".").resolve()), "answer": answer,
            BUILT: built_stamps(pipeline_config, reader)}


BUILT = "built"   # run.json settings: when each index, the passages and the reader were written


def built_stamps(pipeline_config, reader) -> dict[str, str]:
    """The size and modification time of what each of the pipeline's parts was written with (an
    index's or a model's ``config.json``, which xqa writes last; the passages file), by the
    config's name for it: what tells a pipeline rebuilt in place (``xqa build`` again with
    another ``--dense-model``, ``--reader`` or passages) from the one a run began with, without
    reading any of it. A packed reader unpacked into the temporary directory is stamped by what it
    was made from (:func:`xqa.reader_artifacts.unpacked_identity`). A part that is not there is
    left out (loading it is what fails then)."""
    r = pipeline_config.retrieval
    parts = {"passages": pipeline_config.passages, "reader.model": reader.model,
             **{f"retrieval.{name}": getattr(r, name) for name in (
                 "sparse_index", "dense_index", "dense_model", "spar_index", "roman_index", "dhr_index",
                 "pieces_index", "bm25_aug_model")},
             **{f"retrieval.indexes.{kind}": folder for kind, folder in sorted(r.indexes.items())}}
    from xqa.reader_artifacts import unpacked_identity

    stamps = {}
    for name, value in parts.items():
        path = Path(pipeline_config.path(value)) if value else None
        made_from = unpacked_identity(path) if path is not None else None
        if made_from:   # made again alike where the temporary directory was emptied between runs
            stamps[name] = made_from
            continue
        if path is not None and path.is_dir():
            path = path / "config.json"
        if path is not None and path.is_file():
            st = path.stat()
            stamps[name] = f"{st.st_size}:{st.st_mtime_ns}"
    return stamps


def _check_run_settings(out: Path, settings: dict[str, Any], resuming: bool) -> None:
    """Keep ``settings`` in ``out/run.json``; where a resumed run there was answered with others,
    an error naming what differs (a folder without run.json is resumed as it is)."""
    from xqa.artifacts import write_json_atomic
    from xqa.distributed import main_process

    path = out / RUN_FILE
    stored = json.loads(path.read_text(encoding="utf-8")).get("settings") if path.is_file() else None
    if resuming and stored is not None and BUILT not in stored:   # kept by an xqa that did not stamp them
        settings = {k: v for k, v in settings.items() if k != BUILT}
    if resuming and isinstance((stored or {}).get("answer"), dict) and isinstance(settings.get("answer"), dict):
        # an answering option a run.json was written without (by an xqa that did not record it)
        settings = {**settings, "answer": {k: v for k, v in settings["answer"].items() if k in stored["answer"]}}
    if resuming and stored is not None and stored.get("folder", settings.get("folder")) != settings.get("folder"):
        raise XqaError(f"{out} holds answers of the pipeline in {stored['folder']}, not of the one in "
                       f"{settings['folder']}: a resumed run would mix the two pipelines' answers; answer into "
                       f"another --out")
    if resuming and stored is not None and stored.get(BUILT, {}) != settings.get(BUILT, {}):
        before, now = stored[BUILT], settings[BUILT]
        again = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
        raise XqaError(f"{out} holds answers of a pipeline whose {', '.join(again)} "
                       f"{'was' if len(again) == 1 else 'were'} written again since (rebuilt in place): a resumed "
                       f"run would mix the two pipelines' answers; answer into another --out")
    if resuming and stored is not None and stored != settings:
        shown = said_changes(changed_settings(stored, settings).values())
        raise XqaError(f"{out} holds answers made with other settings ({shown}): resume it with the "
                       f"same, or answer into another --out")
    if (stored is None or not resuming) and main_process():
        write_json_atomic(path, {"settings": settings})


def changed_settings(old: dict[str, Any], new: dict[str, Any], ignore: Collection[str] = ()) -> dict[str, str]:
    """Each setting that differs between two records of settings (nested objects as dotted
    names; a name in ``ignore`` is skipped), by name: "name old → new"."""
    a, b = _flat(old), _flat(new)
    return {k: f"{k} {_short(a.get(k))} → {_short(b.get(k))}" for k in sorted(set(a) | set(b))
            if k not in ignore and a.get(k) != b.get(k)}


def said_changes(changes: Iterable[str], shown: int = 3) -> str:
    """The first ``shown`` of ``changes`` (:func:`changed_settings`'s), and how many more."""
    changes = list(changes)
    more = f" and {len(changes) - shown} more" if len(changes) > shown else ""
    return "; ".join(changes[:shown]) + more


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    """``d`` with nested objects flattened into dotted keys."""
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) and v else {f"{prefix}{k}": v})
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def _check_same_questions(records: Path, questions: Sequence) -> None:
    """An error where a question the records answered under an id is another question now (a
    file edited, or another file of the same name: ids such as ``STEM:LINE`` name a line, not
    its question): resumed, its old answer would be kept for the new question."""
    asked = {q.id: q.question for q in questions}
    changed = []
    with open(records, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            rec = json.loads(line)
            was, now = rec.get("question"), asked.get(rec.get("id"))
            if isinstance(was, str) and now is not None and was.strip() != now.strip():
                changed.append((n, rec["id"], was, now))
    if changed:
        n, qid, was, now = changed[0]
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        raise XqaError(f"{records}:{n}: question {qid!r} was answered as {was[:80]!r}, and is now {now[:80]!r}"
                       f"{more}: the questions changed under the same ids since this run began; answer into "
                       f"another --out, or delete {records.parent} to answer them afresh")


def done_ids(records: Path) -> set[str]:
    """Ids already answered; a torn last line (a kill mid-write, a full disk) is cut off, and so is
    a last line without its newline, which the next record would otherwise be glued to."""
    if not records.is_file():
        return set()
    ids, good = set(), 0
    with open(records, "rb") as f:
        for line in f:
            try:
                if not line.endswith(b"\n"):
                    break
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
                break
            good += len(line)
    if good != records.stat().st_size:
        with open(records, "r+b") as f:
            f.truncate(good)
    return ids


def score_line(questions: Sequence, out: Path, gold_args: str = "--gold QUESTIONS") -> str | None:
    """One line of the official MIA 2022 EM/F1 of ``out/predictions.json`` on ``questions`` (those
    with gold answers; macro-averaged over their languages, as ``xqa eval`` reports), or None
    where no question has answers. ``gold_args``: the ``xqa eval`` options that name the same
    questions (the files and their selection), for the command the line suggests."""
    from xqa.evaluation.languages import KNOWN_LANGUAGES
    from xqa.evaluation.mia import evaluate

    from dataclasses import replace

    from xqa.records import reads_as

    # each question in the language it reads as (--lang auto: not the und it was searched as), as
    # xqa eval --lang auto, which knows no pipeline, identifies it
    gold = [replace(q, lang=reads_as(q)) for q in questions if q.answers]
    scored = [q for q in gold if q.lang in KNOWN_LANGUAGES]   # a language the metric segments (not und)
    if not scored:
        return None
    predictions = json.loads((out / "predictions.json").read_text(encoding="utf-8"))
    scores = evaluate(scored, predictions)
    if not scores.n:
        return None
    langs = len(scores.per_language)
    unscored = sorted({q.lang for q in gold} - KNOWN_LANGUAGES)
    left = (f"; {len(gold) - len(scored)} in {', '.join(unscored)}, which the metric does not score, left out"
            if unscored else "")
    return (f"official MIA EM {scores.macro_em:.2f} / F1 {scores.macro_f1:.2f} on the {scores.n} question(s) with "
            f"answers (macro over {langs} language{'s' if langs != 1 else ''}{left}; xqa eval {gold_args} "
            f"--predictions {out / 'predictions.json'} scores each language)")


def write_predictions(out: Path, records: Path, order: list[str], abstain: bool = False) -> dict[str, int]:
    """The predictions of ``records`` in ``order``; with ``abstain``, an empty answer where the
    record says the answer is not ``answered`` (below the calibrated threshold). ``predictions/``
    is written anew as a whole: it holds this run's languages only, as ``predictions.json`` holds
    this run's questions only (``records.jsonl`` may hold more: earlier runs into the folder)."""
    from xqa.artifacts import atomic_dir, write_json_atomic

    by_id = {}
    with open(records, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            by_id[r["id"]] = r

    def shown(r: dict) -> str:
        return "" if abstain and r.get("answered") is False else r["answer"]

    per_lang: dict[str, dict[str, str]] = {}
    for qid in order:
        r = by_id[qid]
        per_lang.setdefault(r["lang"], {})[qid] = shown(r)
    with atomic_dir(out / "predictions", overwrite=True) as tmp:
        for lang, preds in per_lang.items():
            write_json_atomic(tmp / f"{lang}.json", preds)
    write_json_atomic(out / "predictions.json", {qid: shown(by_id[qid]) for qid in order})
    return {lang: len(p) for lang, p in per_lang.items()}


# The subsets of an MIA 2022 eval.ai submission (the shared task's README, "Submission").
MIA_SUBSETS = ("xor-tydi", *(f"mkqa-{lang}" for lang in
                             ("ar", "en", "es", "fi", "ja", "km", "ko", "ms", "ru", "sv", "tr", "zh_cn")))


def write_submission(out: Path, questions: Sequence) -> tuple[dict[str, int], list[str]]:
    """``out/submission.json`` from ``out/predictions.json`` (the answers as written, --abstain's
    empty ones included): the questions of MKQA (:func:`xqa.evaluation.mia.is_mkqa`) under
    ``mkqa-LANG``, the others under ``xor-tydi``, each keyed by the question's id. Returns the
    predictions per subset and the subsets of :data:`MIA_SUBSETS` it lacks."""
    from xqa.artifacts import write_json_atomic
    from xqa.evaluation.mia import is_mkqa

    predictions = json.loads((out / "predictions.json").read_text(encoding="utf-8"))
    parts: dict[str, dict[str, str]] = {}
    for q in questions:
        parts.setdefault(f"mkqa-{q.lang}" if is_mkqa(q) else "xor-tydi", {})[q.id] = predictions[q.id]
    write_json_atomic(out / "submission.json", parts)
    return {k: len(v) for k, v in parts.items()}, [k for k in MIA_SUBSETS if k not in parts]


def gold_passages(q) -> set[str]:
    """A question's own passages and those of its parallel versions (``positive_ids``,
    ``xling.{lang}.positive_ids``), which ``--hide-gold`` removes from the collection."""
    from xqa.errors import XqaError

    ids = set(q.meta.get("positive_ids") or [])
    for version in (q.meta.get("xling") or {}).values():
        if isinstance(version, dict):
            ids.update(version.get("positive_ids") or [])
    if not ids:
        raise XqaError(f"question {q.id!r} names no positive_ids: --hide-gold needs each question's own "
                       f"passage ids")
    return ids


def check_hidden(questions: Sequence, store) -> None:
    """``--hide-gold`` hides something of every question: each names (``positive_ids``) a passage
    of the collection ``store``. A question of another collection (MLQA's own paragraph ids,
    say) would be answered as it is and recorded as made unanswerable, mislabelling what
    ``xqa tune answerability`` and ``xqa eval --selective`` learn from."""
    from xqa.pipeline import askable

    missing = [q for q in questions if askable(q.question) and not any(pid in store for pid in gold_passages(q))]
    if missing:
        shown = "; ".join(f"{q.id!r} names {sorted(gold_passages(q))[0]!r}" for q in missing[:3])
        raise XqaError(f"--hide-gold: {len(missing)} of {len(questions)} questions name no passage of this "
                       f"collection in positive_ids ({shown}), so nothing of theirs would be hidden: answer "
                       f"questions about these passages (xqa/corpus/questions.jsonl.gz for the shipped ones), "
                       f"or leave out --hide-gold")


def answer_lines(pipe, batch: list, config: AnswerConfig) -> list[str]:
    """One ``records.jsonl`` line per question of ``batch``: an empty answer for a question with nothing
    to search for (blank, or no letter or digit: :func:`xqa.pipeline.askable`)."""
    from xqa.pipeline import askable
    from xqa.records import NOT_FOUND

    answerable = [q for q in batch if askable(q.question)]
    hide = config.hide_gold
    fuse = False if not config.evidence_fusion else None
    exclude = [gold_passages(q) for q in answerable] if hide else None
    chosen = {} if config.reader is None else {"reader": config.reader}  # None: the config's reader
    answers = {a.question_id: a for a in pipe.answer(answerable, n_passages=config.n_passages, evidence_fusion=fuse,
                                                      exclude=exclude, **chosen)} if answerable else {}
    lines = []
    for q in batch:
        a = answers.get(q.id)
        rec = {"id": q.id, "lang": q.lang, "question": q.question, "answer": a.text if a else "",
               "score": a.score if a else 0.0, "confidence": a.confidence if a else None,
               "answered": a.answered if a else False, "found": a.found if a else False,
               "answerable": a.answerable if a else None, "state": a.state if a else NOT_FOUND,
               "gold": list(q.answers)}
        if hide:
            rec["gold_hidden"] = True
        if config.reader is not None:
            rec["reader"] = config.reader
        if q.meta.get("crosslingual"):
            rec["crosslingual"] = True
        if q.meta.get("identified"):  # --lang auto: searched as und, reads as this
            rec["identified"] = q.meta["identified"]
        if a:
            d = a.to_dict()
            rec["candidates"] = d["candidates"]
            rec["evidence"] = d["evidence"][: config.evidence]
            if a.features:
                rec["features"] = a.features
        lines.append(json.dumps(rec, ensure_ascii=False) + "\n")
    return lines


