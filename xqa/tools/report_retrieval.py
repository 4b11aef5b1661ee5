"""``xqa report retrieval``: retrieval accuracy of every method on the embedded world's test split.

Top-k answer accuracy (a passage holds one of the question's answers, or its
English ones, DPR ``has_answer`` with the language-aware rule for unsegmented
scripts) of every retrieval method of :mod:`xqa.methods` whose indexes the config
names (and SPAR's Λ half alone), with the weights of the pipeline config (tuned on
dev by ``xqa tune alpha`` / ``xqa tune mu`` / ...);
overall, per language, and split into same-language and cross-lingual
questions (the world marks which). Writes ``report.md``, ``report.json`` and
``recall.png`` (accuracy@k for k = 1..K) into ``--out``.
"""
from __future__ import annotations

import argparse



def _names() -> list[str]:
    """Every method of the registry (the unlisted views too), in order."""
    from xqa.methods import methods

    return [m.name for m in methods(every=True)]


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.cli_options import add_source_arguments

    add_source_arguments(p)
    p.add_argument("--questions", help="question set (default: test.jsonl beside the config's passages)")
    p.add_argument("--lang", help="language of question files that carry none")
    p.add_argument("--max-questions", type=int, default=0, help="use the first N questions only (0: all)")
    p.add_argument("--match", choices=("dpr", "lang_aware"), default="lang_aware",
                   help="answer matching: DPR's token rule, or substring for unsegmented scripts")
    p.add_argument("--ks", type=int, nargs="+", default=[5, 20, 60], help="top-k accuracies in the tables")
    from xqa.methods import methods

    names = _names()
    aliases = [a for m in methods(every=True) for a in m.aliases]
    p.add_argument("--methods", nargs="+", choices=[*names, *aliases], default=names,
                   help="methods to compare (default: all; those whose indexes the config lacks are left out)")
    p.add_argument("--out", default="build/embedded/reports/retrieval",
                   help="folder for report.md, report.json and recall.png")
    p.add_argument("--batch-size", type=int, default=64, help="questions per search call")


def _groups(questions) -> dict[str, list[int]]:
    """Question indices by group: all, same-language, cross-lingual, then per language and split."""
    g: dict[str, list[int]] = {"all": [], "same-language": [], "cross-lingual": []}
    for i, q in enumerate(questions):
        split = "cross-lingual" if q.meta.get("crosslingual") else "same-language"
        g["all"].append(i)
        g[split].append(i)
        g.setdefault(f"{q.lang} all", []).append(i)
        g.setdefault(f"{q.lang} {split}", []).append(i)
    return g


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from retriever.combined import sparse_search
    from xqa.artifacts import write_json_atomic, write_text_atomic
    from xqa.cli_options import load_pipeline, pipeline_config
    from xqa.errors import XqaError
    from xqa.evaluation.judge import Judge, batched, format_table
    from xqa.io import read_questions
    from xqa.methods import build_retriever, method, named_indexes, tunables

    cfg = pipeline_config(args)
    r = cfg.retrieval
    have = named_indexes(r)
    asked = list(dict.fromkeys(method(m).name for m in args.methods))
    methods = [m for m in asked if all(n in have for n in method(m).needs)]
    skipped = [m for m in asked if m not in methods]
    if not methods:
        raise XqaError("no method can run: the config names no index (give --config or --bm25/--dense/--spar)")
    pipe = load_pipeline(args, sorted({n for m in methods for n in method(m).needs}))
    qfile = args.questions or str(Path(cfg.path(cfg.passages)).with_name("test.jsonl"))
    questions = read_questions(qfile, lang=args.lang)
    if args.max_questions:
        questions = questions[: args.max_questions]
    if not questions:
        raise XqaError(f"{qfile}: no questions")
    k = max(args.ks)
    labels = {m: method(m).column for m in asked}
    retrievers = {m: build_retriever(r.fusion(method=m), **{n: pipe.component(n) for n in method(m).needs})
                  for m in methods}
    from tqdm.auto import tqdm

    lists = {}
    for m, ret in retrievers.items():
        out = []
        for chunk in tqdm(list(batched(questions, args.batch_size)), desc=labels[m], unit="batch"):
            out.extend(sparse_search(ret, chunk, k))
        lists[m] = out
    judge = Judge(questions, pipe.store, "accuracy", args.match)
    groups = _groups(questions)
    scores = {g: {m: judge.scores(lists[m], args.ks, idx) for m in methods} for g, idx in groups.items()}
    curves = {split: {m: judge.scores(lists[m], list(range(1, k + 1)), groups[split]) for m in methods}
              for split in ("all", "same-language", "cross-lingual")}

    used = [t for _, t in tunables() if any(t in method(m).tunables for m in methods)]
    weights = ", ".join([f"{t.title or t.symbol} = {_value(r.fusion().setting(t.field, t.default))}"
                         + (" (normalised)" if t.field == "alpha" and r.normalize else "") for t in used]
                        + [f"max_frac = {r.max_frac:g}"])
    md = [f"# Retrieval on {Path(qfile).name} ({len(questions)} questions)\n",
          f"Top-k answer accuracy (%), answer strings matched with `{args.match}`; {weights}.\n"]
    head = ["method"] + [f"{split} @{kk}" for split in ("all", "same-language", "cross-lingual") for kk in args.ks]
    rows = [[labels[m]] + [scores[split][m][kk] for split in ("all", "same-language", "cross-lingual")
                           for kk in args.ks] for m in methods]
    n = {s: len(groups[s]) for s in ("all", "same-language", "cross-lingual")}
    md += [f"## Overall (all {n['all']}, same-language {n['same-language']}, cross-lingual {n['cross-lingual']})\n",
           format_table(head, rows), ""]
    langs = sorted({q.lang for q in questions})
    for kk in args.ks:
        md.append(f"## Per language, top-{kk}\n")
        prow = []
        for lang in langs:
            for split in ("all", "same-language", "cross-lingual"):
                key = f"{lang} {split}"
                if key in groups:
                    prow.append([lang, split, len(groups[key])] + [scores[key][m][kk] for m in methods])
        md += [format_table(["lang", "split", "n"] + [labels[m] for m in methods], prow), ""]
    if skipped:
        md.append(f"Not run (no index in the config): {', '.join(labels[m] for m in skipped)}.\n")
    md.append("![accuracy@k](recall.png)\n")
    text = "\n".join(md)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _plot(curves, methods, labels, k, out / "recall.png")
    write_text_atomic(out / "report.md", text)
    write_json_atomic(out / "report.json", {
        "questions": qfile, "n": len(questions), "ks": args.ks, "match": args.match,
        "weights": {"normalize": r.normalize, "max_frac": r.max_frac,
                    **{t.field: r.fusion().setting(t.field, t.default) for _, t in tunables()}},
        "scores": {g: {labels[m]: {str(kk): v for kk, v in s.items()} for m, s in per.items()}
                   for g, per in scores.items()},
        "curves": {split: {labels[m]: [c[kk] for kk in range(1, k + 1)] for m, c in per.items()}
                   for split, per in curves.items()},
    })
    print(text)
    print(f"\nwritten: {out / 'report.md'}, {out / 'report.json'}, {out / 'recall.png'}")
    return 0


def _value(v) -> str:
    return "the index's own" if v is None else f"{v:g}"


def _plot(curves: dict, methods, labels: dict, k: int, path) -> None:
    """Accuracy@k curves per split; methods that fuse several parts are drawn thicker."""
    import matplotlib

    from xqa.methods import needs

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), sharey=True)
    xs = list(range(1, k + 1))
    for ax, (split, per) in zip(axes, curves.items()):
        for m in methods:
            ax.plot(xs, [per[m][x] for x in xs], label=labels[m], lw=2 if len(needs(m)) > 1 else 1.3)
        ax.set_title(split)
        ax.set_xlabel("k (passages)")
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("top-k answer accuracy (%)")
    axes[-1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
