"""``xqa repro``: run the reproduction matrix's rows (docs/figures.yaml) and print expected vs
measured; ``--write-docs`` makes the documentation tables from it.

Examples::

    xqa repro --list                       # every row: id, expected value, tolerance, needs
    xqa repro default.*                    # the default pipeline's real-text table (R@k, EM/F1)
    xqa repro default.mean --dry-run       # the commands that would run
    xqa repro                              # every row that needs nothing beyond `make demo` and is not slow
    xqa repro --write-docs                 # README/docs tables from the matrix's expected values
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rows", nargs="*", metavar="ROW",
                   help="row ids, globs (default.*.f1) or dotted prefixes (default); none: every row that "
                        "needs no shared data and is not slow")
    p.add_argument("--all", action="store_true", help="with no ROW: every row, slow and shared-data ones too")
    p.add_argument("--list", action="store_true", help="list the chosen rows and exit")
    p.add_argument("--dry-run", action="store_true",
                   help="print the commands the chosen rows need (and which finished before) and exit")
    p.add_argument("--out", default="runs/repro",
                   help="folder of the commands' outputs, one subfolder per job; a rerun reuses finished commands")
    p.add_argument("--matrix", default=None, help="the matrix file (default: docs/figures.yaml of this clone)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides",
                   help="a placeholder of the commands, e.g. build=build/mine (repeatable)")
    p.add_argument("--quiet", action="store_true", help="keep the commands' own output in their log files only")
    p.add_argument("--json", metavar="FILE", help="also write the results here (default: OUT/results.json)")
    p.add_argument("--write-docs", action="store_true",
                   help="rewrite the tables between <!-- repro:ID --> and <!-- /repro --> in the files the "
                        "matrix names, from its expected values, and exit")
    p.add_argument("--check-docs", action="store_true",
                   help="exit 1 when a documentation table or quoted figure differs from the matrix")


def _overrides(pairs: list[str]) -> dict[str, str]:
    from xqa.errors import XqaError

    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise XqaError(f"--set {pair!r}: expected NAME=VALUE")
        out[name] = value
    return out


def _docs(matrix, write: bool) -> int:
    import sys

    from xqa.artifacts import write_text_atomic
    from xqa.tools.lib import repro

    stale = 0
    for path, (old, new) in repro.regenerate(matrix).items():
        if old == new:
            print(f"{path}: tables current")
        elif write:
            write_text_atomic(path, new)
            print(f"{path}: tables rewritten")
        else:
            stale += 1
            print(f"{path}: a table differs from the matrix (xqa repro --write-docs)", file=sys.stderr)
    quoted = list(repro.quotes(matrix))
    for line in quoted:
        stale += 1
        print(f"{line} (the prose states another figure than the matrix)", file=sys.stderr)
    print("prose: every quoted figure current" if not quoted else
          f"prose: {len(quoted)} quoted figure{'s' if len(quoted) > 1 else ''} not current (above; "
          f"--write-docs rewrites tables only: edit the prose)", file=sys.stderr if quoted else sys.stdout)
    return 1 if stale else 0


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from xqa.artifacts import write_json_atomic
    from xqa.tools.lib import repro

    matrix = repro.load(args.matrix)
    if args.write_docs or args.check_docs:
        return _docs(matrix, args.write_docs)
    rows = repro.select(matrix, args.rows, args.all)
    if args.list:
        width = max((len(r.id) for r in rows), default=4)
        print(f"{'row':<{width}}  {'expected':>9}  {'tol':>7}  {'job':<16} what")
        for r in rows:
            flags = [*r.needs, *(["slow"] if r.slow else []), *(["informational"] if r.informational else [])]
            print(f"{r.id:<{width}}  {r.show(r.expected):>9}  {format(r.tol, r.fmt):>7}  "
                  f"{r.job or 'derived':<16} {r.what}" + (f"  [{', '.join(flags)}]" if flags else ""))
        print(f"{len(rows)} rows")
        return 0
    out = Path(args.out)
    overrides = _overrides(args.overrides)
    jobs = repro.jobs_for(matrix, rows)
    plan = [(job, repro.commands(matrix, job, out, overrides)) for job in jobs]
    readers = {job.id: [r.id for r in rows if r.job == job.id or any(matrix.rows[s].job == job.id for s in r.sources)]
               for job in jobs}
    if args.dry_run:
        for job, cmds in plan:
            shown = readers[job.id]
            print(f"job {job.id}: {job.about}" + (f" (machine: {job.machine})" if job.machine else ""))
            print(f"  rows ({len(shown)}): {', '.join(shown[:8])}{' …' if len(shown) > 8 else ''}")
            links = repro.chains(repro.lineage(matrix, job, out, overrides), cmds)
            for i, cmd in enumerate(cmds):
                done = repro.step_done(out / job.id, i, cmd, links[i])
                print(f"  {'(finished) ' if done else ''}{cmd}")
        print(f"{len(rows)} rows, {len(plan)} jobs, outputs under {out}")
        return 0
    finished: set[str] = set()
    t0 = time.perf_counter()
    for n, (job, cmds) in enumerate(plan, 1):
        blocked = [a for a in job.after if a not in finished]
        if blocked:
            print(f"[{n}/{len(plan)}] {job.id}: skipped, {', '.join(blocked)} did not finish", flush=True)
            continue
        print(f"[{n}/{len(plan)}] {job.id}: {job.about} ({len(readers[job.id])} rows)", flush=True)
        if job.machine:
            print(f"    expected values measured on: {job.machine}", flush=True)
        ok, seconds = repro.run_job(job, cmds, out, say=lambda s: print(s, flush=True), echo=not args.quiet,
                                    seed=repro.lineage(matrix, job, out, overrides))
        print(f"[{n}/{len(plan)}] {job.id}: {'finished' if ok else 'FAILED'} ({seconds:.0f} s)", flush=True)
        if ok:
            finished.add(job.id)
    results = repro.compare(rows, matrix, out, finished)
    print()
    print(repro.report(results))
    bad = repro.failed(results)
    counts = {s: sum(r.status == s for r in results) for s in ("OK", "DIFF", "INFO", "FAIL")}
    print(f"\n{len(results)} rows: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
          + f" ({time.perf_counter() - t0:.0f} s)")
    write_json_atomic(args.json or out / "results.json",
                      {"matrix": str(matrix.path), "out": str(out), "results": [r.to_dict() for r in results]})
    return 1 if bad else 0
