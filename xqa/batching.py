"""Answering the questions that arrive together in one pass: a micro-batcher in front of
:meth:`xqa.pipeline.Pipeline.answer`.

The demo serves many users at once. Answered one at a time, each question pays for its own
question encoding, retrieval call and reader batches, and the threads that wait for the
reader's lock contend for the same two cores. :class:`Batcher` runs one worker thread: a
request (:meth:`Batcher.ask`, from any thread) goes into a queue, and the worker answers
everything queued when it is free: questions that share a method, K, number of passages
read and reader are answered by one :meth:`Pipeline.answer` call — one batched encoding, one batched
search, and the reader's windows of all of them batched by length. Nothing waits on purpose:
a lone question starts at once, and the questions that arrive while a batch is being read form
the next one (``max_wait`` adds a wait, which helps only when requests arrive in a steady trickle).

The answers are those :meth:`Pipeline.ask` gives one question at a time
(``tests/test_batching.py`` compares them): the reader scores every window on its own (an
attention mask hides the padding a longer batch-mate adds). The arithmetic still differs with
the batch's shape: in bf16 kernels add in another order, and the int8 runtime quantises
activations per batch, so scores can move a little (on 48 shipped questions in bf16: the same
answers, scores within 0.02, calibrated probabilities within 0.006; docs/demo.md).
A batch that fails is answered again one question at a time, so one bad
question fails alone.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from xqa.errors import XqaError
from xqa.records import Question

DEFAULT_MAX_BATCH = 16


@dataclass
class _Request:
    question: Question
    key: tuple[Any, ...]    # (method, k, n_passages, reader): what one Pipeline.answer call shares
    future: Future = field(default_factory=Future)


class Batcher:
    """Answers questions submitted from many threads, batching those that wait together.

    ``max_batch``: most questions in one :meth:`Pipeline.answer` call; ``max_wait``: seconds the
    worker waits for more after the first of a batch (0: none)."""

    def __init__(self, pipeline, max_batch: int = DEFAULT_MAX_BATCH, max_wait: float = 0.0):
        if max_batch < 1:
            raise XqaError(f"max_batch must be at least 1, not {max_batch}")
        if max_wait < 0:
            raise XqaError(f"max_wait must not be negative, not {max_wait}")
        self.pipeline = pipeline
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.sizes: Counter[int] = Counter()  # batch size -> Pipeline.answer calls of that size
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ callers

    def submit(self, question: Question, method: str | None = None, k: int | None = None,
               n_passages: int | None = None, reader: str | None = None) -> Future:
        """A future of ``question``'s :class:`xqa.records.Answer`; ``reader``: the name of the
        pipeline's reader that reads it (None: the default)."""
        if self._closed:
            raise XqaError("the batcher is closed")
        self._start()
        request = _Request(question, (method, k, n_passages, reader))
        self._queue.put(request)
        return request.future

    def ask(self, text: str, lang: str = "auto", *, question_id: str = "q", method: str | None = None,
            k: int | None = None, n_passages: int | None = None, reader: str | None = None,
            timeout: float | None = None):
        """:meth:`Pipeline.ask`, batched with whatever else is asked meanwhile: an
        :class:`xqa.pipeline.Asked`. The language is identified in the caller's thread."""
        from xqa.pipeline import AUTO, Asked, question_text

        text = question_text(text)
        searched, identified = self.pipeline.question_languages(text, lang)
        question = Question(id=question_id, question=text, lang=searched)
        answer = self.submit(question, method, k, n_passages, reader).result(timeout)
        return Asked(question, answer, detected=lang == AUTO, identified=identified)

    def close(self) -> None:
        """Answer what is queued, then stop the worker."""
        self._closed = True
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join()

    @property
    def mean_batch(self) -> float:
        calls = sum(self.sizes.values())
        return sum(size * n for size, n in self.sizes.items()) / calls if calls else 0.0

    # ------------------------------------------------------------------ worker

    def _start(self) -> None:
        with self._start_lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="xqa-batcher", daemon=True)
                self._worker.start()

    def _take(self) -> tuple[list[_Request], bool]:
        """The next batch (blocks for its first request) and whether the batcher was closed."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch, closed = [first], False
        deadline = time.monotonic() + self.max_wait
        while len(batch) < self.max_batch:
            try:
                wait = deadline - time.monotonic()
                item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                closed = True
                break
            batch.append(item)
        return batch, closed

    def _run(self) -> None:
        closed = False
        while not closed:
            batch, closed = self._take()
            groups: dict[tuple[Any, ...], list[_Request]] = {}
            for r in batch:
                if r.future.set_running_or_notify_cancel():
                    groups.setdefault(r.key, []).append(r)
            for key, requests in groups.items():
                self._answer(key, requests)

    def _answer(self, key: tuple[Any, ...], requests: list[_Request]) -> None:
        method, k, n, reader = key
        chosen = {} if reader is None else {"reader": reader}  # None: the pipeline's default reader
        try:
            answers = self.pipeline.answer([r.question for r in requests], method=method, k=k, n_passages=n,
                                           **chosen)
        except BaseException as e:  # noqa: BLE001 - handed to the callers below
            if len(requests) == 1:
                requests[0].future.set_exception(e)
                return
            for r in requests:  # one bad question must not fail the others: one at a time
                self._answer(key, [r])
            return
        self.sizes[len(requests)] += 1
        for r, a in zip(requests, answers):
            r.future.set_result(a)
