"""The demo under load and abuse: many users at once, some of them sending junk.

``run_load(url, ...)`` drives a served demo (``xqa demo``) through its API
(``/answer``, with ``gradio_client``) from ``users`` threads, for at most
``duration`` seconds and ``requests_per_user`` requests each: a bounded loop
that stops by itself. About ``bad_share`` of the requests are abusive:

* ``empty``: white space only; ``huge``: a 100 kB question; ``binary``: control
  bytes and a replacement character; ``bad-lang``: a language code that is an
  HTML tag — each must get the page's warning message (``⚠️``), escaped;
* ``script``: a question wrapped in ``<script>`` and ``<img onerror>`` tags — a
  valid question, so it must be answered, and no raw tag may reach the page.

Every other request asks a real question and must be answered. The result
counts failures per kind, gives the valid answers' latency p50/p95, and the
server's resident memory (``/proc``) before, at its peak and after.
"""
from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

BAD_KINDS = ("empty", "huge", "binary", "bad-lang", "script")
_SCRIPT = "<script>alert('xqa')</script><img src=x onerror=alert(1)>"
_RAW_TAGS = ("<script", "<img")  # as sent; escaped they read &lt;script, &lt;img


def abusive_request(kind: str, question: str) -> tuple[str, str]:
    """(question, language) of one abusive request of ``kind`` built around ``question``."""
    if kind == "empty":
        return " \n\t ", "auto"
    if kind == "huge":
        return ("x" * 99 + " ") * 1000, "auto"  # 100 kB
    if kind == "binary":
        return "\x00\x01\x02\ufffd\x7f" + bytes(range(14, 32)).decode("ascii") + question, "auto"
    if kind == "bad-lang":
        return question, "<img src=x onerror=alert(1)>"
    if kind == "script":
        return f"{_SCRIPT} {question}", "auto"
    raise ValueError(kind)


@dataclass
class LoadResult:
    users: int
    seconds: float
    requests: Counter = field(default_factory=Counter)   # kind -> sent ("valid" or a bad kind)
    failures: Counter = field(default_factory=Counter)   # kind -> not handled as it should be
    examples: list[str] = field(default_factory=list)    # the first few failures, for the report
    latencies: list[float] = field(default_factory=list)  # seconds, valid and script requests
    rss_mb: tuple[float, float, float] | None = None      # server memory: start, peak, end

    @property
    def failed_valid(self) -> int:
        return self.failures["valid"] + self.failures["script"]

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")

    @property
    def answered(self) -> int:
        """Valid requests answered as they should be (script-tagged ones included)."""
        return len(self.latencies)

    @property
    def throughput(self) -> float:
        """Answered requests per second of the load."""
        return self.answered / self.seconds if self.seconds > 0 else 0.0

    def failure_lines(self) -> list[str]:
        return [f"  {self.users} users: failure: {e}" for e in self.examples]

    def to_dict(self) -> dict:
        return {"users": self.users, "seconds": self.seconds, "requests": dict(self.requests),
                "answered": self.answered, "answered_per_second": self.throughput,
                "failures": dict(self.failures), "failed_valid": self.failed_valid,
                "p50_seconds": self.percentile(50), "p95_seconds": self.percentile(95),
                "rss_mb": self.rss_mb, "examples": self.examples}

    def table(self) -> str:
        total = sum(self.requests.values())
        lines = [f"demo under load: {self.users} concurrent users for {self.seconds:.0f} s, {total} requests "
                 f"({total / max(self.seconds, 1e-9):.1f}/s)",
                 f"{'request':<10} {'sent':>6} {'failed':>7}  expected"]
        expect = {"valid": "answered", "script": "answered, tags escaped", "empty": "warning message",
                  "huge": "warning message", "binary": "warning message", "bad-lang": "warning message, escaped"}
        for kind in ("valid", *BAD_KINDS):
            lines.append(f"{kind:<10} {self.requests[kind]:>6} {self.failures[kind]:>7}  {expect[kind]}")
        lines.append(f"answered requests: p50 {self.percentile(50) * 1e3:.0f} ms, p95 {self.percentile(95) * 1e3:.0f} ms; "
                     f"failed valid requests: {self.failed_valid}")
        if self.rss_mb:
            lines.append("server memory (RSS): start {:.0f} MB, peak {:.0f} MB, end {:.0f} MB".format(*self.rss_mb))
        lines += [f"  failure: {e}" for e in self.examples]
        return "\n".join(lines)


def load_table(rows: Sequence[tuple[str | None, LoadResult]], *, method: str, k: int, n_passages: int,
               duration: float, bad_share: float) -> str:
    """One line per load (``(server, result)``: the server's ``--batch`` and ``--batcher``, None
    for xqa demo's defaults): users, requests, answered/s, latency p50/p95, failures and the
    server's peak memory."""
    head = (f"demo under load: method {method}, K {k}, {n_passages} passages read; each load {duration:.0f} s "
            f"of requests, {bad_share:.0%} of them abusive; latency of answered requests")
    lines = [head, f"{'batch':>10} {'users':>5} {'requests':>8} {'answered':>8} {'answered/s':>10} "
                   f"{'p50 s':>6} {'p95 s':>6} {'failed':>6} {'peak RSS MB':>11}"]
    for server, r in rows:
        peak = f"{r.rss_mb[1]:.0f}" if r.rss_mb else "-"
        lines.append(f"{'-' if server is None else server:>10} {r.users:>5} {sum(r.requests.values()):>8} "
                     f"{r.answered:>8} {r.throughput:>10.2f} {r.percentile(50):>6.2f} {r.percentile(95):>6.2f} "
                     f"{sum(r.failures.values()):>6} {peak:>11}")
    lines.append("batch: the server's --batch and --batcher (1: each question on its own; -: xqa demo's "
                 "defaults); failed: requests not answered, or not warned, as they should be")
    return "\n".join(lines)


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` and its children, in MB (Linux ``/proc``)."""
    from pathlib import Path

    def one(p: int) -> float:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    total = one(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return total + sum(rss_mb(int(c)) for c in children)


def _check(kind: str, result: Sequence | None) -> str | None:
    """Why ``result`` (the five outputs of /answer) is wrong for a request of ``kind``; None if right."""
    if result is None:
        return "no response"
    status, answer_html, _nbest, evidence_html, record = result
    page = f"{status}\n{answer_html}\n{evidence_html}"
    if any(tag in page for tag in _RAW_TAGS):
        return "raw HTML from the request reached the page"
    if kind in ("valid", "script"):
        if status.startswith("⚠️") or not isinstance(record, dict) or "answer" not in record:
            return f"not answered: {status[:120]!r}"
        return None
    if not status.startswith("⚠️") or record is not None:
        return f"no warning message: {status[:120]!r}"
    return None


def run_load(url: str, questions: Sequence[str], method: str, k: int, n_passages: int, users: int = 50,
             duration: float = 120.0, requests_per_user: int = 1000, bad_share: float = 0.1, seed: int = 0,
             server_pid: int | None = None, timeout: float = 300.0, ramp_up: float = 5.0) -> LoadResult:
    """Drive the demo at ``url`` with ``users`` concurrent users asking with ``method``, ``k`` and
    ``n_passages``; see the module doc.

    The users arrive over the first ``ramp_up`` seconds; each sends at most ``requests_per_user``
    requests and none after ``duration`` seconds; the call returns when every user is done (each
    request bounded by ``timeout``).
    """
    from gradio_client import Client

    if not questions:
        raise ValueError("run_load needs at least one question")
    result = LoadResult(users=users, seconds=0.0)
    lock = threading.Lock()
    peak = [rss_mb(server_pid)] if server_pid else [0.0]
    start_rss = peak[0]
    stop = threading.Event()
    t_end = time.monotonic() + duration

    def note(kind: str, error: str | None, seconds: float | None) -> None:
        with lock:
            result.requests[kind] += 1
            if error:
                result.failures[kind] += 1
                if len(result.examples) < 10:
                    result.examples.append(f"{kind}: {error}")
            elif seconds is not None and kind in ("valid", "script"):
                result.latencies.append(seconds)

    def connect():
        # a loaded server may take longer than httpx's 5 s to hand out its config: wait as a user
        # would, and try again a few times before counting the user as failed
        error = None
        for attempt in range(3):
            try:
                return Client(url, verbose=False, download_files=False, analytics_enabled=False,
                              httpx_kwargs={"timeout": timeout})
            except Exception as e:  # noqa: BLE001 - reported below if every attempt fails
                error = e
                time.sleep(1 + attempt)
        note("valid", f"cannot connect: {type(error).__name__}: {error}", None)
        return None

    def user(i: int) -> None:
        rng = random.Random(seed * 1_000_003 + i)
        time.sleep(i * ramp_up / max(1, users))  # users arrive over ``ramp_up`` seconds
        client = connect()
        if client is None:
            return
        for _ in range(requests_per_user):
            if time.monotonic() >= t_end:
                break
            question = rng.choice(questions)
            kind = rng.choice(BAD_KINDS) if rng.random() < bad_share else "valid"
            text, lang = abusive_request(kind, question) if kind != "valid" else (question, "auto")
            t0 = time.perf_counter()
            try:
                job = client.submit(text, lang, method, k, n_passages, api_name="/answer")
                out = job.result(timeout=timeout)
                note(kind, _check(kind, out), time.perf_counter() - t0)
            except Exception as e:  # noqa: BLE001 - any transport error is a failed request
                note(kind, f"{type(e).__name__}: {str(e)[:200]}", None)

    def watch() -> None:
        while server_pid and not stop.wait(0.5):
            peak[0] = max(peak[0], rss_mb(server_pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    t0 = time.monotonic()
    threads = [threading.Thread(target=user, args=(i,), daemon=True) for i in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=duration + timeout + 60)
    result.seconds = time.monotonic() - t0
    stop.set()
    watcher.join(timeout=5)
    if server_pid:
        result.rss_mb = (start_rss, max(peak[0], rss_mb(server_pid)), rss_mb(server_pid))
    return result
