"""The reproduction matrix (``docs/figures.yaml``) and ``xqa repro``: published figures kept as data.

The matrix has four parts:

* ``vars``: placeholders of the commands (``{build}``, ``{questions}``), overridable with
  ``xqa repro --set NAME=VALUE``; ``{out}`` is the ``--out`` folder and ``{dir}`` the job's own
  folder under it.
* ``jobs``: commands as a user types them after ``make demo`` (``xqa ...``), run in order,
  writing their figures as JSON under ``{dir}``. A job runs once however many rows read it;
  ``after`` names jobs whose output it reads.
* ``rows``: one figure each: an ``id``, what it measures (``what``, ``metric``), the ``job`` and
  the JSON ``file`` + key ``path`` of its value (or ``derive: {ratio: [A, B]}`` from two other
  rows), the ``expected`` value, its tolerance ``tol``, the number format ``fmt``; ``needs``
  (``shared-data``: the real sets under ../shared/data), ``slow``, ``informational`` (a speed:
  reported, never failing), and ``quoted``: files whose prose states the figure, with the
  words around it. A row with ``each: {NAME: [values]}`` stands for one row per value,
  ``$NAME`` replaced in its strings and ``expected`` (and ``tol``, where it differs by value)
  keyed by the value.
* ``tables``: the documentation tables made from the rows' expected values, between
  ``<!-- repro:ID -->`` and ``<!-- /repro -->`` in the files they name.

A key path step is a key or a list index, ``{match: [prefixes]}`` (the first list in a list
whose leading items start with them) or ``{where: {key: value}}`` (the first object with those
values); ``pattern`` (a regular expression, first group) reads a number out of a string, and
``scale`` multiplies it.
"""
from __future__ import annotations

import copy
import fnmatch
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xqa.errors import XqaError

ROOT = Path(__file__).resolve().parents[3]
MATRIX = ROOT / "docs" / "figures.yaml"
NEEDS = {"shared-data"}
ROW_FIELDS = {"id", "what", "metric", "job", "file", "path", "pattern", "scale", "derive", "expected", "tol",
              "fmt", "needs", "slow", "informational", "quoted", "each", "note"}
JOB_FIELDS = {"about", "run", "after", "machine"}
_REF = re.compile(r"\{([A-Za-z0-9_.@:-]+)\}")


@dataclass
class Row:
    id: str
    what: str
    metric: str
    expected: float
    tol: float
    fmt: str = ".3f"
    job: str | None = None
    file: str | None = None
    path: list = field(default_factory=list)
    pattern: str | None = None
    scale: float = 1.0
    derive: dict | None = None
    needs: list[str] = field(default_factory=list)
    slow: bool = False
    informational: bool = False
    quoted: dict[str, str] = field(default_factory=dict)
    note: str = ""

    def show(self, value: float | None) -> str:
        return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, self.fmt)

    @property
    def sources(self) -> list[str]:
        """The rows a derived row is computed from."""
        return [r for v in (self.derive or {}).values() for r in v]


@dataclass
class Job:
    id: str
    run: list[str]
    about: str = ""
    after: list[str] = field(default_factory=list)
    machine: str = ""


@dataclass
class Matrix:
    path: Path
    vars: dict[str, str]
    jobs: dict[str, Job]
    rows: dict[str, Row]
    tables: list[dict]


def _subst(obj: Any, name: str, value: str) -> Any:
    if isinstance(obj, str):
        return obj.replace(f"${name}", str(value))
    if isinstance(obj, list):
        return [_subst(o, name, value) for o in obj]
    if isinstance(obj, dict):
        return {_subst(k, name, value): _subst(v, name, value) for k, v in obj.items()}
    return obj


def _expand(raw: dict) -> list[dict]:
    """One row per value of ``each`` (with ``$NAME`` replaced and ``expected`` picked by value)."""
    if "each" not in raw:
        return [raw]
    each = raw["each"]
    if not isinstance(each, dict) or len(each) != 1:
        raise XqaError(f"row {raw.get('id')!r}: 'each' must be one NAME: [values]")
    (name, values), = each.items()
    expected = raw.get("expected")
    if not isinstance(expected, dict) or set(map(str, expected)) != set(map(str, values)):
        raise XqaError(f"row {raw.get('id')!r}: 'expected' needs one value for each of {values}")
    expected = {str(k): v for k, v in expected.items()}
    tol = raw.get("tol")   # one for all, or one for each value (as 'expected')
    if isinstance(tol, dict):
        if set(map(str, tol)) != set(map(str, values)):
            raise XqaError(f"row {raw.get('id')!r}: a 'tol' by value needs one for each of {values}")
        tol = {str(k): x for k, x in tol.items()}
    out = []
    for v in values:
        row = _subst({k: copy.deepcopy(x) for k, x in raw.items() if k not in ("each", "expected", "tol")}, name, v)
        row["expected"] = expected[str(v)]
        if tol is not None:
            row["tol"] = tol[str(v)] if isinstance(tol, dict) else tol
        out.append(row)
    return out


def _row(raw: dict) -> Row:
    rid = raw.get("id")
    if not isinstance(rid, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_.@-]*", rid):
        raise XqaError(f"row id {rid!r}: lower-case letters, digits and . _ @ - only")
    unknown = set(raw) - ROW_FIELDS
    if unknown:
        raise XqaError(f"row {rid}: unknown fields {sorted(unknown)}")
    for key in ("what", "metric", "expected", "tol"):
        if key not in raw:
            raise XqaError(f"row {rid}: no {key!r}")
    if not isinstance(raw["expected"], (int, float)) or not isinstance(raw["tol"], (int, float)) or raw["tol"] < 0:
        raise XqaError(f"row {rid}: 'expected' and 'tol' must be numbers, tol >= 0")
    if ("derive" in raw) == ("job" in raw):
        raise XqaError(f"row {rid}: give either 'job' (with 'file' and 'path') or 'derive'")
    if "job" in raw and not (raw.get("file") and isinstance(raw.get("path"), list) and raw["path"]):
        raise XqaError(f"row {rid}: a job's row needs 'file' and a non-empty 'path' list")
    if "derive" in raw:
        d = raw["derive"]
        if not (isinstance(d, dict) and set(d) == {"ratio"} and isinstance(d["ratio"], list) and len(d["ratio"]) == 2):
            raise XqaError(f"row {rid}: 'derive' must be {{ratio: [ROW_A, ROW_B]}}")
    needs = raw.get("needs", [])
    if not isinstance(needs, list) or set(needs) - NEEDS:
        raise XqaError(f"row {rid}: 'needs' must be a list of {sorted(NEEDS)}")
    try:
        format(1.0, raw.get("fmt", ".3f"))
    except ValueError:
        raise XqaError(f"row {rid}: 'fmt' {raw.get('fmt')!r} is not a number format") from None
    if raw.get("pattern") is not None:
        re.compile(raw["pattern"])
    return Row(id=rid, what=str(raw["what"]), metric=str(raw["metric"]), expected=float(raw["expected"]),
               tol=float(raw["tol"]), fmt=raw.get("fmt", ".3f"), job=raw.get("job"), file=raw.get("file"),
               path=list(raw.get("path") or []), pattern=raw.get("pattern"), scale=float(raw.get("scale", 1.0)),
               derive=raw.get("derive"), needs=list(needs), slow=bool(raw.get("slow", False)),
               informational=bool(raw.get("informational", False)), quoted=dict(raw.get("quoted") or {}),
               note=str(raw.get("note", "")))


def parse(data: dict, path: Path) -> Matrix:
    """A matrix from its parsed YAML, every row and job checked (raises XqaError)."""
    if not isinstance(data, dict) or not {"jobs", "rows"} <= set(data):
        raise XqaError(f"{path}: a matrix has 'jobs' and 'rows' (and 'vars', 'tables')")
    jobs = {}
    for jid, raw in (data["jobs"] or {}).items():
        if not isinstance(raw, dict) or set(raw) - JOB_FIELDS or not raw.get("run"):
            raise XqaError(f"{path}: job {jid}: fields {sorted(JOB_FIELDS)}, 'run' a list of commands")
        run = [raw["run"]] if isinstance(raw["run"], str) else list(raw["run"])
        for cmd in run:
            if not isinstance(cmd, str) or not cmd.startswith("xqa "):
                raise XqaError(f"{path}: job {jid}: every command starts with 'xqa ': {cmd!r}")
        jobs[jid] = Job(id=jid, run=run, about=str(raw.get("about", "")), after=list(raw.get("after", [])),
                        machine=str(raw.get("machine", "")))
    for job in jobs.values():
        for a in job.after:
            if a not in jobs:
                raise XqaError(f"{path}: job {job.id}: 'after' names no job {a!r}")
    rows: dict[str, Row] = {}
    for raw in data["rows"] or []:
        if not isinstance(raw, dict):
            raise XqaError(f"{path}: a row is a mapping, got {raw!r}")
        for one in _expand(raw):
            row = _row(one)
            if row.id in rows:
                raise XqaError(f"{path}: row {row.id} twice")
            if row.job is not None and row.job not in jobs:
                raise XqaError(f"{path}: row {row.id}: no job {row.job!r}")
            rows[row.id] = row
    for row in rows.values():
        for src in row.sources:
            if src not in rows or rows[src].derive:
                raise XqaError(f"{path}: row {row.id} derives from {src!r}, not a measured row")
    tables = list(data.get("tables") or [])
    for t in tables:
        if not isinstance(t, dict) or not {"id", "docs", "columns", "rows"} <= set(t):
            raise XqaError(f"{path}: a table has id, docs, columns and rows")
        for ref in _table_refs(t):
            if ref not in rows:
                raise XqaError(f"{path}: table {t['id']} shows {{{ref}}}, which is no row")
    return Matrix(path=path, vars={k: str(v) for k, v in (data.get("vars") or {}).items()}, jobs=jobs, rows=rows,
                  tables=tables)


def load(path: str | Path | None = None) -> Matrix:
    import yaml

    path = Path(path) if path else MATRIX
    if not path.is_file():
        raise XqaError(f"{path}: no reproduction matrix (xqa repro reads docs/figures.yaml of a clone; "
                       f"give --matrix)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise XqaError(f"{path}: {e}") from None
    return parse(data, path)


# ---- choosing rows ----------------------------------------------------------------------------

def select(matrix: Matrix, patterns: Iterable[str] = (), everything: bool = False) -> list[Row]:
    """Rows by id, glob (``default.*.f1``) or dotted prefix (``default``); with no pattern the rows
    that need nothing beyond ``make demo`` and are not slow (every row with ``everything``)."""
    patterns = list(patterns)
    if not patterns:
        return [r for r in matrix.rows.values() if everything or not (r.needs or r.slow)]
    chosen: dict[str, Row] = {}
    for p in patterns:
        hits = [r for rid, r in matrix.rows.items()
                if rid == p or fnmatch.fnmatchcase(rid, p) or rid.startswith(p.rstrip(".") + ".")]
        if not hits:
            raise XqaError(f"no row matches {p!r} (xqa repro --list shows the rows)")
        for r in hits:
            chosen.setdefault(r.id, r)
    return [r for rid, r in matrix.rows.items() if rid in chosen]


def jobs_for(matrix: Matrix, rows: Iterable[Row]) -> list[Job]:
    """The jobs the rows read (a derived row: its sources' jobs), with the jobs they run after,
    in matrix order, each after the jobs it runs after wherever the matrix lists them."""
    want: set[str] = set()
    for r in rows:
        for src in [r, *(matrix.rows[s] for s in r.sources)]:
            if src.job:
                want.add(src.job)
    todo = list(want)
    while todo:
        for a in matrix.jobs[todo.pop()].after:
            if a not in want:
                want.add(a)
                todo.append(a)
    ordered: list[Job] = []

    def place(jid: str, path: tuple[str, ...] = ()) -> None:
        if jid in path:
            raise XqaError(f"jobs {' → '.join((*path, jid))}: each runs after the other")
        if any(j.id == jid for j in ordered):
            return
        for a in matrix.jobs[jid].after:
            place(a, (*path, jid))
        ordered.append(matrix.jobs[jid])

    for jid in matrix.jobs:
        if jid in want:
            place(jid)
    return ordered


# ---- commands ---------------------------------------------------------------------------------

def commands(matrix: Matrix, job: Job, out: Path, overrides: dict[str, str] | None = None) -> list[str]:
    """The job's commands with their placeholders filled."""
    values = {**matrix.vars, **(overrides or {}), "out": str(out), "dir": str(out / job.id)}

    def fill(m: re.Match) -> str:
        if m.group(1) not in values:
            raise XqaError(f"job {job.id}: no value for {{{m.group(1)}}} (matrix vars, or --set NAME=VALUE)")
        return values[m.group(1)]

    return [_REF.sub(fill, cmd) for cmd in job.run]


def _argv(cmd: str) -> list[str]:
    words = shlex.split(cmd)
    return [sys.executable, "-m", "xqa.cli", *words[1:]]


def _child_env() -> dict[str, str]:
    """The environment of a job's commands: the same xqa as this process (its folder first on
    PYTHONPATH), whatever folder they run in."""
    here = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([here, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def lineage(matrix: Matrix, job: Job, out: Path, overrides: dict[str, str] | None = None) -> str:
    """A digest of the commands of the jobs ``job`` runs after, and of theirs: a job whose
    inputs another job made anew (``--set build=…`` changes the answering job's command, not the
    scoring job's after it) is not taken as finished."""
    import hashlib

    h = hashlib.sha256()
    for name in job.after:
        dep = matrix.jobs[name]
        h.update(lineage(matrix, dep, out, overrides).encode())
        for cmd in commands(matrix, dep, out, overrides):
            h.update(cmd.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


def chains(seed: str, cmds: list[str]) -> list[str]:
    """Per step, a digest of ``seed`` (:func:`lineage`) and the commands up to it: a step is
    finished only where the steps before it are the ones that ran before it."""
    import hashlib

    out, prev = [], seed
    for cmd in cmds:
        prev = hashlib.sha256(f"{prev}\0{cmd}".encode("utf-8")).hexdigest()[:16]
        out.append(prev)
    return out


def step_done(folder: Path, i: int, cmd: str, chain: str | None = None) -> bool:
    """Whether step ``i`` of the job in ``folder`` finished as ``cmd``, after the same steps
    (``chain``, :func:`chains`; a marker without one, of an earlier xqa, is not taken)."""
    marker = folder / f"step-{i + 1}.done.json"
    try:
        done = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return done.get("command") == cmd and (chain is None or done.get("chain") == chain)


def run_job(job: Job, cmds: list[str], out: Path, say: Callable[[str], None] = print,
            echo: bool = True, seed: str = "") -> tuple[bool, float]:
    """Run a job's commands in order, each unless a marker says that exact command finished
    after the same steps and jobs (``seed``: :func:`lineage`) — a rerun continues where one
    stopped, and once a step runs anew the steps after it do too (the commands' own outputs are
    written atomically or resumably). Output goes to ``{dir}/log.txt`` and, with ``echo``, to the
    terminal. Returns (all finished, seconds spent now)."""
    from xqa.artifacts import write_json_atomic

    folder = out / job.id
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    links = chains(seed, cmds)
    for i, cmd in enumerate(cmds):
        if step_done(folder, i, cmd, links[i]):
            say(f"    step {i + 1}/{len(cmds)} finished before: {cmd}")
            continue
        say(f"    step {i + 1}/{len(cmds)}: {cmd}")
        ts = time.perf_counter()
        with open(folder / "log.txt", "a", encoding="utf-8") as log:
            log.write(f"$ {cmd}\n")
            log.flush()
            proc = subprocess.Popen(_argv(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    env=_child_env(), bufsize=1, errors="replace")
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                if echo:
                    print(f"      | {line.rstrip()}", flush=True)
            code = proc.wait()
            log.write(f"(exit {code}, {time.perf_counter() - ts:.0f} s)\n")
        if code != 0:
            say(f"    step {i + 1} failed (exit {code}); its output: {folder / 'log.txt'}")
            return False, time.perf_counter() - t0
        write_json_atomic(folder / f"step-{i + 1}.done.json",
                          {"command": cmd, "chain": links[i], "seconds": round(time.perf_counter() - ts, 1)})
    return True, time.perf_counter() - t0


# ---- reading figures ----------------------------------------------------------------------------

def _step(obj: Any, step: Any) -> Any:
    if isinstance(step, dict) and set(step) == {"match"}:
        want = [str(s) for s in step["match"]]
        for item in obj:
            if isinstance(item, list) and len(item) >= len(want) and all(
                    str(x).startswith(w) for x, w in zip(item, want)):
                return item
        raise KeyError(f"no item starting with {want}")
    if isinstance(step, dict) and set(step) == {"where"}:
        for item in obj:
            if isinstance(item, dict) and all(item.get(k) == v for k, v in step["where"].items()):
                return item
        raise KeyError(f"no item with {step['where']}")
    if isinstance(obj, list):
        return obj[int(step)]
    return obj[step]


def extract(row: Row, folder: Path) -> float:
    """The row's value from its job's JSON output (raises KeyError, ValueError or OSError)."""
    obj = json.loads((folder / str(row.file)).read_text(encoding="utf-8"))
    for step in row.path:
        try:
            obj = _step(obj, step)
        except (KeyError, IndexError, TypeError) as e:
            raise KeyError(f"{row.file}: path {row.path} stops at {step!r} ({e})") from None
    if row.pattern is not None:
        m = re.search(row.pattern, str(obj))
        if not m:
            raise ValueError(f"{row.file}: {obj!r} does not match {row.pattern!r}")
        obj = m.group(1)
    if obj is None:
        raise ValueError(f"{row.file}: {row.path} is null")
    return float(obj) * row.scale


@dataclass
class Result:
    row: Row
    measured: float | None
    status: str           # OK, DIFF, INFO (an informational row outside its tolerance), FAIL
    detail: str = ""

    def to_dict(self) -> dict:
        r = self.row
        return {"id": r.id, "what": r.what, "metric": r.metric, "expected": r.expected, "tol": r.tol,
                "measured": self.measured, "status": self.status, "detail": self.detail,
                "informational": r.informational}


def compare(rows: list[Row], matrix: Matrix, out: Path, finished: set[str]) -> list[Result]:
    """Measured against expected for every row; derived rows from their sources' values."""
    values: dict[str, float] = {}
    errors: dict[str, str] = {}
    needed = {r.id for r in rows} | {s for r in rows for s in r.sources}
    for rid in [x for x in matrix.rows if x in needed]:
        row = matrix.rows[rid]
        if row.derive:
            continue
        if row.job not in finished:
            errors[rid] = f"job {row.job} did not finish"
            continue
        try:
            values[rid] = extract(row, out / str(row.job))
        except (KeyError, ValueError, OSError) as e:
            errors[rid] = str(e)
    results = []
    for row in rows:
        if row.derive:
            a, b = row.derive["ratio"]
            missing = [s for s in (a, b) if s not in values]
            if missing:
                results.append(Result(row, None, "FAIL", f"no value of {', '.join(missing)}"))
                continue
            measured = values[a] / values[b] if values[b] else float("nan")
        elif row.id in errors:
            results.append(Result(row, None, "FAIL", errors[row.id]))
            continue
        else:
            measured = values[row.id]
        within = not math.isnan(measured) and abs(measured - row.expected) <= row.tol + 1e-9
        results.append(Result(row, measured, "OK" if within else ("INFO" if row.informational else "DIFF")))
    return results


def report(results: list[Result]) -> str:
    """The expected-vs-measured table (markdown)."""
    lines = ["| row | metric | expected | measured | tolerance | |", "|---|---|---:|---:|---:|---|"]
    for res in results:
        r = res.row
        status = res.status + (f" ({res.detail})" if res.detail else "")
        lines.append(f"| {r.id} | {r.metric} | {r.show(r.expected)} | {r.show(res.measured)} | "
                     f"±{format(r.tol, r.fmt)}{' (info)' if r.informational else ''} | {status} |")
    return "\n".join(lines)


def failed(results: list[Result]) -> list[Result]:
    return [r for r in results if r.status in ("DIFF", "FAIL")]


# ---- documentation tables ---------------------------------------------------------------------------

def _table_refs(table: dict) -> set[str]:
    refs = set()
    for entry in table["rows"]:
        for key in entry.get("each") or [None]:
            for cell in entry["cells"]:
                text = str(cell).replace("$key", str(key)) if key is not None else str(cell)
                refs |= set(_REF.findall(text))
    return refs


def _line(cells: list[str]) -> str:
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def render_table(matrix: Matrix, table: dict) -> str:
    """A documentation table from the rows' expected values: ``columns`` (``head``, ``align``
    left or right), ``rows`` each ``cells`` (text with ``{ROW}`` standing for that row's expected
    value in its format), or ``each: [keys]`` with ``$key`` in its cells for one line per key."""
    cols = table["columns"]
    lines = [_line([str(c["head"]) for c in cols]),
             "|" + "|".join("---:" if c.get("align", "right") == "right" else "---" for c in cols) + "|"]

    def cell(text: str) -> str:
        return _REF.sub(lambda m: matrix.rows[m.group(1)].show(matrix.rows[m.group(1)].expected), text)

    for entry in table["rows"]:
        for key in entry.get("each") or [None]:
            texts = [str(c).replace("$key", str(key)) if key is not None else str(c) for c in entry["cells"]]
            if len(texts) != len(cols):
                raise XqaError(f"table {table['id']}: a line has {len(texts)} cells for {len(cols)} columns")
            lines.append(_line([cell(t) for t in texts]))
    return "\n".join(lines)


def _region(table_id: str) -> re.Pattern:
    return re.compile(rf"(<!-- repro:{re.escape(table_id)} -->\n)(.*?)(<!-- /repro -->)", re.S)


def regenerate(matrix: Matrix, root: Path = ROOT) -> dict[Path, tuple[str, str]]:
    """``{doc file: (text now, text with every table made from the matrix)}`` (raises XqaError
    when a table's markers are missing)."""
    docs: dict[Path, tuple[str, str]] = {}
    for table in matrix.tables:
        for doc in table["docs"]:
            path = root / doc
            old, new = docs.get(path, (None, None))
            if old is None:
                old = new = path.read_text(encoding="utf-8")
            pattern = _region(table["id"])
            if not pattern.search(new):
                raise XqaError(f"{doc}: no '<!-- repro:{table['id']} -->' … '<!-- /repro -->' region")
            body = render_table(matrix, table)
            new = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(3), new)
            docs[path] = (old, new)
    return docs


def quotes(matrix: Matrix, root: Path = ROOT) -> list[str]:
    """The prose figures that do not say what the matrix expects: '<file>: <text> not found'."""
    missing = []
    for row in matrix.rows.values():
        for doc, words in row.quoted.items():
            text = words.replace("{}", row.show(row.expected))
            if text not in (root / doc).read_text(encoding="utf-8"):
                missing.append(f"{doc}: {row.id}: {text!r} not found")
    return missing
