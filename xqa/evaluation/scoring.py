"""What ``xqa eval`` does: score the predictions, retrieval results, comparisons, sweeps and
selective-answering records its :class:`EvalConfig` names, and the text of the report
(:mod:`xqa.evaluation.report`), with ``--json`` figures and a ``--report`` folder written.

Every input is read and scored before anything is shown: :func:`evaluate` returns the lines
to print, and a bad input is an error with nothing half printed.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xqa.errors import XqaError
from xqa.runs import QuestionSelection

_PATH, _FILE = "PATH", "FILE"


# The fields' metadata are the options of ``xqa eval`` (:mod:`xqa.cli_config`); QuestionSelection's
# (--where, --per-lang) select the gold questions.
@dataclass
class EvalConfig(QuestionSelection):
    # end-to-end (MIA 2022 official EM / F1)
    gold: list[str] | None = field(default=None, metadata={
        "nargs": "+", "metavar": _PATH,
        "help": "gold question files or folders (XOR-TyDi/MIA/MKQA JSONL and the other "
                "layouts xqa reads); needed by --predictions, --compare and --sweep"})
    lang: str | None = field(default=None, metadata={
        "help": "language of --gold questions whose records carry none (it decides how answers are "
                "segmented and the per-language table); 'auto': identify each one's, as xqa answer "
                "--lang auto does"})
    predictions: list[str] | None = field(default=None, metadata={
        "nargs": "+", "metavar": _PATH,
        "help": "predictions of one system: JSON objects id -> answer (one file, several "
                "per-language files or a folder of them), an MIA submission file, "
                "JSONL answer records {id, answer}, or an xqa answer folder (its predictions.json)"})
    mode: str = field(default="official", metadata={
        "choices": ("official", "lang_aware"),
        "help": "official: segment exactly the codes the MIA scripts know (ja, zh_cn/hk/tw, "
                "th, km; a bare zh is split on white space); lang_aware: also segment zh"})
    mia: bool = field(default=False, metadata={
        "help": "score the gold as the MIA 2022 evaluation: XOR-TyDi and MKQA questions "
                "(source field, else ids <number>_<lang>) as two parts; the MIA score is "
                "the mean of the two macro averages"})
    coverage: bool = field(default=False, metadata={
        "help": "check, without scoring, that every --gold question (answers not needed, e.g. "
                "a test set) has one non-empty string prediction; lists what is missing per "
                "language and exits 1 if anything is"})
    per_question: bool = field(default=False, metadata={
        "help": "include every question's EM and F1 in the --json output"})
    # retrieval
    retrieval: list[str] | None = field(default=None, metadata={
        "nargs": "+", "metavar": _FILE,
        "help": "retrieval-result files (JSON list or JSONL, DPR/FiD layout), one per method"})
    names: list[str] | None = field(default=None, metadata={
        "nargs": "+", "metavar": "NAME", "help": "a name for each --retrieval file (default: the file names)"})
    k: list[int] = field(default_factory=lambda: [1, 5, 20, 100], metadata={
        "nargs": "+", "metavar": "K", "min": 1, "help": "cut-offs for top-k accuracy, recall@k and MRR@k"})
    match: str = field(default="dpr", metadata={
        "choices": ("dpr", "lang_aware"),
        "help": "answer matching: DPR's has_answer, or substring matching for ja/zh/th/km/ko"})
    default_lang: str | None = field(default=None, metadata={
        "metavar": "CODE", "help": "language of result records that carry no 'lang' (e.g. DPR's own files)"})
    # significance
    compare: list[str] | None = field(default=None, metadata={
        "nargs": 2, "metavar": ("PRED_A", "PRED_B"),
        "help": "paired t-test between two systems' per-question scores on --gold "
                "(each a prediction file or folder)"})
    metric: str = field(default="f1", metadata={
        "choices": ("f1", "em"), "help": "per-question score compared by --compare"})
    # selective answering
    selective: list[str] | None = field(default=None, metadata={
        "nargs": "+", "metavar": "RECORDS",
        "help": "xqa answer records (OUT/records.jsonl or OUT): coverage-accuracy, AURC, ECE and, "
                "given a --hide-gold run too, AUROC of answerable vs made-unanswerable questions, for "
                "the calibrated confidence and the fused probability; right = official F1 >= 0.5"})
    plot: str | None = field(default=None, metadata={
        "metavar": "PNG",
        "help": "--selective: the reliability diagram and coverage-accuracy curve (default: "
                "selective.png beside the first records file)"})
    calibrator: str | None = field(default=None, metadata={
        "metavar": _PATH,
        "help": "--selective: score the records' features with this calibrator instead of the "
                "confidence they carry: a pipeline config (its reader.answerability and threshold) "
                "or xqa tune answerability's output folder"})
    threshold: float | None = field(default=None, metadata={"min": 0.0, "max": 1.0,
        "help": "--selective: count as shown the answers whose confidence is at least this "
                "(default: the records' own 'answered' flags, i.e. the config's threshold)"})
    not_found_threshold: float | None = field(default=None, metadata={"min": 0.0, "max": 1.0,
        "help": "--selective: count as not found the answers whose probability that the question is "
                "answerable from the collection (the records' 'answerable'; where they have none, their "
                "confidence) is below this (default: the records' own 'found' flags, i.e. the config's "
                "reader.not_found_threshold)"})
    # report
    report: str | None = field(default=None, metadata={
        "metavar": "DIR", "help": "write DIR/report.md with PNG plots of everything scored in this run"})
    sweep: list[str] | None = field(default=None, metadata={
        "nargs": "+", "metavar": "SPEC",
        "help": "EM against the number of passages read: N=PREDICTIONS (file or folder) for each N, "
                "xqa answer folders (N from their run.json), or a JSON file {\"N\": \"predictions path\"} "
                "(paths relative to that file); scored on --gold"})
    json: str | None = field(default=None, metadata={
        "metavar": "OUT", "help": "also write every figure as JSON to OUT"})


@dataclass
class Evaluation:
    """What :func:`evaluate` found: the lines to show, in order (``(text, to_stderr)``: the
    report on stdout, warnings and examples on stderr) and the exit status."""

    lines: list[tuple[str, bool]] = field(default_factory=list)
    status: int = 0

    def say(self, text: str) -> None:
        self.lines.append((text, False))

    def warn(self, text: str) -> None:
        self.lines.append((text, True))


def evaluate(config: EvalConfig) -> Evaluation:
    """Score what ``config`` names (``xqa eval``); the figures go to ``config.json`` and
    ``config.report`` where given."""
    c = config
    _check_modes(c)
    if c.selective:
        return _selective(c)
    if not (c.predictions or c.retrieval or c.compare or c.sweep):
        raise XqaError("nothing to score: give --predictions, --retrieval, --compare, --sweep or --selective")
    if (c.predictions or c.compare or c.sweep) and not c.gold:
        raise XqaError("--predictions, --compare and --sweep need --gold")
    if c.names and (not c.retrieval or len(c.names) != len(c.retrieval)):
        raise XqaError("--names needs exactly one name per --retrieval file")
    if c.mia and not c.predictions:
        raise XqaError("--mia scores --predictions; give them")
    if c.coverage:
        if not (c.gold and c.predictions):
            raise XqaError("--coverage needs --gold (the questions) and --predictions")
        return _coverage(c)
    names = (c.names or [Path(p).name for p in c.retrieval]) if c.retrieval else []
    if len(set(names)) != len(names):
        raise XqaError(f"retrieval method names must differ, got {names}; use --names")

    from xqa.artifacts import write_json_atomic
    from xqa.evaluation import inputs, mia, report, retrieval, significance

    shown = Evaluation()
    out: dict[str, Any] = {}
    to_report: dict[str, Any] = {}  # what --report writes
    gold = inputs.load_gold(c.gold, c.lang) if c.gold else []
    if c.where or c.per_lang:
        from xqa.cli_options import select_questions

        gold = select_questions(gold, c.where, c.per_lang)
    asked = {q.id for q in gold}   # a prediction of a question left out below is no stray one
    gold, left_out = inputs.unscored(gold)
    if left_out:
        shown.warn(f"note: {sum(left_out.values())} question(s) left out, in "
                   f"{', '.join(f'{lang} {n}' for lang, n in left_out.items())}: the metric splits answers into "
                   f"words by language, and has no rule for "
                   f"{'these' if len(left_out) > 1 else 'this one'}" + (" (und: no language identified, "
                                                                       "--lang auto)" if "und" in left_out else ""))

    if c.predictions:
        preds = inputs.load_predictions(c.predictions)
        _unmatched(shown, gold, preds, selected=bool(c.where or c.per_lang), asked=asked)
        if c.mia:
            xor_q, mkqa_q = mia.split_mia(gold)
            xor, mkqa = mia.evaluate(xor_q, preds, c.mode), mia.evaluate(mkqa_q, preds, c.mode)
            _end_to_end(shown, "XOR-TyDi", xor)
            _end_to_end(shown, "MKQA", mkqa)
            empty = [name for name, part in (("XOR-TyDi", xor), ("MKQA", mkqa)) if not part.n]
            combined = None if empty else mia.mia_score(xor, mkqa)
            shown.say(report.mia_score_text(combined) if combined else
                      f"\nMIA score: not given: the {' and '.join(empty)} part{'s have' if len(empty) > 1 else ' has'} "
                      f"no scored question, and the score is the mean of both parts' macro averages")
            out["mia"] = {"xor_tydi": xor.to_dict(c.per_question),
                          "mkqa": mkqa.to_dict(c.per_question), "score": combined}
            to_report["end_to_end"] = {"XOR-TyDi": xor, "MKQA": mkqa}
        else:
            scores = mia.evaluate(gold, preds, c.mode)
            _end_to_end(shown, "end-to-end", scores)
            out["end_to_end"] = scores.to_dict(c.per_question)
            to_report["end_to_end"] = {"predictions": scores}

    ks = list(c.k)   # the retrieval depths scored (those the results hold)
    if c.retrieval:
        results = {n: inputs.load_retrieval_results(p, c.default_lang) for n, p in zip(names, c.retrieval)}
        if c.where or c.per_lang:   # the questions each result holds, selected as --gold's are
            results = {n: _select_results(res, c.where, c.per_lang) for n, res in results.items()}
        for n, res in results.items():   # as the end-to-end score skips them: nothing to find
            kept = [r for r in res if r.get("answers") or retrieval.gold_passage_ids(r)]
            if res and not kept:
                raise XqaError(f"{n}: none of its {len(res)} questions has gold answers or passages: nothing to "
                               f"score (a test set whose answers are withheld is scored by its organisers)")
            if len(kept) < len(res):
                shown.warn(f"note: {n}: {len(res) - len(kept)} of {len(res)} questions without gold answers or "
                           f"passages left out (a test set whose answers are withheld scores nothing)")
                results[n] = kept
        out["retrieval"] = {}
        deepest = max((len(r["ctxs"]) for res in results.values() for r in res), default=0)
        ks = [k for k in c.k if k <= deepest] or sorted(c.k)[:1]
        if len(ks) < len(c.k):   # top-100 of 20 passages would repeat top-20 under another name
            left = ", ".join(f"top-{k}" for k in c.k if k not in ks)
            shown.warn(f"note: {left} left out: the results hold at most {deepest} passages a question")
        for name, res in results.items():
            ranks = retrieval.first_answer_ranks(res, c.match)
            scores = retrieval.score_retrieval(res, ks, c.match, ranks=ranks)
            shown.say(report.retrieval_text(name, scores))
            out["retrieval"][name] = scores.to_dict()
        to_report["retrieval"] = results

    selected = bool(c.where or c.per_lang)
    if c.compare:
        a_path, b_path = c.compare
        na, nb = _names(a_path, b_path)
        scored = []
        for name, path in ((na, a_path), (nb, b_path)):
            preds = inputs.load_predictions([path])
            _unmatched(shown, gold, preds, selected, of=name, asked=asked)
            scored.append(mia.evaluate(gold, preds, c.mode))
        a, b = scored
        test = significance.compare_systems(a, b, c.metric)
        shown.say(report.comparison_text(na, nb, c.metric, test))
        out["compare"] = {"a": a_path, "b": b_path, "metric": c.metric, **test.to_dict()}
        to_report["comparison"] = (na, nb, c.metric, test)

    if c.sweep:
        sweep = {}
        for n, path in sorted(inputs.parse_sweep(c.sweep).items()):
            preds = inputs.load_predictions([path])
            _unmatched(shown, gold, preds, selected, of=f"{n} passages' {Path(path).name}", asked=asked)
            sweep[n] = mia.evaluate(gold, preds, c.mode)
        shown.say(report.sweep_text(sweep))
        out["sweep"] = {str(n): s.to_dict() for n, s in sweep.items()}
        to_report["sweep"] = sweep

    if c.report:
        path = report.write_report(c.report, ks=ks, match=c.match, **to_report)
        shown.say(f"\nreport: {path}")
    if c.json:
        write_json_atomic(c.json, out)
        shown.say(f"figures: {c.json}")
    return shown


def _check_modes(c: EvalConfig) -> None:
    """An error for options the mode given does not read (they were ignored without a word)."""
    def refused(flags: list[str], said: str) -> None:
        if flags:
            raise XqaError(f"{', '.join(flags)} {'does' if len(flags) == 1 else 'do'} not go with {said}")

    def given(pairs) -> list[str]:
        return [flag for flag, value in pairs if value is not None and value is not False and value != []]

    if c.selective:
        refused(given((("--gold", c.gold), ("--predictions", c.predictions), ("--retrieval", c.retrieval),
                       ("--compare", c.compare), ("--sweep", c.sweep), ("--coverage", c.coverage),
                       ("--mia", c.mia), ("--report", c.report))),
                "--selective, which scores answer records alone (run xqa eval once for each)")
    else:
        only = given((("--plot", c.plot), ("--calibrator", c.calibrator), ("--threshold", c.threshold),
                      ("--not-found-threshold", c.not_found_threshold)))
        if only:
            raise XqaError(f"{', '.join(only)}: only with --selective (answer records' confidence)")
    if c.coverage:
        refused(given((("--retrieval", c.retrieval), ("--compare", c.compare), ("--sweep", c.sweep),
                       ("--report", c.report))),
                "--coverage, which checks that every question has an answer (run xqa eval once for each)")


def _select_results(results: list[dict], where: list[str] | None, per_lang: int) -> list[dict]:
    """The retrieval results whose questions ``--where`` and ``--per-lang`` select
    (:func:`xqa.cli_options.select_questions`, on the question fields each result holds)."""
    from types import SimpleNamespace

    from xqa.cli_options import select_questions

    own = {"id", "question", "lang", "answers", "ctxs"}
    asked = [SimpleNamespace(id=r.get("id"), question=r.get("question"), lang=r.get("lang"), n=i,
                             meta={k: v for k, v in r.items() if k not in own}) for i, r in enumerate(results)]
    return [results[q.n] for q in select_questions(asked, where, per_lang)]


def _names(a: str, b: str) -> tuple[str, str]:
    """How two compared prediction files are named: their file names, or, where those are the
    same (two runs' predictions.json), the shortest ends of their paths that differ."""
    pa, pb = Path(a).resolve().parts, Path(b).resolve().parts
    for n in range(1, max(len(pa), len(pb)) + 1):
        na, nb = "/".join(pa[-n:]), "/".join(pb[-n:])
        if na != nb:
            return na, nb
    return a, b


def _unmatched(shown: Evaluation, gold: Sequence, preds: Mapping, selected: bool, of: str = "",
               asked: Collection[str] = ()) -> None:
    """Warn where the predictions' ids are not the gold questions': none of them (a prediction file of
    another set, ids written differently, an empty one), or some, when no selection (--where,
    --per-lang) leaves predictions of other questions out on purpose. Those predictions are not
    scored either way. Scored gold questions (of the selection) with no prediction are said too:
    they score 0. ``of``: which system's predictions (--compare, --sweep); ``asked``: the ids of
    every question of --gold, those left out of the scores too."""
    from xqa.evaluation.mia import NO_ANSWER

    of = f" of {of}" if of else ""
    if not gold:
        return
    if not preds:
        shown.warn(f"warning: the predictions{of} hold no answer: every question of --gold scores 0")
        return
    ids = {q.id for q in gold} | set(asked)
    keys = ids | {qid.split("_")[0] for qid in ids}   # an MKQA id's bare number keys it too
    extra = [key for key in preds if key not in keys]
    scored = [q for q in gold if q.answers and q.answers[0] != NO_ANSWER]   # as mia.evaluate skips
    missing = [q.id for q in scored if q.id not in preds and q.id.split("_")[0] not in preds]
    if missing and len(extra) < len(preds):
        hint = ("is it the selection xqa answer was given?" if selected else "if the predictions answer a "
                "selection (xqa answer --per-lang, --where), give xqa eval the same selection")
        shown.warn(f"warning: {len(missing)} of {len(scored)} scored questions{' selected' if selected else ''} "
                   f"of --gold have no prediction{of} ({', '.join(map(repr, missing[:3]))}"
                   f"{', ...' if len(missing) > 3 else ''}) and score 0, as the MIA scripts score them; {hint}")
    if not extra:
        return
    if len(extra) == len(preds):
        shown.warn(f"warning: none of the {len(preds)} predictions{of} is for a question of --gold (a prediction "
                   f"id: {extra[0]!r}; a question id: {gold[0].id!r}): every question is scored as "
                   f"unanswered; are these the predictions of this question set?")
    elif not selected:
        shown.warn(f"warning: {len(extra)} of {len(preds)} predictions{of} are for ids that no question of --gold "
                   f"has ({', '.join(map(repr, extra[:3]))}{', ...' if len(extra) > 3 else ''}); they are not "
                   f"scored")


def _end_to_end(shown: Evaluation, title: str, scores: Any) -> None:
    from xqa.evaluation.report import end_to_end_text

    shown.say(end_to_end_text(title, scores))
    if scores.n == 0:
        shown.warn(f"warning: {title}: no question with a gold answer was scored")


def _coverage(c: EvalConfig) -> Evaluation:
    """``--coverage``: one non-empty string answer per gold question id (a submission check)."""
    from xqa.artifacts import write_json_atomic
    from xqa.evaluation import inputs, report
    from xqa.evaluation.coverage import coverage

    shown = Evaluation()
    preds = inputs.load_predictions(c.predictions)
    gold = inputs.load_gold(c.gold, c.lang)
    if c.where or c.per_lang:   # a submission of a selection: checked against that selection
        from xqa.cli_options import select_questions

        gold = select_questions(gold, c.where, c.per_lang)
    cov = coverage(gold, preds)
    shown.say(report.coverage_text(cov, len(preds)))
    for line in report.coverage_examples_text(cov):
        shown.warn(line)
    if c.json:
        write_json_atomic(c.json, {"coverage": cov.to_dict()})
    shown.say(report.coverage_verdict(cov))
    shown.status = 0 if cov.complete else 1
    return shown


def _selective(c: EvalConfig) -> Evaluation:
    """``--selective``: the calibrated confidence and the fused probability as selective scores."""
    from xqa.artifacts import write_json_atomic
    from xqa.evaluation import selective
    from xqa.evaluation.report import selective_text

    shown = Evaluation()
    records = selective.read_records(c.selective)
    if c.where or c.per_lang:
        raise XqaError("--selective scores whole records files; select the questions when answering them")
    methods = selective.answered_methods(c.selective)
    if len(methods) > 1:
        shown.warn("warning: the records were retrieved by different methods ("
                   + ", ".join(f"{p}: {m}" for m, p in methods.items()) + "): their scores differ in scale, "
                   "and a calibrator judges one method's answers; score each method's records alone")
    if c.calibrator:
        records = selective.rescore(records, *selective.load_calibrator(c.calibrator))
    e = selective.evaluate_records(records, c.mode, c.threshold, c.not_found_threshold)
    if not e.records:
        raise XqaError(f"{' '.join(c.selective)}: no record with a gold answer to score")
    shown.say(selective_text(e))
    plot = Path(c.plot) if c.plot else Path(e.records[0]["_source"].rsplit(":", 1)[0]).parent / "selective.png"
    selective.plot(e.results, plot)
    shown.say(f"\nplot: {plot}")
    if c.json:
        write_json_atomic(c.json, {"selective": {sc.name: sc.to_dict() for sc, _, _ in e.results},
                                   "states": e.states,
                                   "answers": len(e.records), "answerable": int(e.answerable.sum()),
                                   "right": int(e.right.sum())})
        shown.say(f"figures: {c.json}")
    return shown
