"""The world recipe: the generated test world → tokenizer → indexes → tiny models → tuned weights.

Every stage does the work of one of xqa's own commands (the same a user runs at full scale),
by its library function, in order (:mod:`xqa.recipes.runner`). A stage whose artifact is
complete is skipped, and the training stages resume from their checkpoints, so a killed
build continues where it stopped and a second build costs seconds.

Profiles (the generated world, the fast and fully known test world): ``world`` (the
full-size world), ``long`` (its reader trained longer) and ``small`` (a small world and short
training, for tests and quick tries).
"""
from __future__ import annotations

import json
import random
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from xqa.artifacts import is_complete, write_json_atomic
from xqa.recipes.runner import Build, Stage, call_distributed, finished, retrieve
from xqa.config import PipelineConfig, ReaderConfig, RetrievalConfig
from xqa.errors import XqaError
from xqa.world.retrieval import CROSS_SCRIPT_STOP_FRACTION


@dataclass(frozen=True)
class Profile:
    world_scale: str
    vocab_size: int
    retriever_settings: dict[str, int]  # DenseTrainConfig fields beyond its defaults
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
    "world": Profile(world_scale="default", vocab_size=8000, retriever_settings={},
                       lexical_steps=100, reader_steps=2400, reader_batch=16,
                       read_passages=2, k=60, tune_questions=500, train_passages_per_question=2,
                       reader_train_choice="evidence", train_k=16, span_beams=8),
}
# The default world and models with a reader trained 4,000 steps: reading with the evidence gets better
# with steps, and `make demo` cannot wait for them. 12,000 steps read better still but did not score
# higher end to end.
PROFILES["long"] = replace(PROFILES["world"], reader_steps=4000)
PROFILES |= {
    "small": Profile(world_scale="small", vocab_size=1500,
                     retriever_settings={"max_steps": 30, "batch_size": 32, "eval_every": 10, "dev_questions": 100},
                     lexical_steps=40, reader_steps=60, reader_batch=8,
                     read_passages=4, k=20, tune_questions=60, train_passages_per_question=2,
                     reader_train_choice="gold", train_k=10, span_beams=2, reader_train_labels=False),
}


class WorldBuild(Build):
    """The generated world and its pipeline, built by a profile's recipe into ``out``."""

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

    def stages(self) -> list[Stage]:
        """(name, is_done, run) for each stage, in order."""
        w = self.world
        return [
            Stage("world", lambda: is_complete(w) and self._world_current(), self.make_world),
            Stage("tokenizer", lambda: is_complete(self.tok), self.train_tokenizer),
            Stage("BM25 indexes", lambda: is_complete(self.bm25), self.index_sparse),
            Stage("cross-script BM25 index", lambda: is_complete(self.roman) and self._roman_current(),
                  self.index_roman),
            Stage("dense retriever", lambda: is_complete(self.retr / "best") and finished(self.retr),
                  self.train_retriever),
            Stage("dense index", lambda: is_complete(self.dense), self.index_dense),
            Stage("lexical model Λ", lambda: is_complete(self.lex / "best") and finished(self.lex),
                  self.train_lexical),
            Stage("SPAR index", lambda: is_complete(self.spar), self.index_spar),
            Stage("pipeline config", lambda: self.config_path.is_file() and not self._config_stale(),
                  self.write_config),
            Stage("answer labels", self._labels_current, self.add_labels),
            Stage("tune α (hybrid), μ (SPAR) and w (cross-script)",
                  lambda: all(self._tuned(w) for w in ("alpha", "mu", "roman_weight")), self.tune_retrieval),
            Stage("reader training data", self._retrieved_current, self.retrieve_for_reader),
            Stage("FiD reader", lambda: is_complete(self.reader / "best") and self._reader_finished(),
                  self.train_reader),
            Stage("tune β, γ (evidence fusion)", lambda: self._tuned("fusion") and (self.out / "fusion.json").is_file(),
                  self.tune_fusion),
        ]

    # ------------------------------------------------------------------ stages

    def _world_current(self) -> bool:
        """The world there is the one this build makes (its size and seed); another is an error:
        every later stage was made from it."""
        made = json.loads((self.world / "config.json").read_text(encoding="utf-8"))
        recorded = {k: made[k] for k in ("size", "seed") if k in made}   # as the world recorded them
        if recorded != {k: v for k, v in (("size", self.p.world_scale), ("seed", self.seed)) if k in recorded}:
            raise XqaError(f"{self.out} holds a world of size {made.get('size')!r} and seed {made.get('seed')}, "
                           f"not the {self.p.world_scale!r} world of seed {self.seed} this build makes: give its "
                           f"--profile and --seed to go on with it, or build into another --out")
        return True

    def make_world(self) -> None:
        from xqa.world.generate import build_world, describe_build

        stats = build_world(self.world, size=self.p.world_scale, seed=self.seed)
        print(describe_build(stats, self.world), flush=True)

    def train_tokenizer(self) -> None:
        from xqa.training.tokenizer import TokenizerTrainConfig, train

        out = train(TokenizerTrainConfig(passages=str(self.passages), questions=[str(self.world / "train.jsonl")],
                                         out=str(self.tok), vocab_size=self.p.vocab_size))
        print(f"tokenizer written to {out}", flush=True)

    def index_sparse(self) -> None:
        from xqa.indexes import SparseIndexConfig, build_sparse, describe_sparse

        print(describe_sparse(build_sparse(SparseIndexConfig(passages=self.passages, out=self.bm25)), self.bm25),
              flush=True)

    def train_retriever(self) -> None:
        from xqa.training import dense

        result = dense.train(dense.DenseTrainConfig(
            train=str(self.world / "train.jsonl"), dev=str(self.world / "dev.jsonl"), passages=str(self.passages),
            size="tiny", tokenizer=str(self.tok), out=str(self.retr), seed=self.seed, **self.p.retriever_settings))
        print(f"model written to {self.retr / 'best'} (step {result['step']}, best mrr {result.get('best')})",
              flush=True)

    def train_lexical(self) -> None:
        from xqa.training import lexical
        from xqa.training.loop import run_summary

        result = lexical.train(lexical.LexicalTrainConfig(
            passages=str(self.passages), bm25=str(self.bm25), tokenizer=str(self.tok), size="tiny",
            max_steps=self.p.lexical_steps, out=str(self.lex), seed=self.seed))
        print(f"Λ written to {self.lex / 'best'} ({run_summary(result)})", flush=True)

    def index_dense(self) -> None:
        from xqa.indexes import DenseIndexConfig, build_dense

        build_dense(DenseIndexConfig(model=self.retr / "best", passages=self.passages, out=self.dense),
                    log=lambda line: print(line, flush=True))

    def index_spar(self) -> None:
        from xqa.indexes import SparIndexConfig, build_spar, describe_spar

        index = build_spar(SparIndexConfig(dense=self.dense, lexical=self.lex / "best", passages=self.passages,
                                           out=self.spar))
        print(describe_spar(index, self.spar), flush=True)

    # ------------------------------------------------------------------ helpers

    def _reader_finished(self) -> bool:
        """Finished with this profile's number of steps; a reader of another profile is an error.
        A reader whose recorded recipe (``reader/recipe.json``) differs from the profile's, or that
        has none, is stale: it is removed and trained again, like any build product whose recipe
        changed."""
        if not finished(self.reader):
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
            differs = [k for k, v in want.items()
                       if (not _same_retrieval(old.get(k) or {}, v) if k == "retrieval" else old.get(k) != v)]
            changed = ", ".join(f"{k} changed" if isinstance(want[k], dict) else f"{k} {old.get(k)} -> {want[k]}"
                                for k in differs)
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
        return {**asdict(self._config().retrieval), "train_k": self.p.train_k,
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
        from xqa.indexes import SparseIndexConfig, build_sparse, describe_sparse

        summary = build_sparse(SparseIndexConfig(passages=self.passages, out=self.roman, cross_script=True,
                                                 stop_fraction=ROMAN_STOP_FRACTION, overwrite=True))
        print(describe_sparse(summary, self.roman), flush=True)
        if self.config_path.is_file() and self._tuned("roman_weight"):  # tuned for the old index
            cfg = self._config()
            del cfg.tuned["roman_weight"]
            cfg.save(self.config_path)

    def _retrieved_current(self) -> bool:
        """The reader's retrieval files exist and were made with the config's retrieval settings."""
        recipe = self.retrieved / "recipe.json"
        if not (recipe.is_file() and all((self.retrieved / f"{s}.jsonl").is_file() for s in ("train", "dev", "test"))):
            return False
        return _same_retrieval(json.loads(recipe.read_text(encoding="utf-8")), self._retrieval_recipe())

    def _config_stale(self) -> bool:
        """A config that no longer fits the profile: another retrieval method, no cross-script index named, or
        another number of passages read (or span candidates) than the profile's. Written again, it
        is tuned again: w is tuned on recall at the passages read, β/γ on reading them."""
        cfg = self._config()
        r, reader = cfg.retrieval, cfg.reader
        return (r.method != RETRIEVAL_METHOD or r.roman_index != "roman"
                or reader.n_passages != self.p.read_passages or reader.span_beams != self.p.span_beams)

    def _config(self) -> PipelineConfig:
        return PipelineConfig.load(self.config_path)

    def _tuned(self, what: str) -> bool:
        return self.config_path.is_file() and what in self._config().tuned

    def _update_config(self, **changes: Any) -> None:
        """Set ``section__field`` settings (``reader__beta``, ...) and record them as tuned."""
        cfg = self._config()
        for key, value in changes.items():
            section, _, name = key.partition("__")
            setattr(getattr(cfg, section), name, value)
            cfg.tuned[name] = value
        cfg.save(self.config_path)

    def write_config(self) -> None:
        cfg = PipelineConfig(
            passages="world/passages.jsonl",
            retrieval=RetrievalConfig(method=RETRIEVAL_METHOD, k=self.p.k, sparse_index="bm25", dense_index="dense",
                                      spar_index="spar", roman_index="roman"),
            reader=ReaderConfig(model="reader/best", n_passages=self.p.read_passages, span_beams=self.p.span_beams,
                                labels=LABELS),
            languages=sorted(json.loads((self.world / "config.json").read_text())["languages"]),
            examples=self._examples(),
        )
        cfg.save(self.config_path)

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
        from xqa.evaluation.tuning import AlphaTuneConfig, MuTuneConfig, tune_alpha, tune_mu
        from xqa.io import read_questions

        c = self.config_path
        dev = read_questions(self.world / "dev.jsonl")[:self.p.tune_questions]
        # the test world's weights: each side searched 100 deep
        print(tune_alpha(c, dev, AlphaTuneConfig(depth=100, write_config=c)).report, flush=True)
        print(tune_mu(c, dev, MuTuneConfig(write_config=c)).report, flush=True)
        # the world's questions name their gold passages: tune the cross-script weight on recall of
        # those among the passages the reader reads
        print(tune_alpha(c, dev, AlphaTuneConfig(pair="sparse+roman", metric="recall", at=self.p.read_passages,
                                                 depth=100, write_config=c)).report, flush=True)

    def retrieve_for_reader(self) -> None:
        (self.retrieved / "recipe.json").unlink(missing_ok=True)
        for split in ("train", "dev", "test"):
            retrieve(self.config_path, self.world / f"{split}.jsonl",
                     self.p.train_k if split == "train" else self.p.k, self.retrieved / f"{split}.jsonl")
        write_json_atomic(self.retrieved / "recipe.json", self._retrieval_recipe())

    def train_reader(self) -> None:
        p, recipe = self.p, self._reader_recipe()
        # β, γ tuned for another reader are stale: forget them, so that the next stage tunes again
        (self.out / "fusion.json").unlink(missing_ok=True)
        # No validation run: with one at the end it only cost time (the last model is kept), and the
        # next stage reads dev anyway, reporting the reader alone and fused.
        from xqa.training import fid

        config = fid.FidTrainConfig(
            out=str(self.reader), train=str(self.retrieved / "train.jsonl"), size="tiny", tokenizer=str(self.tok),
            n_context=p.train_passages_per_question, train_contexts=p.reader_train_choice, lr=recipe["lr"],
            warmup_steps=recipe["warmup_steps"], max_steps=p.reader_steps,
            batch_size=p.reader_batch // p.reader_procs, group_by_length=p.reader_group_by_length,
            copy_attention=p.reader_copy_attention, generator_share=p.reader_generator_share,
            decoder_prompt=p.reader_decoder_prompt, seed=self.seed,
            labels=str(self.world / "labels.jsonl") if p.reader_train_labels else None,
            threads=1 if p.reader_procs > 1 else 0)
        call_distributed(p.reader_procs, _train_reader, {"config": config})
        write_json_atomic(self.reader / "recipe.json", self._reader_recipe())

    def _labels_current(self) -> bool:
        return (self.world / "labels.jsonl").is_file() and self._config().reader.labels == LABELS

    def add_labels(self) -> None:
        """The world's answer label table (``world/labels.jsonl``, written by the world stage) named
        in the pipeline config; β/γ, tuned on answers without it, are tuned again."""
        if not (self.world / "labels.jsonl").is_file():
            raise XqaError(f"{self.world} has no labels.jsonl: delete the folder and build again")
        cfg = self._config()
        cfg.reader.labels = LABELS
        cfg.tuned.pop("fusion", None)
        cfg.save(self.config_path)
        (self.out / "fusion.json").unlink(missing_ok=True)

    def tune_fusion(self) -> None:
        out = self.out / "fusion.json"
        # Tune with as many passages as the pipeline reads (the reader trains on fewer, and the
        # artifact records its training setting).
        from xqa.evaluation.tuning import FusionTuneConfig, tune_fusion

        call_distributed(self.p.reader_procs, tune_fusion, {"config": FusionTuneConfig(
            model=str(self.reader), dev=str(self.retrieved / "dev.jsonl"), n_context=self.p.read_passages,
            span_beams=self.p.span_beams, limit=self.p.tune_questions, out=str(out),
            labels=str(self.world / "labels.jsonl"), threads=1 if self.p.reader_procs > 1 else 0)})
        best = json.loads(out.read_text(encoding="utf-8"))
        self._update_config(**{f"reader__{k}": best[k] for k in ("beta", "gamma", "miss", "soft")})
        cfg = self._config()
        cfg.tuned["fusion"] = best
        cfg.save(self.config_path)

    # ------------------------------------------------------------------ run

    def check_out(self) -> None:
        if (self.out / "source.json").is_file():
            raise XqaError(f"{self.out} holds a real-text build (xqa build); build the world into another "
                           f"--out (e.g. build/world), or delete {self.out}")

    def finish(self, times: dict[str, float], seconds: float) -> None:
        print(f"embedded default ({self.profile}) ready in {self.out} "
              f"({seconds:.0f} s); pipeline config: {self.config_path}", flush=True)


def _same_retrieval(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Two retrieval recipes are the same, a setting one of them does not name (made before the
    setting existed) read as the RetrievalConfig default, as loading a pipeline config reads it."""
    defaults = asdict(RetrievalConfig())
    return {**defaults, **old} == {**defaults, **new}


def _train_reader(config: Any) -> None:
    """The FiD reader's training (:func:`xqa.training.fid.train`), in each process of its job."""
    from xqa.training import fid
    from xqa.distributed import main_process

    result = fid.train(config)
    if main_process():
        print(f"reader written to {config.out}/best: " + ", ".join(f"{k}={v}" for k, v in result.items()),
              flush=True)
