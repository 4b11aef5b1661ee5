"""The Gradio demo: ask in any language, see the answer, the n-best and the evidence.

``build_app(pipeline)`` lays out the page and wires one event, ``/answer``
(API name ``answer``: question, language, method, K, passages, and the reader
where the pipeline has several → status, answer, n-best, evidence, answer record). It reads only the pipeline's
*config* (methods, defaults, languages, examples), so it is instant: models
and indexes load in :func:`warm_up`, which ``xqa demo`` runs in a background
thread while the server already listens. A question asked before the warm-up
ends waits for it (the pipeline loads each part once, under its lock).

Privacy: :func:`launch` binds 127.0.0.1 by default, never opens a share
tunnel, and turns off Gradio's analytics, monitoring, SSR (Node) and run
history; the default theme's fonts are served by Gradio itself.

Guarding: :func:`auth_users` reads the accounts of ``--auth-file``,
``$XQA_DEMO_AUTH`` and ``--auth`` (Gradio's login page asks for one of them);
:func:`exposure_warning` says when a non-loopback address is served without
any; :class:`Readiness` is what ``GET /ready`` answers (503 while the models
load, 200 once :func:`warm_up` has loaded them).
"""
from __future__ import annotations

import ipaddress
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apps import render
from xqa import methods as _registry
from xqa.errors import XqaError
from xqa.langid import LANGUAGE_NAMES, UNKNOWN, language_name, resolve_language
from xqa.langid import warm_up as langid_warm_up
from xqa.langid.rules import detect_language
from xqa.records import Question
from xqa.rendering import NBEST_SHOWN, script_search

log = logging.getLogger("xqa.demo")

MAX_K, MAX_PASSAGES_READ = 1000, 100  # what one request may ask for (the page's sliders stop lower)
DEFAULT_BATCH = 16  # questions answered together (xqa.batching); 1: one at a time
UNBATCHED_CONCURRENCY = 2  # requests in flight answered one at a time: the reader runs one at a time anyway
# The languages of MIA 2022 (XOR-TyDi + MKQA + the surprise languages): the choices when a config names none.
MIA_LANGUAGES = ("ar", "bn", "da", "de", "en", "es", "fi", "fr", "he", "hu", "it", "ja", "km", "ko", "ms",
                 "nl", "no", "pl", "pt", "ru", "sv", "ta", "te", "th", "tl", "tr", "vi", "zh")


def language_choices(pipeline) -> list[tuple[str, str]]:
    """``[("auto (detect)", "auto"), ("ja — Japanese", "ja"), ...]`` for the language dropdown."""
    codes = list(pipeline.config.languages) or list(MIA_LANGUAGES)
    return [("auto (detect)", "auto")] + [(f"{c} — {language_name(c)}", c) for c in codes]


def example_rows(pipeline) -> list[list[str]]:
    """``[question, language]`` per config example; language "auto" where detection gets it right."""
    return [row for row, _ in _examples(pipeline)]


def _examples(pipeline) -> list[tuple[list[str], str]]:
    """(row, label) per usable config example; the label names the language and marks cross-lingual ones."""
    out = []
    known = set(pipeline.config.languages)
    for ex in pipeline.config.examples:
        q, lang = str(ex.get("question", "")).strip(), str(ex.get("lang", "")).strip()
        if not q or render.validate_question(q):
            continue
        guess = resolve_language(detect_language(q), known)  # the rules: building the page loads no model
        label = f"{q}  ({language_name(lang) if lang else 'any language'}"
        label += ", answered from another language)" if ex.get("crosslingual") else ")"
        out.append(([q, "auto" if not lang or guess == lang else lang], label))
    return out


def reader_description(cfg, name: str | None = None) -> str:
    """How the config's reader ``name`` (None: its default reader) answers: its family's
    description (``reader.registry``), found from the artifact's config.json without loading it."""
    from xqa.pipeline import reader_family

    model = cfg.reader_config(name).model
    return reader_family(cfg.path(model)).description if model else ""


def reader_choices(pipeline) -> list[str]:
    """The names of the pipeline's readers, the default first: the reader selector's choices."""
    return list(pipeline.readers)


class Answerer:
    """The ``/answer`` event: validate, detect the language, answer, format.

    Never raises for a user's mistake or a missing artifact: the status line
    says what went wrong, and the other outputs are cleared.
    """

    def __init__(self, pipeline, max_chars: int = render.MAX_QUESTION_CHARS, batcher=None):
        """``batcher``: a :class:`xqa.batching.Batcher` that answers this question together with
        the others asked meanwhile; None answers it alone (:meth:`Pipeline.ask`)."""
        self.pipeline = pipeline
        self.max_chars = max_chars
        self.batcher = batcher
        self.methods = list(pipeline.methods)
        self.readers = reader_choices(pipeline)
        self._ids = itertools.count(1)

    def empty(self, message: str) -> tuple:
        return render.message_markdown(message), "", [], "", None

    def __call__(self, question: str, lang: str = "auto", method: str | None = None,
                 k: float | None = None, n_passages: float | None = None, reader: str | None = None) -> tuple:
        request = self.prepare(question, lang, method, k, n_passages, reader)
        if isinstance(request, tuple):
            return request
        t0 = time.perf_counter()
        try:
            ask = self.batcher.ask if self.batcher is not None else self.pipeline.ask
            asked = ask(request.text, request.lang, question_id=request.qid, method=request.method, k=request.k,
                        n_passages=request.n, reader=request.reader)
        except Exception as e:  # noqa: BLE001 - the status line says what went wrong
            return self.failed(request, e)
        return self.shown(request, asked, time.perf_counter() - t0)

    def batch(self, questions: list, langs: list, methods: list, ks: list, ns: list,
              readers: list | None = None) -> tuple[list, ...]:
        """The ``/answer`` event as Gradio's ``batch=True`` calls it: a list per input, a list per
        output. The questions that share a method, K, passages read and reader are answered by one
        :meth:`Pipeline.answer` call (the alternative to :class:`xqa.batching.Batcher`)."""
        from xqa.pipeline import AUTO, Asked

        outs: list[tuple | None] = [None] * len(questions)
        groups: dict[tuple, list[tuple[int, _Request, Question, str]]] = {}
        readers = readers if readers is not None else [None] * len(questions)
        for i, args in enumerate(zip(questions, langs, methods, ks, ns, readers)):
            request = self.prepare(*args)
            if isinstance(request, tuple):
                outs[i] = request
                continue
            try:
                code, identified = self.pipeline.question_languages(request.text, request.lang)
            except Exception as e:  # noqa: BLE001
                outs[i] = self.failed(request, e)
                continue
            q = Question(id=request.qid, question=request.text, lang=code)
            groups.setdefault((request.method, request.k, request.n, request.reader), []).append(
                (i, request, q, identified))
        for (method, k, n, reader), items in groups.items():
            t0 = time.perf_counter()
            try:
                answers = self.pipeline.answer([q for _, _, q, _ in items], method=method, k=k, n_passages=n,
                                               reader=reader)
            except Exception:  # noqa: BLE001 - one at a time, so one bad question fails alone
                for i, request, _, _ in items:
                    outs[i] = self(request.text, request.lang, request.method, request.k, request.n, request.reader)
                continue
            seconds = time.perf_counter() - t0
            for (i, request, q, identified), answer in zip(items, answers):
                asked = Asked(q, answer, detected=request.lang == AUTO, identified=identified)
                outs[i] = self.shown(request, asked, seconds)
        return tuple(list(column) for column in zip(*outs))

    def prepare(self, question: str, lang: str = "auto", method: str | None = None, k: float | None = None,
                n_passages: float | None = None, reader: str | None = None):
        """The request checked: a :class:`_Request`, or the outputs that say what is wrong with it."""
        problem = render.validate_question(question, self.max_chars)
        if problem:
            return self.empty(problem)
        text = question.strip()
        cfg = self.pipeline.config
        method = method or cfg.retrieval.method
        if not isinstance(method, str) or method not in self.methods:
            offered = ", ".join(self.methods) or "none (the config names no index)"
            shown = str(method)[:40]
            return self.empty(f"Retrieval method {shown!r} is not available here; choose one of: {offered}.")
        if lang is None or isinstance(lang, str):
            lang = (lang or "").strip() or "auto"
        if not isinstance(lang, str) or lang != "auto" and lang not in LANGUAGE_NAMES:
            shown = str(lang) if len(str(lang)) <= 40 else str(lang)[:40] + "…"
            return self.empty(f"Unknown language code {shown!r}; choose one from the list, or auto.")
        reader = reader or self.readers[0]
        if not isinstance(reader, str) or reader not in self.readers:
            return self.empty(f"Reader {str(reader)[:40]!r} is not available here; choose one of: "
                              f"{', '.join(self.readers)}.")
        n = _count(n_passages, cfg.reader_config(reader).n_passages, MAX_PASSAGES_READ)
        if isinstance(n, str):
            return self.empty(f"Passages read: {n}.")
        k = _count(k, cfg.retrieval.k, MAX_K)
        if isinstance(k, str):
            return self.empty(f"K (passages retrieved): {k}.")
        return _Request(text, lang, method, max(k, n), n, f"demo-{next(self._ids)}", reader)

    def failed(self, request: "_Request", error: Exception) -> tuple:
        if isinstance(error, XqaError):
            return self.empty(str(error))
        # a bug, not the user's doing: keep the server up, log the trace
        log.error("answering %r (%s, %s) failed", request.text, request.lang, request.method, exc_info=error)
        return self.empty("Something went wrong while answering; the server log has the details.")

    def shown(self, request: "_Request", asked, seconds: float) -> tuple:
        """The five outputs of an answered request."""
        cfg = self.pipeline.config
        answer, code, detected = asked.answer, asked.question.lang, asked.detected
        method, k, n = request.method, request.k, request.n
        rc = cfg.reader_config(request.reader)
        fused = rc.evidence_fusion
        note = ""
        uncovered = code != UNKNOWN and cfg.languages and code not in cfg.languages
        if code == UNKNOWN or uncovered:
            how = script_search(self.pipeline.script_indexes(asked.question.question), mark=lambda c: f"`{c}`",
                                method=method)
            if uncovered:
                note = f"No index of this pipeline covers {language_name(code)} (`{code}`): {how}."
            elif asked.identified:
                note = (f"The question reads as {language_name(asked.identified)} (`{asked.identified}`), which no "
                        f"index of this pipeline covers: {how}.")
            else:
                note = f"The language was not identified among this pipeline's: {how}."
        calibrator = self.pipeline.calibrator_of(request.reader)
        if calibrator is not None and not calibrator.fits_method(_registry.method(method).name):
            note = " ".join(filter(None, (note, (
                f"No P(right) for `{method}`: the calibrated probability is fitted on "
                f"`{calibrator.fitted_on['method']}`'s answers (retrieval scores differ in scale between "
                f"methods); the bar shows the fused probability."))))
        record = answer.to_dict()
        record.update(lang=code, detected=detected, identified=asked.identified or None, method=method, k=k,
                      n_passages=n, reader=request.reader, seconds=round(seconds, 4))
        shown_reader = request.reader if len(self.readers) > 1 else ""
        return (render.status_markdown(code, detected, method, k, n, seconds, note, reader=shown_reader,
                                       read=len(answer.evidence)),
                render.answer_html(answer, fused, code, rc.answerability_threshold, rc.not_found_threshold),
                render.nbest_rows(answer),
                render.evidence_html(answer),
                record)


def _count(value: Any, default: int, most: int) -> int | str:
    """``value`` (a slider's number, or what an API client sent) as a count from 1 to ``most``;
    None or empty: ``default``. Else what is wrong with it, to say on the status line."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return f"expected a whole number from 1 to {most}, got {shown}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        return f"expected a whole number from 1 to {most}, got {shown}"
    if not 1 <= value <= most:   # a slider sends 0 as 0.0: said as the whole number it is
        return f"choose a number from 1 to {most}, not {int(value) if abs(value) < 1e15 else shown}"
    return int(value)


@dataclass(frozen=True)
class _Request:
    """A checked request of the ``/answer`` event."""

    text: str
    lang: str
    method: str
    k: int
    n: int
    qid: str
    reader: str      # the name of the reader that reads (Pipeline.readers)


def method_choices(pipeline) -> list[tuple[str, str]]:
    """The retrieval method dropdown: (label, method) for every method whose indexes the
    pipeline's config names, in the registry's order (:mod:`xqa.methods`)."""
    return [(render.method_label(m), m) for m in pipeline.methods]


BATCHERS = ("xqa", "gradio")   # who gathers the questions answered together


def as_sent(component):
    """``component`` (a Gradio input) handing the event the value a client sent, unchanged.

    Gradio's own checks (a slider's bounds, a choice among the listed ones, any value made text)
    answer an API client's bad value with a traceback in the server log and a message of Gradio's,
    or none; :meth:`Answerer.prepare` checks every value and says on the status line what is wrong
    with it. (An event that updates the component's properties, not only its value, makes Gradio
    re-create it with its own checks: the page's events set values only.)"""
    component.preprocess = lambda payload: payload
    return component


def build_app(pipeline, *, max_chars: int = render.MAX_QUESTION_CHARS, batch: int = DEFAULT_BATCH,
              batcher: str = "xqa", concurrency: int | None = None, max_queue: int | None = 64):
    """The demo page for ``pipeline`` (a :class:`xqa.pipeline.Pipeline`); loads no model.

    ``batch``: most questions answered together (1: each on its own), gathered by ``batcher``:
    ``xqa`` (:class:`xqa.batching.Batcher`: requests in flight wait for its worker) or
    ``gradio`` (the event with ``batch=True``: Gradio's queue hands :meth:`Answerer.batch` up
    to ``batch`` waiting requests at once); ``concurrency``: requests in flight (more queue; default: ``batch``, or
    :data:`UNBATCHED_CONCURRENCY` when ``batch`` is 1); ``max_queue``: waiting requests beyond
    which new ones are turned away (None: unbounded).
    """
    import gradio as gr

    cfg = pipeline.config
    methods = list(pipeline.methods)
    default_method = cfg.retrieval.method if cfg.retrieval.method in methods else (methods[0] if methods else None)
    if batcher not in BATCHERS:
        raise XqaError(f"unknown batcher {batcher!r}; choose from {', '.join(BATCHERS)}")
    gradio_batches = batch > 1 and batcher == "gradio"
    worker = None
    if batch > 1 and not gradio_batches:
        from xqa.batching import Batcher

        worker = Batcher(pipeline, max_batch=batch)
    if concurrency is None:
        concurrency = batch if batch > 1 else UNBATCHED_CONCURRENCY
    answerer = Answerer(pipeline, max_chars=max_chars, batcher=worker)
    readers = answerer.readers
    k_max = max(100, cfg.retrieval.k)
    n_max = max(50, *(cfg.reader_config(name).n_passages for name in readers))
    uncalibrated = " Its answers carry no calibrated P(right)."   # where the page's other readers' do
    descriptions = [(name, reader_description(cfg, name)
                     + (uncalibrated if cfg.reader.answerability is not None
                        and cfg.reader_config(name).answerability is None else "")) for name in readers]

    with gr.Blocks(title="xqa — multilingual question answering", analytics_enabled=False) as demo:
        gr.Markdown(render.intro_markdown(cfg.about, cfg.languages, cfg.retrieval.method,
                                          render.readers_markdown(descriptions)), elem_id="intro")
        with gr.Row():
            with gr.Column(scale=3):
                question = gr.Textbox(label="Question", lines=1, max_lines=4, elem_id="question",
                                      placeholder="e.g. ¿Quién escribió Don Quijote?  /  東京タワーの高さは？",
                                      info=f"Any language, up to {max_chars} characters. Enter asks.")
                ask = gr.Button("Answer", variant="primary", elem_id="ask")
            with gr.Column(scale=2):
                lang = gr.Dropdown(language_choices(pipeline), value="auto", label="Question language",
                                   info="auto: detected from the question", elem_id="lang",
                                   allow_custom_value=True)
                method = gr.Dropdown(method_choices(pipeline),
                                     value=default_method, label="Retrieval method", elem_id="method")
                with gr.Row():
                    k = gr.Slider(1, k_max, value=cfg.retrieval.k, step=1, label="K (passages retrieved)",
                                  elem_id="k")
                    n_passages = gr.Slider(1, n_max, value=cfg.reader.n_passages, step=1,
                                           label="Passages read", elem_id="n_passages")
                chosen = None
                if len(readers) > 1:   # each reader reads with its own settings; the slider starts at its own
                    chosen = gr.Radio(readers, value=readers[0], label="Reader", elem_id="reader",
                                      info="the model that reads the passages and answers (the first: the default)")
                    chosen.change(lambda name: cfg.reader_config(name).n_passages, chosen,
                                  n_passages, api_visibility="private")
        status = gr.Markdown(elem_id="status")
        answer = gr.HTML(elem_id="answer", css_template=render.CSS)
        nbest = gr.Dataframe(headers=render.NBEST_HEADERS, interactive=False,
                             label=f"n-best answers (the best {NBEST_SHOWN}; the answer record lists every one)",
                             elem_id="nbest", wrap=True)
        gr.Markdown("### Evidence (the passages the reader saw; the answer is highlighted)")
        evidence = gr.HTML(elem_id="evidence", css_template=render.CSS)
        with gr.Accordion("Answer record (JSON)", open=False):
            record = gr.JSON(elem_id="record")

        inputs = [question, lang, method, k, n_passages, *([chosen] if chosen is not None else [])]
        for component in inputs:   # Answerer.prepare checks what a client sends
            as_sent(component)
        outputs = [status, answer, nbest, evidence, record]
        if gradio_batches:   # one batch at a time, of up to ``batch`` waiting requests
            gr.on([ask.click, question.submit], answerer.batch, inputs, outputs, api_name="answer", batch=True,
                  max_batch_size=batch, concurrency_limit=1)
        else:
            gr.on([ask.click, question.submit], answerer, inputs, outputs, api_name="answer")
        examples = _examples(pipeline)
        if examples:
            ex = gr.Examples([row for row, _ in examples], [question, lang], label="Examples (click to ask)",
                             example_labels=[label for _, label in examples], cache_examples=False,
                             examples_per_page=30)
            ex.load_input_event.then(answerer, inputs, outputs, api_visibility="private")
    demo.queue(default_concurrency_limit=concurrency, max_size=max_queue)
    demo.xqa_batcher = worker  # the tests read its batch sizes
    return demo


class Readiness:
    """Whether the models are loaded: what ``GET /ready`` answers (:func:`launch`).

    States: ``loading`` (503, the warm-up runs), ``ready`` (200, :func:`warm_up` loaded
    everything), ``failed`` (503, the warm-up failed: questions load again and may fail
    the same way), ``lazy`` (200, no warm-up: the models load on the first question).
    """

    def __init__(self, state: str = "loading"):
        self._lock = threading.Lock()
        self.state, self.seconds, self.error = state, None, None

    def set(self, state: str, seconds: float | None = None, error: str | None = None) -> None:
        with self._lock:
            self.state, self.seconds, self.error = state, seconds, error

    @property
    def ready(self) -> bool:
        return self.state in ("ready", "lazy")

    def report(self) -> tuple[int, dict]:
        """``(HTTP status, JSON body)`` of ``GET /ready``."""
        with self._lock:
            body: dict[str, Any] = {"ready": self.ready, "state": self.state}
            if self.seconds is not None:
                body["seconds"] = round(self.seconds, 1)
            if self.error:
                body["error"] = self.error
        return (200 if body["ready"] else 503), body


def warm_up(pipeline, say: Callable[[str], Any] = print, readiness: Readiness | None = None) -> float | None:
    """Load every part the offered methods need and answer one question; seconds taken, None on failure.

    Loading starts the JVM (BM25) and reads the FAISS indexes and the models;
    the first real question then runs at full speed. ``readiness`` (if given)
    turns ``ready`` or ``failed`` at the end.
    """
    t0 = time.perf_counter()
    say("xqa demo: loading indexes and models in the background ...")
    try:
        methods = list(pipeline.methods)
        # each method's retriever, and the fallback's: the first question a method finds
        # nothing for should not wait for the dense model to load
        for m in dict.fromkeys(methods + [f for f in map(pipeline.fallback_for, methods) if f]):
            pipeline.retriever(m)
        for name in pipeline.readers:   # every reader the page offers
            pipeline.reader_of(name)
        langid_warm_up()  # lingua's models, which the first question would otherwise wait for
        ex = next(iter(pipeline.config.examples), {"question": "What is the capital of Finland?", "lang": "en"})
        q = Question(id="warm-up", question=ex["question"], lang=ex.get("lang") or "en")
        if methods:
            pipeline.answer([q], n_passages=min(2, pipeline.config.reader.n_passages))
    except Exception as e:
        say(f"xqa demo: warm-up failed: {e}")
        log.debug("warm-up failed", exc_info=True)
        if readiness is not None:
            readiness.set("failed", time.perf_counter() - t0, error=str(e))
        return None
    seconds = time.perf_counter() - t0
    if readiness is not None:
        readiness.set("ready", seconds)
    say(f"xqa demo: ready in {seconds:.1f} s: models loaded (retrieval methods: {', '.join(methods) or 'none'})")
    return seconds


def launch(demo, host: str = "127.0.0.1", port: int | None = 7860, *, auth: list[tuple[str, str]] | None = None,
           readiness: Readiness | None = None, block: bool = True, quiet: bool = True):
    """Serve ``demo`` on ``host:port`` with nothing sent anywhere else; returns the local URL.

    ``auth``: ``(user, password)`` pairs; the page then opens with Gradio's login form and
    every route but ``/ready`` asks for a login. ``readiness``: adds ``GET /ready``
    (its :meth:`Readiness.report`), which answers without a login: it tells only whether
    the models are loaded, for a probe or a proxy to poll.
    """
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as e:   # Gradio would say it found no free port
        raise XqaError(f"cannot serve on {host}: no address of that name ({e}); give --host an address or "
                       f"name of this machine, e.g. 127.0.0.1 (this machine only) or 0.0.0.0 (every "
                       f"interface)") from None
    try:
        demo.launch(server_name=host, server_port=port, share=False, prevent_thread_lock=True, quiet=quiet,
                    show_error=False, ssr_mode=False, mcp_server=False, enable_monitoring=False,
                    run_history=False, footer_links=["api", "settings"], pwa=False,
                    auth=list(auth) if auth else None,
                    auth_message="xqa demo: sign in with the user name and password you were given."
                    if auth else None)
    except OSError as e:
        raise XqaError(f"cannot serve on {host}:{port}: {e} (choose another --port)") from None
    if readiness is not None:
        _add_ready_route(demo.app, readiness)
    url = demo.local_url
    if block:
        print(f"xqa demo: serving on {url}  (Ctrl+C stops)", flush=True)
        demo.block_thread()
    return url


def _add_ready_route(app, readiness: Readiness) -> None:
    from fastapi.responses import JSONResponse

    def ready():
        status, body = readiness.report()
        return JSONResponse(body, status_code=status)

    app.add_api_route("/ready", ready, methods=["GET"], include_in_schema=False)


# ------------------------------------------------------------------ guarding an exposed demo

AUTH_ENV = "XQA_DEMO_AUTH"


def _account(text: str, where: str) -> tuple[str, str]:
    """``(user, password)`` of ``USER:PASSWORD``; the error names ``where`` and never the password."""
    user, sep, password = text.partition(":")
    user = user.strip()
    if not sep:
        raise XqaError(f"{where}: expected USER:PASSWORD, found no ':'")
    if not user:
        raise XqaError(f"{where}: expected USER:PASSWORD, the user name is empty")
    if any(c.isspace() for c in user):
        raise XqaError(f"{where}: the user name {user!r} contains white space")
    if not password:
        raise XqaError(f"{where}: the password of {user!r} is empty")
    return user, password


def read_auth_file(path: str | os.PathLike) -> list[tuple[str, str]]:
    """The accounts of ``path``: one ``USER:PASSWORD`` a line (the password is everything after
    the first ``:`` up to the line end); blank lines and lines starting with ``#`` are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise XqaError(f"--auth-file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise XqaError(f"--auth-file {path}: cannot read it ({e})") from None
    out = [_account(line, f"--auth-file {path}:{i}")
           for i, line in enumerate(text.splitlines(), 1) if line.strip() and not line.lstrip().startswith("#")]
    if not out:
        raise XqaError(f"--auth-file {path}: holds no USER:PASSWORD line")
    return out


def auth_users(server: ServerConfig, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Every account ``xqa demo`` accepts: ``--auth-file``'s lines, ``$XQA_DEMO_AUTH``'s entries
    (``USER:PASSWORD[,USER:PASSWORD...]``) and ``--auth``'s, in that order; empty when none is
    given. A malformed entry or a user named twice is an :class:`XqaError` naming where."""
    environ = os.environ if environ is None else environ
    found: list[tuple[tuple[str, str], str]] = []
    if server.auth_file:
        found += [(a, f"--auth-file {server.auth_file}") for a in read_auth_file(server.auth_file)]
    value = environ.get(AUTH_ENV)
    if value is not None:
        entries = [e.strip() for e in value.split(",")]
        if not any(entries):
            raise XqaError(f"${AUTH_ENV} is set but empty: give USER:PASSWORD[,USER:PASSWORD...] or unset it")
        found += [(_account(e, f"${AUTH_ENV} entry {i}"), f"${AUTH_ENV}")
                  for i, e in enumerate(entries, 1) if e]
    if server.auth is not None:
        found.append((_account(server.auth, "--auth"), "--auth"))
    seen: dict[str, str] = {}
    for (user, _), where in found:
        if user in seen:
            raise XqaError(f"the user {user!r} is given twice ({seen[user]} and {where}); name each user once")
        seen[user] = where
    return [a for a, _ in found]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, port: int | None, guarded: bool) -> str | None:
    """What ``xqa demo`` prints (stderr) when it serves a non-loopback ``host`` without accounts."""
    if guarded or is_loopback(host):
        return None
    where = ("every network interface of this machine" if host.strip() in ("0.0.0.0", "::", "")
             else f"the address {host}")
    return (f"xqa demo: WARNING: serving {host}:{port} ({where}) WITHOUT AUTHENTICATION: anyone who can "
            f"reach it can ask questions and read the collection. Add accounts with --auth-file FILE "
            f"(USER:PASSWORD lines) or ${AUTH_ENV}=USER:PASSWORD, or serve 127.0.0.1.")


__all__ = ["AUTH_ENV", "Answerer", "Readiness", "auth_users", "build_app", "example_rows", "exposure_warning",
           "is_loopback", "language_choices", "launch", "read_auth_file", "warm_up"]


# The fields' metadata are the options of ``xqa demo``'s server group (:mod:`xqa.cli_config`).
@dataclass
class ServerConfig:
    """How ``xqa demo`` serves the page (:func:`build_app`, :func:`launch`, :func:`warm_up`)."""

    host: str = field(default="127.0.0.1", metadata={
        "help": "interface to bind; 0.0.0.0 exposes the demo to your network: give it accounts "
                "(--auth-file or $XQA_DEMO_AUTH), or it warns"})
    port: int = field(default=7860, metadata={"max": 65535,
                                              "help": "port to serve on (env GRADIO_SERVER_PORT is ignored)"})
    batch: int = field(default=DEFAULT_BATCH, metadata={"min": 1,
        "help": "most questions answered together: those asked while others are being answered are "
                "encoded, searched and read in one pass (1: each on its own)"})
    batcher: str = field(default="xqa", metadata={
        "choices": BATCHERS,
        "help": "who gathers them: xqa's own worker (xqa) or Gradio's batched event (gradio)"})
    concurrency: int | None = field(default=None, metadata={"min": 1,
        "help": f"requests in flight; more wait in the queue (default: --batch, or "
                f"{UNBATCHED_CONCURRENCY} with --batch 1)"})
    max_queue: int = field(default=64, metadata={
        "min": 1, "help": "waiting questions beyond which new ones are turned away"})
    max_chars: int = field(default=render.MAX_QUESTION_CHARS, metadata={"min": 1,
        "help": "longest question accepted, in characters"})
    warm_up: bool = field(default=True, metadata={
        "help": "load indexes and models on the first question instead of at start"})
    auth_file: str | None = field(default=None, metadata={
        "metavar": "FILE", "help": "accounts the login page accepts: one USER:PASSWORD a line (# comments); "
                                   "with $XQA_DEMO_AUTH (USER:PASSWORD[,USER:PASSWORD...]) the preferred way"})
    auth: str | None = field(default=None, metadata={
        "metavar": "USER:PASSWORD", "help": "one more account; visible in the shell history and to anyone "
                                            "who lists processes: prefer --auth-file or $XQA_DEMO_AUTH"})
