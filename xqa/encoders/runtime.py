"""The int8 CPU runtime of a converted encoder, and which precision a CPU runs it in.

``xqa convert e5`` writes, next to the Hugging Face files, ``model.int8.onnx``: the
``BertModel`` exported to ONNX, its attention, skip-LayerNorm, bias-GELU and embedding
sub-graphs fused into ONNX Runtime's kernels (``onnxruntime.transformers.optimizer``), and
every matrix product quantised to int8 (weights per output channel, activations per tensor
at run time: ``onnxruntime.quantization.quantize_dynamic``). On a CPU without native bf16 it
encodes about twice as fast as torch fp32 (docs/dense.md has the table).

Int8 changes the vectors a little, so the conversion measures it before anything uses it:
:func:`check` encodes a fixed sample of the shipped corpus's real passages and questions
in fp32 torch and in the int8 runtime and compares the vectors (cosine); the int8 file is
used only when the mean cosine is at least :data:`MIN_MEAN_COSINE` and the lowest at least
:data:`MIN_COSINE`. It also times each precision on the CPU it runs on, and records the
one :func:`choose` takes (``xqa_encoder.json`` ``runtime``): of those that passed, the closest
to fp32 within :data:`CHOICE_MARGIN` of the fastest. Passages are encoded in batches and a
question alone (its vector the same in any batch), and what is fastest differs between the two
(on a CPU with AMX, bf16 autocast encodes a batch of passages twice as fast as int8 and one
question 15 times slower), so each is timed and chosen on its own: ``choice`` for passages,
``question_choice`` for questions. ``precision: auto`` then means:
that choice on a CPU with the same features; elsewhere int8 when it passed, bf16 where the
CPU has native bf16, fp32 otherwise (:func:`resolve_precision`).

onnx and onnxruntime load only here, when the runtime is built or used.
"""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from xqa.encoders.info import EncoderInfo, bf16_supported, read_info
from xqa.errors import XqaError

INT8_FILE = "model.int8.onnx"
READER_RECORD = "runtime.json"   # a span reader's record of its runtime's check (reader.span.runtime)
CORPUS = Path(__file__).resolve().parents[1] / "corpus"   # the shipped corpus (xqa.data.corpus.CORPUS_DIR)
MIN_MEAN_COSINE = 0.99
MIN_COSINE = 0.97
CHOICE_MARGIN = 0.15   # auto: a precision closer to fp32 is taken while at most this much slower
FAITHFUL = ("fp32", "bf16", "int8")   # the CPU precisions, closest to fp32's results first
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
SAMPLE_PASSAGES = 32
SAMPLE_QUESTIONS = 32
QUESTION_SPEED = "questions_alone_per_s"   # a question encoded alone, as questions are on a CPU
CALIBRATION_OFFSET = 48   # the smoothing is set on the texts after the first 48 of the sample order ...
CALIBRATION = 48          # ... 48 passages and 48 questions, none of them checked
SMOOTH_ALPHA = 0.75   # of 0.5-1.0 tried, the best cosine to fp32 on the check sample (docs/dense.md)
# The smoothing's activation statistics of the shipped encoder and reader, measured by builds of the
# embedded default: used when the weights and the calibration inputs are byte for byte those they
# were measured on (their digest names the file), measured again otherwise.
SHIPPED_SMOOTHING = Path(__file__).resolve().parents[1] / "models" / "smoothquant"
SMOOTHING_FILE = "model.int8.smoothing.safetensors"   # beside model.int8.onnx: what this build measured


def cpu_features() -> dict[str, bool]:
    """The CPU features that decide which precision is fast (from ``/proc/cpuinfo``; all False
    where it cannot be read)."""
    flags: set[str] = set()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    return {name: name in flags for name in CPU_FLAGS}


def cpu_summary(features: dict[str, bool] | None = None) -> str:
    features = cpu_features() if features is None else features
    have = [k for k, v in features.items() if v]
    return ", ".join(have) if have else "none of " + ", ".join(CPU_FLAGS)


# --------------------------------------------------------------------------- building the file

def _hidden_module(model):
    """``BertModel`` -> its last hidden state, from the two inputs the runtime is given."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Hidden(model)


@contextlib.contextmanager
def _quiet():
    """The exporter, optimiser and quantiser print pages of notes; keep them off the console."""
    import logging

    old = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(old)


def smoothing_key(folder: str | Path, calibration: Sequence[dict]) -> str:
    """The digest of the weights in ``folder`` (``model.safetensors``) and of the calibration
    inputs: the smoothing statistics depend on nothing else."""
    import hashlib

    h = hashlib.sha256()
    with open(Path(folder) / "model.safetensors", "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    for feed in calibration:
        for name in ("input_ids", "attention_mask"):
            a = np.ascontiguousarray(feed[name], dtype=np.int64)
            h.update(repr(a.shape).encode())
            h.update(a.tobytes())
    return h.hexdigest()[:32]


def _read_smoothing(key: str, dirs: Sequence[Path]) -> dict[str, np.ndarray] | None:
    """The statistics saved under ``key`` in the first of ``dirs`` that has them."""
    from safetensors.numpy import load_file

    for d in dirs:
        path = Path(d) / f"{key}.safetensors"
        if path.is_file():
            try:
                return load_file(str(path))
            except Exception:  # noqa: BLE001 - a damaged file is measured again
                return None
    return None


def export_int8(folder: str | Path, out: str | Path | None = None, calibration: list[dict] | None = None,
                smoothing_dirs: Sequence[Path] | None = None) -> dict[str, Any]:
    """Write ``folder/model.int8.onnx`` (or ``out``) from the ``BertModel`` in ``folder``;
    ``calibration``: the model's inputs (``{"input_ids", "attention_mask"}`` int64 batches) the
    smoothing is set on (default: :func:`calibration_texts` as the encoder reads them). The
    smoothing's statistics are taken from ``smoothing_dirs`` (default: the shipped ones,
    :data:`SHIPPED_SMOOTHING`) where one holds those of these weights and inputs, else measured;
    either way they are written beside the output (:data:`SMOOTHING_FILE`, the key in its
    metadata), which is how the shipped ones were made.
    Returns what was built: the fused kernels counted, the file's size, seconds per step."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from transformers import AutoModel, AutoTokenizer

    folder = Path(folder)
    out = Path(out) if out else folder / INT8_FILE
    model = AutoModel.from_pretrained(str(folder), attn_implementation="eager", add_pooling_layer=False).eval()
    cfg = model.config
    seconds = {}
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".int8-") as tmp:
        fp32, fused = Path(tmp) / "fp32.onnx", Path(tmp) / "fused.onnx"
        t = time.perf_counter()
        ids = torch.full((2, 16), 5, dtype=torch.long)
        with _quiet(), torch.inference_mode():
            torch.onnx.export(
                _hidden_module(model), (ids, torch.ones_like(ids)), str(fp32),
                input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "tokens"}
                              for n in ("input_ids", "attention_mask", "last_hidden_state")},
                opset_version=17, dynamo=False)
        del model
        seconds["export"] = time.perf_counter() - t
        t = time.perf_counter()
        with _quiet():
            opt = optimizer.optimize_model(str(fp32), model_type="bert", num_heads=cfg.num_attention_heads,
                                           hidden_size=cfg.hidden_size, opt_level=0)
            stats = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
        seconds["fuse"] = time.perf_counter() - t
        t = time.perf_counter()
        if calibration is None:
            tok = AutoTokenizer.from_pretrained(str(folder))
            info = read_info(folder) or EncoderInfo()
            passages, questions = calibration_texts()
            texts = [info.passage_prefix + p for p in passages] + [info.query_prefix + q for q in questions]
            calibration = text_batches(tok, texts)
        key = smoothing_key(folder, calibration)
        known = _read_smoothing(key, [SHIPPED_SMOOTHING] if smoothing_dirs is None else smoothing_dirs)
        smoothed, amax, measured = smooth(opt.model, calibration, amax=known)
        from safetensors.numpy import save_file

        save_file(amax, str(Path(tmp) / SMOOTHING_FILE), metadata={"key": key})
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(Path(tmp) / SMOOTHING_FILE, 0o666 & ~mask)   # an ordinary file of the artifact
        with _quiet():
            opt.save_model_to_file(str(fused))     # with the com.microsoft opset of the fused kernels
        del opt
        seconds["smooth"] = time.perf_counter() - t
        t = time.perf_counter()
        tmp_out = Path(tmp) / "int8.onnx"
        with _quiet():
            quantize_dynamic(str(fused), str(tmp_out), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul", "Attention", "EmbedLayerNormalization"],
                             extra_options={"DefaultTensorType": 1})   # 1: FLOAT, for fused nodes' outputs
        seconds["quantize"] = time.perf_counter() - t
        os.replace(Path(tmp) / SMOOTHING_FILE, out.parent / SMOOTHING_FILE)
        os.replace(tmp_out, out)
    return {"file": out.name, "bytes": out.stat().st_size, "fused": stats, "layers": cfg.num_hidden_layers,
            "smoothed": smoothed, "smoothing_alpha": SMOOTH_ALPHA,
            "smoothing_statistics": "measured" if measured else "shipped", "smoothing_key": key,
            "seconds": {k: round(v, 1) for k, v in seconds.items()}}


def text_batches(tokenizer, texts: Sequence[str], max_length: int = 256, size: int = 16) -> list[dict]:
    """``texts`` as the runtime's inputs, in length-sorted batches."""
    out = []
    for idx in _batches(texts, size):
        x = tokenizer([texts[i] for i in idx], max_length=max_length, truncation=True, padding=True,
                      return_tensors="np")
        out.append({"input_ids": x["input_ids"].astype(np.int64), "attention_mask": x["attention_mask"].astype(np.int64)})
    return out


def smooth(graph, batches: Sequence[dict], alpha: float = SMOOTH_ALPHA,
           amax: dict[str, np.ndarray] | None = None) -> tuple[int, dict[str, np.ndarray], bool]:
    """Move the activations' outlier channels into the weights before int8 (SmoothQuant, Xiao et
    al. 2023): for each matrix product ``X·W`` (the attention's QKV and output projections and
    both feed-forward products), ``X·W = (X / s)·(s ⊙ W)`` with one ``s_j`` per input channel,
    ``s_j = max|X_j|^α / max|W_j|^(1-α)`` over the inputs ``batches``. ``X / s`` is one element-wise Mul
    node in front of the product, so per-tensor int8 of the activations loses less. Edits the
    ONNX ``graph`` in place. ``amax``: the inputs' channel maxima measured before (used where
    they cover every product's input with the right width; measured on ``batches`` otherwise).
    Returns how many products were smoothed, the maxima, and whether they were measured."""
    from onnx import numpy_helper

    init = {i.name: i for i in graph.graph.initializer}
    targets = [n for n in graph.graph.node
               if n.op_type in ("MatMul", "Attention") and len(n.input) > 1 and n.input[1] in init
               and len(init[n.input[1]].dims) == 2]
    inputs = list(dict.fromkeys(n.input[0] for n in targets))
    widths = {n.input[0]: init[n.input[1]].dims[0] for n in targets}
    measured = amax is None or any(name not in amax or amax[name].shape != (widths[name],) for name in inputs)
    if measured:
        amax = _activation_maxima(graph, inputs, batches)
    edited = []
    wanted = {id(n) for n in targets}
    for n in graph.graph.node:
        if id(n) in wanted:
            w = numpy_helper.to_array(init[n.input[1]])
            s = (np.maximum(amax[n.input[0]], 1e-5) ** alpha / np.maximum(np.abs(w).max(1), 1e-5) ** (1 - alpha))
            s = (s / np.exp(np.log(s).mean())).astype(np.float32)
            init[n.input[1]].CopyFrom(numpy_helper.from_array((w * s[:, None]).astype(np.float32), n.input[1]))
            inv = numpy_helper.from_array((1.0 / s).astype(np.float32), f"{n.name}.smooth")
            graph.graph.initializer.append(inv)
            scaled = f"{n.input[0]}.smoothed.{n.name}"
            edited.append(_mul_node(n, inv.name, scaled))
            n.input[0] = scaled
        edited.append(n)
    del graph.graph.node[:]
    graph.graph.node.extend(edited)
    return len(targets), {name: np.asarray(amax[name], dtype=np.float32) for name in inputs}, measured


def _mul_node(n, scale: str, scaled: str):
    from onnx import helper

    return helper.make_node("Mul", [n.input[0], scale], [scaled], name=f"{n.name}.smooth_mul")


def _activation_maxima(graph, inputs: Sequence[str], batches: Sequence[dict]) -> dict[str, np.ndarray]:
    """Per input channel, the largest |activation| of each of ``inputs`` over ``batches`` (padding left out)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    n_outputs = len(graph.graph.output)
    for name in inputs:     # the products' inputs as extra outputs, for the measurement only
        graph.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.intra_op_num_threads = _torch_threads()
    so.log_severity_level = 3
    try:
        session = ort.InferenceSession(graph.SerializeToString(), so, providers=["CPUExecutionProvider"])
    finally:
        del graph.graph.output[n_outputs:]
    amax: dict[str, np.ndarray] = {}
    for feed in batches:
        outs = session.run(list(inputs), feed)
        mask = feed["attention_mask"].astype(bool)
        for name, o in zip(inputs, outs):
            v = np.abs(o[mask]).max(0)
            amax[name] = np.maximum(amax[name], v) if name in amax else v
    return amax


# --------------------------------------------------------------------------- running it

class Int8Encoder:
    """An ONNX Runtime session over ``model.int8.onnx``: token ids -> last hidden state."""

    def __init__(self, path: str | Path, threads: int = 0):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads or _torch_threads()
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def hidden(self, input_ids, attention_mask) -> np.ndarray:
        """``[b, L]`` ids and mask (numpy or torch) -> ``[b, L, h]`` float32."""
        feed = {"input_ids": np.asarray(input_ids, dtype=np.int64),
                "attention_mask": np.asarray(attention_mask, dtype=np.int64)}
        return self.session.run(None, feed)[0]


def _torch_threads() -> int:
    try:
        import torch

        return torch.get_num_threads()
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return os.cpu_count() or 1


class PrecisionError(XqaError, ValueError):
    """A precision this model cannot run in (a user's choice: said as an error, not a trace)."""


def resolve_precision(folder: str | Path | None, precision: str, info: EncoderInfo | None = None,
                      questions: bool = False) -> str:
    """What a CPU runs the converted encoder in: ``fp32``, ``bf16`` or ``int8``.

    ``precision`` as the artifact or the user says: an explicit one is taken as it is
    (``int8`` needs the folder's int8 file); ``auto`` takes the conversion's measured choice
    when this CPU has the features it was measured on (for ``questions``, encoded one at a
    time, the choice timed that way where the record has it), and otherwise int8 where its
    check passed, bf16 where the CPU has native bf16, fp32 elsewhere.
    """
    from xqa.encoders.info import PRECISIONS

    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    if info is None and folder is not None:
        info = read_info(folder)
    runtime = (info.runtime if info else None) or {}
    has_int8 = bool(folder is not None and runtime.get("int8", {}).get("passed")
                    and (Path(folder) / runtime["int8"].get("file", INT8_FILE)).is_file())
    if precision == "int8":
        if folder is None:
            raise PrecisionError(f"precision int8 needs the int8 runtime ({INT8_FILE}) that xqa convert e5 writes "
                                 f"beside a converted encoder; this model has none (trained, or changed since): "
                                 f"choose fp32, bf16 or auto")
        if not (Path(folder) / INT8_FILE).is_file():
            raise PrecisionError(f"{folder}: precision int8 needs {INT8_FILE} (xqa convert e5 writes it): choose "
                                 f"fp32, bf16 or auto")
        return "int8"
    if precision != "auto":
        return precision
    unavailable = () if has_int8 else ("int8",)
    choice = recorded_choice(runtime, unavailable, QUESTION_SPEED) if questions else None
    choice = choice or recorded_choice(runtime, unavailable)
    if choice and runtime.get("cpu") == cpu_features() and (choice != "int8" or has_int8):
        return choice
    if has_int8:
        return "int8"
    return "bf16" if bf16_supported() else "fp32"


# --------------------------------------------------------------------------- the check

def shipped_pairs(n: int, skip: int = 0) -> list[tuple[Question, Context]]:
    """``n`` shipped tuning questions with their gold paragraph, round-robin over languages,
    after the first ``skip`` of that order (the readers' runtime checks read them)."""
    import gzip
    import json

    from xqa.records import Context, Question

    with gzip.open(CORPUS / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        passages = {r["id"]: r for r in map(json.loads, f)}
    by_lang: dict[str, list[dict]] = {}
    with gzip.open(CORPUS / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
        for r in map(json.loads, f):
            if r.get("split") == "tune" and r.get("positive_ids") and r["positive_ids"][0] in passages:
                by_lang.setdefault(r["lang"], []).append(r)
    order: list[dict] = []
    i = 0
    while len(order) < skip + n and any(i < len(v) for v in by_lang.values()):
        order += [by_lang[la][i] for la in sorted(by_lang) if i < len(by_lang[la])]
        i += 1
    out = []
    for r in order[skip: skip + n]:
        p = passages[r["positive_ids"][0]]
        out.append((Question(r["id"], r["question"], r["lang"], tuple(r.get("answers", ()))),
                    Context(p["id"], p.get("title", ""), p["text"], p["lang"], 1.0, "gold")))
    return out



def sample_texts(n_passages: int = SAMPLE_PASSAGES, n_questions: int = SAMPLE_QUESTIONS) -> tuple[list[str], list[str]]:
    """A fixed sample of the shipped corpus: passages and test questions, round-robin over
    its languages (the same texts on every machine)."""
    import gzip
    import json

    def pick(path: Path, field: str, n: int) -> list[str]:
        by_lang: dict[str, list[str]] = {}
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                by_lang.setdefault(r.get("lang", ""), []).append(r[field])
        out, i = [], 0
        langs = sorted(by_lang)
        while len(out) < n and any(i < len(by_lang[la]) for la in langs):
            for la in langs:
                if i < len(by_lang[la]) and len(out) < n:
                    out.append(by_lang[la][i * 7 % len(by_lang[la])])
            i += 1
        return out

    return (pick(CORPUS / "passages.jsonl.gz", "text", n_passages),
            pick(CORPUS / "questions.jsonl.gz", "question", n_questions))


def calibration_texts(n: int = CALIBRATION) -> tuple[list[str], list[str]]:
    """Texts of the shipped corpus that follow the check sample in the same round-robin: the
    smoothing is set on these, and the check measures on others."""
    passages, questions = sample_texts(CALIBRATION_OFFSET + n, CALIBRATION_OFFSET + n)
    return passages[CALIBRATION_OFFSET:], questions[CALIBRATION_OFFSET:]


def _encode_torch(model, tok, texts: Sequence[str], max_length: int, bf16: bool = False) -> np.ndarray:
    import torch

    x = tok(list(texts), max_length=max_length, truncation=True, padding=True, return_tensors="pt")
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with torch.inference_mode(), ctx:
        h = model(input_ids=x["input_ids"], attention_mask=x["attention_mask"]).last_hidden_state.float()
    return _pool(h.numpy(), x["attention_mask"].numpy())


def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask[..., None].astype(np.float32)
    v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1.0)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def _batches(texts: Sequence[str], size: int = 16):
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    for s in range(0, len(order), size):
        yield order[s: s + size]


def compare(folder: str | Path, passages: Sequence[str], questions: Sequence[str], *,
            max_length: int = 256, threads: int = 0, info: EncoderInfo | None = None) -> dict[str, Any]:
    """Encode ``passages`` and ``questions`` (prefixed as the encoder's info says) with fp32
    torch, the int8 runtime and, on a CPU with native bf16, bf16 torch; returns the cosine of
    each to fp32, each one's passages/s in batches of 16 and its questions/s encoding one
    question at a time (the median time of one) on this CPU."""
    from transformers import AutoModel, AutoTokenizer

    folder = Path(folder)
    info = info or read_info(folder) or EncoderInfo()
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder), add_pooling_layer=False).eval()
    texts = [info.passage_prefix + t for t in passages] + [info.query_prefix + q for q in questions]
    n_p = len(passages)
    runs: dict[str, Any] = {}

    def run(name: str, encode) -> np.ndarray:
        out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
        t0, seconds = time.perf_counter(), 0.0
        for idx in _batches(texts):
            out[idx] = encode([texts[i] for i in idx])
            if idx[0] < n_p:
                seconds = time.perf_counter() - t0    # the passages come first (longest first)
        runs[name] = {"passages_per_s": round(n_p / max(seconds, 1e-9), 2)}
        return out

    encoders = {"fp32": lambda b: _encode_torch(model, tok, b, max_length)}
    if bf16_supported():
        encoders["bf16"] = lambda b: _encode_torch(model, tok, b, max_length, bf16=True)
    if (folder / INT8_FILE).is_file():
        rt = Int8Encoder(folder / INT8_FILE, threads)

        def int8(b):
            x = tok(list(b), max_length=max_length, truncation=True, padding=True, return_tensors="np")
            return _pool(rt.hidden(x["input_ids"], x["attention_mask"]), x["attention_mask"])

        encoders["int8"] = int8

    def alone(name: str, encode) -> None:
        times = []
        for q in texts[n_p:]:
            t0 = time.perf_counter()
            encode([q])
            times.append(time.perf_counter() - t0)
        if times:
            runs[name][QUESTION_SPEED] = round(1.0 / max(float(np.median(times)), 1e-9), 2)

    encoders["fp32"](texts[:2])                          # warm-up
    fp32 = encoders.pop("fp32")
    ref = run("fp32", fp32)
    alone("fp32", fp32)
    for name, fn in encoders.items():
        fn(texts[:2])
        vec = run(name, fn)
        alone(name, fn)
        cos = (vec * ref).sum(1)
        runs[name].update({"cosine_mean": round(float(cos.mean()), 5), "cosine_min": round(float(cos.min()), 5),
                           "passages_cosine_mean": round(float(cos[:n_p].mean()), 5),
                           "questions_cosine_mean": round(float(cos[n_p:].mean()), 5)})
        runs[name]["passed"] = bool(cos.mean() >= MIN_MEAN_COSINE and cos.min() >= MIN_COSINE)
    runs["fp32"]["passed"] = True
    return runs


def choose(measured: dict[str, dict[str, Any]], speed: str) -> str:
    """What ``precision: auto`` takes from a check's measurements (``measured[precision][speed]``,
    the larger the faster, and ``passed``): of the precisions that passed, the one closest to
    fp32 (fp32, then bf16, then int8) whose speed is within :data:`CHOICE_MARGIN` of the
    fastest's. Where two run at about the same speed (bf16 and int8 on a CPU with native bf16 and
    no AMX), the timing's noise would otherwise choose, and two builds on one machine would answer
    differently."""
    passed = {k: float(v[speed]) for k, v in measured.items() if v.get("passed")}
    if not passed:
        raise ValueError("no precision passed its check")
    floor = (1.0 - CHOICE_MARGIN) * max(passed.values())
    ranked = [k for k in FAITHFUL if k in passed] + sorted(k for k in passed if k not in FAITHFUL)
    return next(k for k in ranked if passed[k] >= floor)


def recorded_choice(record: dict[str, Any] | None, unavailable: Sequence[str] = (),
                    speed: str | None = None) -> str | None:
    """The precision a check's record (an encoder's ``runtime``, a reader's ``runtime.json``)
    makes ``auto`` take: :func:`choose` over its measurements but the ``unavailable`` ones (int8
    where its file is gone), so that every record is read by the same rule whatever its
    ``choice`` says; that ``choice`` where it holds no measurements. ``speed`` names the timing
    to choose by (:data:`QUESTION_SPEED`: None where the record has not timed it); by default
    the record's one other timing."""
    if not record:
        return None
    measured = {k: v for k, v in (record.get("measured") or {}).items() if k not in unavailable}
    speeds = ({speed} if speed else
              {k for v in measured.values() for k in v if k.endswith("_per_s") and k != QUESTION_SPEED})
    if len(speeds) == 1 and measured and all(k in v for v in measured.values() for k in speeds):
        with contextlib.suppress(ValueError, TypeError):
            return choose(measured, speeds.pop())
    return None if speed else record.get("choice")


def measure(folder: str | Path, threads: int = 0) -> dict[str, Any]:
    """Check the int8 file against fp32 on the shipped sample, time each precision, and choose.

    Returns the ``runtime`` record of ``xqa_encoder.json``: ``{"int8": {...file, check...},
    "measured": {precision: {passages_per_s, cosine...}}, "choice", "cpu", "sample"}``.
    """
    passages, questions = sample_texts()
    runs = compare(folder, passages, questions, threads=threads)
    return {"measured": runs, "choice": choose(runs, "passages_per_s"),
            "question_choice": recorded_choice({"measured": runs}, speed=QUESTION_SPEED), "cpu": cpu_features(),
            "threads": threads or _torch_threads(),
            "sample": {"passages": len(passages), "questions": len(questions),
                       "source": "the shipped corpus (xqa/corpus), round-robin over its languages"}}


def build_runtime(folder: str | Path, threads: int = 0, progress=print) -> dict[str, Any]:
    """Export the int8 file into a converted folder, check and time it, and record the result
    in the folder's ``xqa_encoder.json`` (``runtime``). Returns that record."""
    folder = Path(folder)
    info = read_info(folder)
    if info is None:
        raise ValueError(f"{folder}: not a converted encoder (no xqa_encoder.json)")
    t0 = time.perf_counter()
    progress("  exporting the int8 runtime (ONNX, fused kernels, int8 matrix products) ...")
    built = export_int8(folder)
    progress(f"  checking it against fp32 on {SAMPLE_PASSAGES} passages and {SAMPLE_QUESTIONS} questions "
             f"of the shipped corpus ...")
    record = measure(folder, threads)
    int8 = record["measured"].get("int8", {})
    record["int8"] = {**built, "passed": bool(int8.get("passed")),
                      "cosine_mean": int8.get("cosine_mean"), "cosine_min": int8.get("cosine_min")}
    record["seconds"] = round(time.perf_counter() - t0, 1)
    info.runtime = record
    info.save(folder)
    return record


def describe(record: dict[str, Any]) -> str:
    """One line per precision measured, and the choice."""
    lines = []
    for name, r in record.get("measured", {}).items():
        cos = (f", cosine to fp32 mean {r['cosine_mean']:.4f} / min {r['cosine_min']:.4f}"
               if "cosine_mean" in r else "")
        alone = (f", {1000.0 / r[QUESTION_SPEED]:.1f} ms a question alone" if r.get(QUESTION_SPEED) else "")
        lines.append(f"  {name}: {r['passages_per_s']:.1f} passages/s{alone}{cos}"
                     f"{'' if r.get('passed') else ' (check failed: not used)'}")
    questions = recorded_choice(record, speed=QUESTION_SPEED)
    lines.append(f"  precision auto on this CPU ({cpu_summary(record.get('cpu'))}): {recorded_choice(record)}"
                 + (f" for passages, {questions} for questions" if questions else "")
                 + f" (of those that passed, the closest to fp32 within {CHOICE_MARGIN * 100:.0f} % of the fastest)")
    return "\n".join(lines)
