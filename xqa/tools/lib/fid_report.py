"""The tables of ``xqa report fid`` (the last step of ``scripts/fid_report.sh``): a FiD against the
span reader, from the JSON files that ``xqa report gold``, ``xqa eval`` and ``xqa bench reader``
wrote into one folder.

Reads ``gold-span.json`` and ``gold-FID.json`` (gold paragraph), ``corpus-span-5.eval.json``,
``corpus-FID-N.eval.json``, ``mlqa-span-5.eval.json``, ``mlqa-FID-N.eval.json`` (end to end),
``bench-FID.json`` (CPU time) and ``fusion.json`` (what was tuned); a missing file leaves its
table out and is named at the end.
"""
from __future__ import annotations

import json
from pathlib import Path

from xqa.errors import XqaError


def _load(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise XqaError(f"{path}:{getattr(e, 'lineno', 1)}: not JSON ({e})") from None


def _num(x: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "–" if x is None else f"{x * scale:.{digits}f}"


def gold_table(span: dict, fid: dict, fid_name: str) -> list[str]:
    """Per set (or MLQA pair): questions, MIA F1 and the MLQA/SQuAD script's F1 of both readers."""
    rows = {r["set"]: r for r in fid.get("table", [])}
    out = [f"| set | questions | F1 span | F1 {fid_name} | script F1 span | script F1 {fid_name} |",
           "|---|---:|---:|---:|---:|---:|"]
    for r in span.get("table", []):
        f = rows.get(r["set"], {})
        if f and f.get("n") != r.get("n"):
            raise XqaError(f"gold paragraph: {r['set']} has {r.get('n')} questions for the span reader and "
                           f"{f.get('n')} for {fid_name}; run both with the same --limit and --seed")
        out.append(f"| {r['set']} | {r.get('n', '–')} | {_num(r.get('f1'), digits=3)} | {_num(f.get('f1'), digits=3)} "
                   f"| {_num(r.get('script_f1'), digits=3)} | {_num(f.get('script_f1'), digits=3)} |")
    s, f = span.get("summary", {}), fid.get("summary", {})
    if "mlqa_same_language_f1" in s:
        out.append(f"| **MLQA same language, mean** | {s.get('questions', '–')} "
                   f"| {_num(s.get('mlqa_same_language_f1'), digits=3)} | {_num(f.get('mlqa_same_language_f1'), digits=3)} "
                   f"| {_num(s.get('mlqa_same_language_script_f1'), digits=3)} "
                   f"| {_num(f.get('mlqa_same_language_script_f1'), digits=3)} |")
    return out


def end_to_end_table(runs: list[tuple[str, dict | None]]) -> list[str]:
    """Per run (a reader reading N passages): questions, macro EM and F1, and F1 per language."""
    langs = sorted({lang for _, e in runs if e for lang in e["end_to_end"].get("per_language", {})})
    out = ["| reader, passages read | questions | EM | F1 | " + " | ".join(langs) + " |",
           "|---|---:|---:|---:|" + "---:|" * len(langs)]
    for label, e in runs:
        if e is None:
            continue
        e2e = e["end_to_end"]
        per = e2e.get("per_language", {})
        out.append(f"| {label} | {e2e.get('n', '–')} | {_num(e2e['macro'].get('em'))} | {_num(e2e['macro'].get('f1'))} | "
                   + " | ".join(_num(per.get(lang, {}).get("f1")) for lang in langs) + " |")
    return out


def bench_table(bench: dict) -> list[str]:
    out = ["| precision | passages read | questions | p50 s/question | p95 s/question |",
           "|---|---:|---:|---:|---:|"]
    for r in bench.get("rows", []):
        out.append(f"| {r['precision']} | {r['passages']} | {r['questions']} | {r['p50_s']:.3f} | {r['p95_s']:.3f} |")
    return out


def report(folder: Path, fid: str = "fid", passages: tuple[int, ...] = (5, 10, 20)) -> str:
    folder = Path(folder)
    lines: list[str] = [f"# {fid} against the span reader ({folder})", ""]
    missing: list[str] = []

    def need(name: str) -> dict | None:
        got = _load(folder / name)
        if got is None:
            missing.append(name)
        return got

    fusion = need("fusion.json")
    if fusion:
        tuned = ", ".join(f"{k} {fusion[k]:.3g}" for k in ("beta", "gamma", "miss") if isinstance(fusion.get(k), (int, float)))
        lines += [f"Evidence fusion for {fid}, tuned on the shipped corpus's tune questions reading "
                  f"{fusion.get('n_context', '?')} passages: {tuned}; tune F1 {_num(fusion.get('dev_f1'), digits=3)}.", ""]
    span_gold, fid_gold = need("gold-span.json"), need(f"gold-{fid}.json")
    if span_gold and fid_gold:
        lines += ["## Gold paragraph (`xqa report gold`)", "", *gold_table(span_gold, fid_gold, fid), ""]
    for pool, title in (("corpus", "the shipped corpus's test questions, same language"),
                        ("mlqa", "the MLQA pool's test questions, same language")):
        runs = [("span, 5", need(f"{pool}-span-5.eval.json"))]
        runs += [(f"{fid}, {n}", need(f"{pool}-{fid}-{n}.eval.json")) for n in passages]
        if any(e for _, e in runs):
            lines += [f"## End to end: {title} (`xqa answer`, `xqa eval`: MIA 2022 EM / F1)", "",
                      *end_to_end_table(runs), ""]
    bench = need(f"bench-{fid}.json")
    if bench:
        lines += [f"## CPU time a question (`xqa bench reader`, {bench.get('threads', '?')} threads)", "",
                  *bench_table(bench), ""]
    if missing:
        lines += ["Not there (left out): " + ", ".join(missing), ""]
    return "\n".join(lines)
