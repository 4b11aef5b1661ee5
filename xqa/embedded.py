"""Build the embedded default: world → tokenizer → indexes → tiny models → tuned weights.

Every stage is one of xqa's own commands (the same a user runs at full scale),
run in this process in order. A stage whose artifact is complete is skipped,
and the training commands resume from their checkpoints, so a killed build
continues where it stopped and a second build costs seconds.

Profiles (the generated world, the fast and fully known test world): ``world`` (the
full-size world), ``long`` (its reader trained longer) and ``small`` (a small world and short
training, for tests and quick tries). What ``make demo`` builds, the real-text default, is
:func:`real_default` (``xqa embedded build``, profile ``default``).
"""
from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from xqa.artifacts import is_complete, write_json_atomic
from xqa.errors import XqaError
from xqa.world.retrieval import CROSS_SCRIPT_STOP_FRACTION


@dataclass(frozen=True)
class Profile:
    world_scale: str
    vocab_size: int
    retriever_args: tuple[str, ...]  # beyond the command's tuned embedded defaults
    lexical_steps: int
    reader_steps: int
    reader_batch: int
    read_passages: int  # passages the reader reads per question when answering
    k: int
    train_passages_per_question: int  # passages per question in training (far cheaper; answering reads read_passages)
    reader_train_choice: str  # xqa train reader --train-contexts: which passages those are
    train_k: int  # passages kept per training question in retrieved/train.jsonl (the reader's pool)
    tune_questions: int
    span_beams: int  # reader candidates from a search restricted to passage spans (reader.spans)
    reader_group_by_length: int = 50  # xqa train reader --group-by-length (less padding: ~11 % faster steps)
    # The reader is trained, and read for β/γ tuning, by this many one-thread processes of one
    # torch-distributed job; in training each takes reader_batch / reader_procs questions of every
    # batch. On 2 cores the tiny model trains 2 % faster with a second thread, 48 % faster with a
    # second process (docs/reader.md, the generated world's reader).
    reader_procs: int = 2
    # xqa train reader --copy-attention: one decoder head is trained to point at the answer in the
    # passages, and the reader scores candidates with it. With pointer-generator scoring (below) the
    # pointer carries the copied names; world dev fusion F1 (1,000 questions) at weight 2, 4, 8:
    # 0.545, 0.610, 0.599.
    reader_copy_attention: float = 4.0
    # xqa train reader --decoder-prompt: the decoder reads the question before the answer, so the
    # pointer's first step knows the asked relation. World dev fusion F1 at 1,200 steps: 0.276 with
    # the prompt, 0.190 without.
    reader_decoder_prompt: bool = True
    # xqa train reader --labels (the world's answer label table): a cross-lingual question learns to
    # copy the answer's name as its passage writes it, which the pipeline answers in the question's
    # language. It needs steps: world dev fusion F1 (1,000 questions) 0.31 without it at 1,200 steps,
    # with it 0.29 at 1,200 (two seeds), 0.377 at 2,400 and 0.473 at 4,000.
    reader_train_labels: bool = True
    # xqa train reader --pointer-mix: the generator's share. The reader scores each answer token as
    # 0.1 x the generator's probability + 0.9 x the copy head's mass on it, and reads the spans
    # starting where that head looks. World dev fusion F1 (1,000 questions): 0.545 with it, 0.480
    # with the generator alone; shares 0.02 ... 0.1 scored alike, 0.3 a little lower.
    reader_generator_share: float = 0.1

    def __post_init__(self) -> None:
        if self.reader_procs < 1 or self.reader_batch % self.reader_procs:
            raise ValueError(f"reader_batch {self.reader_batch} must split evenly over reader_procs {self.reader_procs}")


# The embedded pipeline's retrieval: BM25 in the question's language plus the cross-script index.
# Measured on the world's dev split (docs/sparse.md, "Cross-script BM25"), it finds the gold
# passage where SPAR+SCD does not: cross-lingual top-8 0.61 against 0.01, same-language top-1 0.92
# against 0.47. SPAR+SCD and every other method stay available (xqa ask --method, the demo).
RETRIEVAL_METHOD = "sparse+roman"

# The reader reads 2 passages: with BM25 + cross-script retrieval a gold passage is first for 90 % of test
# split same-language questions, and the tiny reader is misled by more. Tuned fusion F1 on 500 dev questions
# reading 1, 2, 3, 4, 8, 12 passages: 0.197, 0.205, 0.203, 0.184, 0.158, 0.142.
# The world's answer label table, as the pipeline config names it (relative to the build folder):
# a span copied from a passage in another language answers in the question's (reader.labels).
LABELS = "world/labels.jsonl"
# The cross-script index leaves each language's frequent tokens out of its questions (world dev:
# gold passage among the 2 read for cross-lingual questions 0.70 with, 0.51 without; docs/sparse.md).
ROMAN_STOP_FRACTION = CROSS_SCRIPT_STOP_FRACTION

PROFILES = {
    "world": Profile(world_scale="default", vocab_size=8000, retriever_args=(),
                       lexical_steps=100, reader_steps=2400, reader_batch=16,
                       read_passages=2, k=60, tune_questions=500, train_passages_per_question=2,
                       reader_train_choice="evidence", train_k=16, span_beams=8),
}
# The default world and models with a reader trained 4,000 steps: reading with the evidence gets better
# with steps, and `make demo` cannot wait for them. 12,000 steps read better still but did not score
# higher end to end.
PROFILES["long"] = replace(PROFILES["world"], reader_steps=4000)
PROFILES |= {
    "small": Profile(world_scale="small", vocab_size=1500, retriever_args=("--max-steps", "30", "--batch-size", "32", "--eval-every", "10",
                                                    "--dev-questions", "100"),
                     lexical_steps=40, reader_steps=60, reader_batch=8,
                     read_passages=4, k=20, tune_questions=60, train_passages_per_question=2,
                     reader_train_choice="gold", train_k=10, span_beams=2, reader_train_labels=False),
}


def _xqa(*argv: str) -> None:
    from xqa.cli import main

    code = main([str(a) for a in argv])
    if code:
        raise XqaError(f"stage failed: xqa {' '.join(map(str, argv))} (exit {code})")


def _xqa_distributed(procs: int, *argv: str) -> None:
    """``xqa argv --threads 1`` as ``procs`` processes of one torch-distributed job (gloo on CPU).

    The processes meet at a free port of 127.0.0.1; the command shares its work between them
    (training: each takes its share of every batch). With ``procs`` 1 the command runs in this
    process, with the torch default threads. ``argv`` must be a command with ``--threads``.
    """
    if procs <= 1:
        return _xqa(*argv)
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a free port for the rendezvous, on the loopback interface only
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", str(procs),
           "--master-addr", "127.0.0.1", "--master-port", str(port), "-m", "xqa.cli", *map(str, argv),
           "--threads", "1"]
    code = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1")).returncode
    if code:
        raise XqaError(f"stage failed: {procs} processes of xqa {' '.join(map(str, argv))} (exit {code})")


class Build:
    def __init__(self, out: str | Path, profile: str = "world", seed: int = 0):
        if profile not in PROFILES:
            raise XqaError(f"unknown profile {profile!r}; choose from {sorted(PROFILES)}")
        self.out = Path(out).resolve()
        self.p = PROFILES[profile]
        self.profile = profile
        self.seed = seed

    # paths
    def __getattr__(self, name: str) -> Path:  # w, tok, bm25, ...: folders under out
        folders = {"world": "world", "tok": "tokenizer", "bm25": "bm25", "retr": "retriever", "dense": "dense",
                   "lex": "lexical", "spar": "spar", "retrieved": "retrieved", "reader": "reader",
                   "roman": "roman"}
        if name in folders:
            return self.out / folders[name]
        raise AttributeError(name)

    @property
    def passages(self) -> Path:
        return self.world / "passages.jsonl"

    @property
    def config_path(self) -> Path:
        return self.out / "pipeline.json"

    def stages(self) -> list[tuple[str, Callable[[], bool], Callable[[], None]]]:
        """(name, is_done, run) for each stage, in order."""
        p, w = self.p, self.world
        return [
            ("world", lambda: is_complete(w),
             lambda: _xqa("world", "build", "--out", w, "--size", p.world_scale, "--seed", self.seed)),
            ("tokenizer", lambda: is_complete(self.tok),
             lambda: _xqa("train", "tokenizer", "--passages", self.passages, "--questions", w / "train.jsonl",
                          "--out", self.tok, "--vocab-size", p.vocab_size)),
            ("BM25 indexes", lambda: is_complete(self.bm25),
             lambda: _xqa("index", "sparse", "--passages", self.passages, "--out", self.bm25)),
            ("cross-script BM25 index", lambda: is_complete(self.roman) and self._roman_current(), self.index_roman),
            ("dense retriever", lambda: is_complete(self.retr / "best") and self._finished(self.retr),
             lambda: _xqa("train", "retriever", "--train", w / "train.jsonl", "--dev", w / "dev.jsonl",
                          "--passages", self.passages, "--config", "tiny", "--tokenizer", self.tok,
                          *p.retriever_args, "--out", self.retr, "--seed", self.seed)),
            ("dense index", lambda: is_complete(self.dense),
             lambda: _xqa("index", "dense", "--model", self.retr / "best", "--passages", self.passages,
                          "--out", self.dense)),
            ("lexical model Λ", lambda: is_complete(self.lex / "best") and self._finished(self.lex),
             lambda: _xqa("train", "lexical", "--passages", self.passages, "--bm25", self.bm25,
                          "--tokenizer", self.tok, "--config", "tiny", "--max-steps", p.lexical_steps,
                          "--out", self.lex, "--seed", self.seed)),
            ("SPAR index", lambda: is_complete(self.spar),
             lambda: _xqa("index", "spar", "--dense", self.dense, "--lexical", self.lex / "best",
                          "--passages", self.passages, "--out", self.spar)),
            ("pipeline config", lambda: self.config_path.is_file() and not self._config_stale(), self.write_config),
            ("answer labels", self._labels_current, self.add_labels),
            ("tune α (hybrid), μ (SPAR) and w (cross-script)",
             lambda: all(self._tuned(w) for w in ("alpha", "mu", "roman_weight")), self.tune_retrieval),
            ("reader training data", self._retrieved_current, self.retrieve_for_reader),
            ("FiD reader", lambda: is_complete(self.reader / "best") and self._reader_finished(), self.train_reader),
            ("tune β, γ (evidence fusion)", lambda: self._tuned("fusion") and (self.out / "fusion.json").is_file(),
             self.tune_fusion),
        ]

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _finished(run_dir: Path) -> bool:
        state = run_dir / "checkpoint" / "trainer_state.json"
        return state.is_file() and json.loads(state.read_text()).get("done", False)

    def _reader_finished(self) -> bool:
        """Finished with this profile's number of steps; a reader of another profile is an error.
        A reader whose recorded recipe (``reader/recipe.json``) differs from the profile's, or that
        has none, is stale: it is removed and trained again, like any build product whose recipe
        changed."""
        if not self._finished(self.reader):
            return False
        stale = self._reader_stale()
        if stale:
            print(f"{self.reader}: {stale}: training it again", flush=True)
            shutil.rmtree(self.reader)
            return False
        state = json.loads((self.reader / "checkpoint" / "trainer_state.json").read_text())
        if state.get("step") != self.p.reader_steps:
            raise XqaError(f"{self.reader} holds a reader trained {state.get('step')} steps, but profile "
                           f"{self.profile!r} trains {self.p.reader_steps}: build into another --out "
                           f"(e.g. build/embedded-{self.profile}), or delete {self.reader} to retrain it "
                           f"here (β, γ are then tuned again)")
        return True

    def _reader_stale(self) -> str:
        """Why the finished reader no longer fits the profile's recipe ("" if it does)."""
        recipe, want = self.reader / "recipe.json", self._reader_recipe()
        if recipe.is_file():
            old = json.loads(recipe.read_text(encoding="utf-8"))
            changed = ", ".join(f"{k} changed" if isinstance(v, dict) else f"{k} {old.get(k)} -> {v}"
                                for k, v in want.items() if old.get(k) != v)
            return f"the reader was trained with another recipe ({changed})" if changed else ""
        return "no recipe.json beside the reader (not trained by this build)"

    def _reader_recipe(self) -> dict:
        """What the reader stage trains with, steps aside (another step count is another profile's
        reader, an error above); recorded next to the reader, so a changed recipe retrains it.
        The retrieval that made its training passages is part of it."""
        p = self.p
        return {"train_passages": p.train_passages_per_question, "train_choice": p.reader_train_choice,
                "batch": p.reader_batch, "lr": 1e-3, "warmup_steps": 50,
                "group_by_length": p.reader_group_by_length, "copy_attention": p.reader_copy_attention,
                "decoder_prompt": p.reader_decoder_prompt,
                # recorded only when on: readers built before the option stay current
                **({"train_labels": True} if p.reader_train_labels else {}),
                # the saved reader scores with the pointer weighted as in training
                "pointer_score_weight": p.reader_copy_attention, "pointer_mix": p.reader_generator_share,
                "retrieval": self._retrieval_recipe()}

    def _retrieval_recipe(self) -> dict:
        """The retrieval settings behind ``retrieved/*.jsonl`` (recorded as ``retrieved/recipe.json``),
        with the cross-script index's stop-token share (recorded only when set: older files stay
        current if it was not)."""
        if not self.config_path.is_file():
            return {}
        stop = self._roman_stop_fraction()
        return {**self._config().get("retrieval", {}), "train_k": self.p.train_k,
                **({"roman_stop_fraction": stop} if stop else {})}

    def _roman_stop_fraction(self) -> float | None:
        config = self.roman / "_all" / "config.json"
        if not config.is_file():
            return None
        return json.loads(config.read_text(encoding="utf-8")).get("stop_fraction")

    def _roman_current(self) -> bool:
        """The cross-script index leaves out the stop tokens this build asks for; one built with
        another share is stale: rebuilt, and w tuned again."""
        stale = self._roman_stop_fraction() != ROMAN_STOP_FRACTION
        if stale:
            print(f"{self.roman}: built without the stop-token share {ROMAN_STOP_FRACTION}: "
                  "building it again", flush=True)
        return not stale

    def index_roman(self) -> None:
        _xqa("index", "sparse", "--cross-script", "--passages", self.passages, "--out", self.roman,
             "--stop-fraction", ROMAN_STOP_FRACTION, "--overwrite")
        if self.config_path.is_file() and self._tuned("roman_weight"):  # tuned for the old index
            cfg = self._config()
            del cfg["tuned"]["roman_weight"]
            write_json_atomic(self.config_path, cfg)

    def _retrieved_current(self) -> bool:
        """The reader's retrieval files exist and were made with the config's retrieval settings."""
        recipe = self.retrieved / "recipe.json"
        if not (recipe.is_file() and all((self.retrieved / f"{s}.jsonl").is_file() for s in ("train", "dev", "test"))):
            return False
        return json.loads(recipe.read_text(encoding="utf-8")) == self._retrieval_recipe()

    def _config_stale(self) -> bool:
        """A config that no longer fits the profile: another retrieval method, no cross-script index named, or
        another number of passages read (or span candidates) than the profile's. Written again, it
        is tuned again: w is tuned on recall at the passages read, β/γ on reading them."""
        cfg = self._config()
        r, reader = cfg.get("retrieval", {}), cfg.get("reader", {})
        return (r.get("method") != RETRIEVAL_METHOD or r.get("roman_index") != "roman"
                or reader.get("n_passages") != self.p.read_passages or reader.get("span_beams") != self.p.span_beams)

    def _config(self) -> dict:
        return json.loads(self.config_path.read_text(encoding="utf-8"))

    def _tuned(self, what: str) -> bool:
        return self.config_path.is_file() and what in self._config().get("tuned", {})

    def _update_config(self, **changes) -> None:
        cfg = self._config()
        tuned = cfg.setdefault("tuned", {})
        for key, value in changes.items():
            section, _, field = key.partition("__")
            cfg[section][field] = value
            tuned[field] = value
        write_json_atomic(self.config_path, cfg)

    def write_config(self) -> None:
        from xqa.config import PipelineConfig, ReaderConfig, RetrievalConfig

        cfg = PipelineConfig(
            passages="world/passages.jsonl",
            retrieval=RetrievalConfig(method=RETRIEVAL_METHOD, k=self.p.k, sparse_index="bm25", dense_index="dense",
                                      spar_index="spar", roman_index="roman"),
            reader=ReaderConfig(model="reader/best", n_passages=self.p.read_passages, span_beams=self.p.span_beams,
                                labels=LABELS),
            languages=sorted(json.loads((self.world / "config.json").read_text())["languages"]),
            examples=self._examples(),
        )
        data = cfg.to_dict()
        data["tuned"] = {}
        write_json_atomic(self.config_path, data)

    def _examples(self, per_lang: int = 1) -> list[dict[str, str]]:
        """Demo examples from the test split: one same-language and one cross-lingual per language."""
        from xqa.io import read_questions

        rng = random.Random(self.seed)
        qs = read_questions(self.world / "test.jsonl")
        out = []
        for lang in sorted({q.lang for q in qs}):
            for cross in (False, True):
                pool = [q for q in qs if q.lang == lang and bool(q.meta.get("crosslingual")) == cross]
                for q in rng.sample(pool, min(per_lang, len(pool))):
                    out.append({"question": q.question, "lang": q.lang, "crosslingual": cross})
        return out

    def tune_retrieval(self) -> None:
        n = self.p.tune_questions
        dev = self.world / "dev.jsonl"
        _xqa("tune", "alpha", "--config", self.config_path, "--dev", dev, "--max-questions", n, "--write-config")
        _xqa("tune", "mu", "--config", self.config_path, "--dev", dev, "--max-questions", n, "--write-config")
        # the world's questions name their gold passages: tune the cross-script weight on recall of
        # those among the passages the reader reads
        _xqa("tune", "alpha", "--pair", "sparse+roman", "--config", self.config_path, "--dev", dev,
             "--max-questions", n, "--metric", "recall", "--at", self.p.read_passages, "--write-config")

    def retrieve_for_reader(self) -> None:
        (self.retrieved / "recipe.json").unlink(missing_ok=True)
        for split in ("train", "dev", "test"):
            _xqa("search", "--config", self.config_path, "--questions", self.world / f"{split}.jsonl",
                 "--k", self.p.train_k if split == "train" else self.p.k,
                 "--out", self.retrieved / f"{split}.jsonl")
        write_json_atomic(self.retrieved / "recipe.json", self._retrieval_recipe())

    def train_reader(self) -> None:
        p, recipe = self.p, self._reader_recipe()
        # β, γ tuned for another reader are stale: forget them, so that the next stage tunes again
        (self.out / "fusion.json").unlink(missing_ok=True)
        # No validation run: with one at the end it only cost time (the last model is kept), and the
        # next stage reads dev anyway, reporting the reader alone and fused.
        _xqa_distributed(p.reader_procs, "train", "reader", "--train", self.retrieved / "train.jsonl",
                         "--config", "tiny", "--tokenizer", self.tok,
                         "--n-context", p.train_passages_per_question, "--train-contexts", p.reader_train_choice,
                         "--lr", recipe["lr"], "--warmup-steps", recipe["warmup_steps"],
                         "--max-steps", p.reader_steps,
                         "--batch-size", p.reader_batch // p.reader_procs,
                         "--group-by-length", p.reader_group_by_length,
                         "--copy-attention", p.reader_copy_attention, "--pointer-mix", p.reader_generator_share,
                         "--out", self.reader, "--seed", self.seed,
                         *(["--decoder-prompt"] if p.reader_decoder_prompt else []),
                         *(["--labels", self.world / "labels.jsonl"] if p.reader_train_labels else []))
        write_json_atomic(self.reader / "recipe.json", self._reader_recipe())

    def _labels_current(self) -> bool:
        return (self.world / "labels.jsonl").is_file() and self._config()["reader"].get("labels") == LABELS

    def add_labels(self) -> None:
        """The world's answer label table (``world/labels.jsonl``, written by the world stage) named
        in the pipeline config; β/γ, tuned on answers without it, are tuned again."""
        if not (self.world / "labels.jsonl").is_file():
            raise XqaError(f"{self.world} has no labels.jsonl: delete the folder and build again")
        cfg = self._config()
        cfg["reader"]["labels"] = LABELS
        cfg.get("tuned", {}).pop("fusion", None)
        write_json_atomic(self.config_path, cfg)
        (self.out / "fusion.json").unlink(missing_ok=True)

    def tune_fusion(self) -> None:
        out = self.out / "fusion.json"
        # Tune with as many passages as the pipeline reads (the reader trains on fewer, and the
        # artifact records its training setting).
        _xqa_distributed(self.p.reader_procs, "tune", "fusion", "--model", self.reader,
                         "--dev", self.retrieved / "dev.jsonl", "--n-context", self.p.read_passages,
                         "--span-beams", self.p.span_beams, "--limit", self.p.tune_questions, "--out", out,
                         "--labels", self.world / "labels.jsonl")
        best = json.loads(out.read_text(encoding="utf-8"))
        self._update_config(**{f"reader__{k}": best[k] for k in ("beta", "gamma", "miss", "soft")})
        cfg = self._config()
        cfg["tuned"]["fusion"] = best
        write_json_atomic(self.config_path, cfg)

    # ------------------------------------------------------------------ run

    def run(self) -> Path:
        if (self.out / "source.json").is_file():
            raise XqaError(f"{self.out} holds a real-text build (xqa build); build the world into another "
                           f"--out (e.g. build/world), or delete {self.out}")
        self.out.mkdir(parents=True, exist_ok=True)
        stages = self.stages()
        t_all = time.perf_counter()
        for i, (name, done, run) in enumerate(stages, 1):
            if done():
                print(f"[{i}/{len(stages)}] {name}: built", flush=True)
                continue
            print(f"[{i}/{len(stages)}] {name} ...", flush=True)
            t0 = time.perf_counter()
            run()
            if not done():
                raise XqaError(f"stage {name!r} ran but its artifact is not complete")
            print(f"[{i}/{len(stages)}] {name}: done in {time.perf_counter() - t0:.0f} s", flush=True)
        print(f"embedded default ({self.profile}) ready in {self.out} "
              f"({time.perf_counter() - t_all:.0f} s); pipeline config: {self.config_path}", flush=True)
        return self.config_path


def real_default(out: str | Path, threads: int = 0) -> Path:
    """The real-text default (``make demo``): ``xqa build`` over the shipped multilingual
    Wikipedia sample (``xqa/corpus``) with the shipped span reader, the demo's examples and the
    default recipe (weights tuned once on the sample's tuning questions)."""
    from xqa.build import CorpusBuild
    from xqa.data.corpus import CORPUS_DIR, load_examples, shipped_passages

    about = {"sources": (CORPUS_DIR / "NOTICE").read_text(encoding="utf-8").split("\n\n", 1)[-1].strip(),
             "description": "a sample of real Wikipedia paragraphs from public QA sets (MLQA, TyDi QA, "
                            "JaQuAD, iApp Wiki QA); at full scale xqa searches all of Wikipedia "
                            "(the MIA 2022 collection: 46M passages, 16 languages)"}
    return CorpusBuild(shipped_passages(), out, examples=load_examples(), about=about, threads=threads).run()
