"""The encoder's int8 CPU runtime, the precision choice, and the shipped build parts."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from xqa.encoders import runtime
from xqa.encoders.info import read_info
from xqa.errors import XqaError

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- the int8 runtime

@pytest.mark.slow
def test_int8_vectors_stay_close_to_fp32_ones_on_real_text(converted_e5):
    """The conversion's check, run again on a smaller shipped sample: int8 vectors of real
    passages and questions in 12 languages point where the fp32 ones do."""
    passages, questions = runtime.sample_texts(12, 12)
    runs = runtime.compare(converted_e5, passages, questions)
    assert runs["int8"]["cosine_mean"] >= runtime.MIN_MEAN_COSINE, runs["int8"]
    assert runs["int8"]["cosine_min"] >= runtime.MIN_COSINE, runs["int8"]
    record = read_info(converted_e5).runtime
    assert record["int8"]["passed"] and record["int8"]["fused"]["Attention"] == record["int8"]["layers"]
    assert record["measured"][record["choice"]]["passed"]


def test_auto_chooses_the_precision_closest_to_fp32_within_the_margin_of_the_fastest(monkeypatch):
    """Of the precisions that passed, fp32, then bf16, then int8, the first whose speed is within
    CHOICE_MARGIN of the fastest's: bf16 and int8 at about the same speed give bf16 whichever
    way the timings fall, so two builds on one machine choose alike."""
    def m(failed=(), **speeds):
        return {k: {"rows_per_s": v, "passed": k not in failed} for k, v in speeds.items()}

    choose = runtime.choose
    assert choose(m(fp32=7.72, bf16=19.85, int8=21.97), "rows_per_s") == "bf16"   # AVX-512 BF16, no AMX
    assert choose(m(fp32=5.39, bf16=13.63, int8=13.08), "rows_per_s") == "bf16"   # the same machine again
    assert choose(m(fp32=8.0, int8=13.1), "rows_per_s") == "int8"                 # no native bf16
    assert choose(m(fp32=5.0, bf16=30.0, int8=20.0), "rows_per_s") == "bf16"      # AMX
    assert choose(m(fp32=10.0, bf16=10.5, int8=11.0), "rows_per_s") == "fp32"     # none clearly faster
    edge = 1.0 - runtime.CHOICE_MARGIN
    assert choose(m(bf16=edge * 20.0, int8=20.0), "rows_per_s") == "bf16"
    assert choose(m(bf16=edge * 20.0 - 0.01, int8=20.0), "rows_per_s") == "int8"
    assert choose(m(fp32=7.72, bf16=19.85, int8=21.97, failed=("bf16",)), "rows_per_s") == "int8"
    with pytest.raises(ValueError, match="no precision passed"):
        choose(m(int8=3.0, failed=("int8",)), "rows_per_s")
    # the conversion's check records the choice by this rule
    timed = {k: {"passages_per_s": v["rows_per_s"], "passed": True}
             for k, v in m(fp32=7.72, bf16=19.85, int8=21.97).items()}
    monkeypatch.setattr(runtime, "compare", lambda *a, **k: timed)
    assert runtime.measure("unused")["choice"] == "bf16"
    assert runtime.measure("unused")["question_choice"] is None       # questions alone not timed
    # questions, encoded one at a time, are chosen by their own timing (AMX: bf16 autocast is
    # the fastest on a batch of passages and the slowest on one question)
    for k, v in {"fp32": 25.0, "bf16": 50.0, "int8": 170.0}.items():
        timed[k][runtime.QUESTION_SPEED] = v
    record = runtime.measure("unused")
    assert (record["choice"], record["question_choice"]) == ("bf16", "int8")
    assert "bf16 for passages, int8 for questions" in runtime.describe(record)


@pytest.mark.slow
def test_shipped_smoothing_statistics_give_the_int8_file_measuring_gives(converted_e5, tmp_path):
    """The SmoothQuant measurements saved beside a runtime, found again by their key, make the
    same int8 file without running the model; the repository ships those of the shipped encoder."""
    from safetensors import safe_open

    first, second, stats = tmp_path / "first", tmp_path / "second", tmp_path / "stats"
    for d in (first, second, stats):
        d.mkdir()
    measured = runtime.export_int8(converted_e5, out=first / runtime.INT8_FILE, smoothing_dirs=[])
    assert measured["smoothing_statistics"] == "measured"
    with safe_open(str(first / runtime.SMOOTHING_FILE), "numpy") as f:
        key = f.metadata()["key"]
        assert 0 < len(f.keys()) <= measured["smoothed"]   # one vector per distinct product input
    assert key == measured["smoothing_key"]
    shutil.copy(first / runtime.SMOOTHING_FILE, stats / f"{key}.safetensors")
    again = runtime.export_int8(converted_e5, out=second / runtime.INT8_FILE, smoothing_dirs=[stats])
    assert again["smoothing_statistics"] == "shipped" and again["smoothing_key"] == key
    assert (first / runtime.INT8_FILE).read_bytes() == (second / runtime.INT8_FILE).read_bytes()
    # the shipped e5 converted here is the encoder the repository's statistics were measured on
    assert (runtime.SHIPPED_SMOOTHING / f"{key}.safetensors").is_file()
    # a damaged file is not used: the statistics are measured again
    (stats / f"{key}.safetensors").write_bytes(b"not a safetensors file")
    assert runtime._read_smoothing(key, [stats]) is None


def test_the_check_sample_is_the_same_texts_every_time_and_covers_every_language():
    import gzip

    a, b = runtime.sample_texts(24, 12), runtime.sample_texts(24, 12)
    assert a == b and len(a[0]) == 24 and len(a[1]) == 12
    with gzip.open(ROOT / "xqa" / "corpus" / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        lang = {json.loads(line)["text"]: json.loads(line)["lang"] for line in f}
    assert len({lang[t] for t in a[0]}) == 12


@pytest.mark.slow
def test_a_loaded_encoder_runs_in_int8_until_it_is_trained(converted_e5):
    from retriever.dense.model import BiEncoder

    model = BiEncoder.load(converted_e5)
    texts = ["Wer schrieb den Faust?", "東京タワーの高さは？", "ما هي عاصمة مصر؟"]
    model.config.precision = "int8"
    assert model.cpu_precision() == "int8"
    int8 = model.encode_queries(texts)
    model.config.precision = "fp32"
    fp32 = model.encode_queries(texts)
    assert np.abs(int8 - fp32).max() > 0          # another computation ...
    assert (int8 * fp32).sum(1).min() > 0.97      # ... of the same vectors
    model.train()                                 # weights about to change: the int8 file no longer holds them
    model.eval()
    model.config.precision = "auto"
    assert model.cpu_precision() in ("fp32", "bf16")
    with pytest.raises(ValueError, match="int8"):
        model.config.precision = "int8"
        model.cpu_precision()


@pytest.mark.slow
def test_auto_encodes_questions_in_their_own_choice_and_passages_in_theirs(converted_e5, monkeypatch):
    """Questions are encoded one at a time and passages in batches, and ``auto`` may choose each
    its own precision (the conversion times both): the vectors are those of that precision."""
    from retriever.dense import model as dense_model
    from retriever.dense.model import BiEncoder
    from xqa.records import Passage

    model = BiEncoder.load(converted_e5)
    texts = ["Wer schrieb den Faust?", "東京タワーの高さは？"]
    passages = [Passage(str(i), "", t, "xx") for i, t in enumerate(texts)]
    said = {}
    for precision in ("fp32", "int8"):
        model.config.precision = precision
        said[precision] = (model.encode_queries(texts), model.encode_passages(passages))
    assert not np.array_equal(said["fp32"][0], said["int8"][0])
    monkeypatch.setattr(dense_model, "resolve_precision",
                        lambda folder, precision, info=None, questions=False: "int8" if questions else "fp32")
    model.config.precision = "auto"
    assert (model.cpu_precision(), model.cpu_precision(questions=True)) == ("fp32", "int8")
    assert np.array_equal(model.encode_queries(texts), said["int8"][0])
    assert np.array_equal(model.encode_passages(passages), said["fp32"][1])


@pytest.mark.slow
def test_a_questions_vector_is_the_same_alone_and_in_any_batch_in_every_cpu_precision(converted_e5):
    """int8 activations are quantised with one scale per batch, and bf16 and fp32 round the
    products of kernels chosen by the batch's shape, so a question batched with others would get a
    vector that depends on them; each is encoded alone, so ``xqa ask`` and every batch of ``xqa
    answer`` search with the same vector (passages, encoded once, are batched)."""
    from retriever.dense.model import BiEncoder
    from xqa.records import Passage

    model = BiEncoder.load(converted_e5)
    texts = ["Wer schrieb den Faust?", "東京タワーの高さは？", "ما هي عاصمة مصر؟",
             "Who designed QRpedia, the mobile web system that delivers Wikipedia articles to smartphones?"]
    for precision in ("fp32", "bf16", "int8"):
        model.config.precision = precision
        alone = np.concatenate([model.encode_queries([t]) for t in texts])
        assert np.array_equal(model.encode_queries(texts, batch_size=4), alone), precision
        assert np.array_equal(model.encode_queries(texts[::-1], batch_size=2)[::-1], alone), precision
    # what the rule avoids: batched, the same texts' int8 vectors move with their companions
    passages = [Passage(str(i), "", t, "xx") for i, t in enumerate(texts)]
    batched = model.encode_passages(passages, batch_size=4)
    apart = np.concatenate([model.encode_passages([p], batch_size=1) for p in passages])
    assert not np.array_equal(batched, apart)


@pytest.mark.slow
def test_an_encoder_loaded_to_run_in_int8_builds_its_torch_tower_only_when_something_needs_it(converted_e5,
                                                                                                monkeypatch):
    """Loading skips the torch tower the int8 runtime does not use; it is built, the same as a
    full load's, the first time anything needs it (its weights, another precision, training)."""
    import torch

    import retriever.dense.model as dense_model
    from retriever.dense.model import BiEncoder
    from xqa.records import Passage

    monkeypatch.setattr(dense_model, "resolve_precision", lambda *a, **k: "int8")   # on any CPU
    texts = ["Wer schrieb den Faust?", "東京タワーの高さは？"]
    passages = [Passage(id="p", title="Faust", text="Faust ist eine Tragödie von Goethe.", lang="de")]
    lazy = BiEncoder.load(converted_e5)
    q, p = lazy.encode_queries(texts), lazy.encode_passages(passages)
    assert not lazy.towers_loaded and lazy.dim == 384 and lazy.device == torch.device("cpu")
    full = BiEncoder.from_pretrained(str(converted_e5))
    full.runtime_dir = Path(converted_e5)
    assert full.config == lazy.config
    assert np.array_equal(full.encode_queries(texts), q) and np.array_equal(full.encode_passages(passages), p)
    # the weights: the tower is built now, as the full load built it
    assert sum(t.numel() for t in lazy.parameters()) == sum(t.numel() for t in full.parameters())
    assert lazy.towers_loaded and not lazy.query_encoder.training
    ours, theirs = lazy.state_dict(), full.state_dict()
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    # training builds it too, and leaves the int8 runtime (which holds the weights as loaded)
    again = BiEncoder.load(converted_e5)
    again.train()
    assert again.towers_loaded and again.query_encoder.training and again.runtime_dir is None
    assert [t.requires_grad for t in again.parameters()] == [t.requires_grad for t in full.parameters()]
    # another precision reads through the tower
    fp32 = BiEncoder.load(converted_e5)
    monkeypatch.setattr(dense_model, "resolve_precision", lambda *a, **k: "fp32")
    assert np.allclose(fp32.encode_queries(texts), full.encode_queries(texts), atol=1e-5) and fp32.towers_loaded


def test_auto_takes_the_measured_choice_only_on_a_cpu_like_the_one_it_was_measured_on(tmp_path, monkeypatch):
    from xqa.encoders.info import EncoderInfo

    (tmp_path / runtime.INT8_FILE).write_bytes(b"onnx")
    here = runtime.cpu_features()
    info = EncoderInfo(runtime={"int8": {"file": runtime.INT8_FILE, "passed": True}, "choice": "fp32", "cpu": here})
    info.save(tmp_path)
    assert runtime.resolve_precision(tmp_path, "auto") == "fp32"          # measured here: fp32 was faster
    assert runtime.resolve_precision(tmp_path, "int8") == "int8"          # said explicitly
    # a record that took the fastest (int8) of two about as fast reads as choose() takes now
    info.runtime["measured"] = {"fp32": {"passages_per_s": 7.7, "passed": True},
                                "bf16": {"passages_per_s": 19.8, "passed": True},
                                "int8": {"passages_per_s": 22.0, "passed": True}}
    info.runtime["choice"] = "int8"
    info.save(tmp_path)
    assert runtime.recorded_choice(info.runtime) == "bf16"
    assert runtime.resolve_precision(tmp_path, "auto") == "bf16"
    assert "auto on this CPU" in runtime.describe(info.runtime) and ": bf16 (" in runtime.describe(info.runtime)
    assert runtime.resolve_precision(tmp_path, "auto", questions=True) == "bf16"   # not timed alone: the same
    for k, v in {"fp32": 25.0, "bf16": 50.0, "int8": 170.0}.items():
        info.runtime["measured"][k][runtime.QUESTION_SPEED] = v
    info.save(tmp_path)
    assert runtime.resolve_precision(tmp_path, "auto") == "bf16"
    assert runtime.resolve_precision(tmp_path, "auto", questions=True) == "int8"
    assert runtime.resolve_precision(tmp_path, "fp32", questions=True) == "fp32"   # said: taken as said
    (tmp_path / runtime.INT8_FILE).rename(tmp_path / "gone")
    assert runtime.resolve_precision(tmp_path, "auto", questions=True) == "bf16"   # int8's file gone
    (tmp_path / "gone").rename(tmp_path / runtime.INT8_FILE)
    for k in ("fp32", "bf16", "int8"):
        del info.runtime["measured"][k][runtime.QUESTION_SPEED]
    del info.runtime["measured"]
    info.runtime["choice"] = "fp32"
    info.save(tmp_path)
    assert runtime.recorded_choice(info.runtime) == "fp32"               # no measurements: its choice
    info.runtime["cpu"] = {**here, "amx_int8": not here["amx_int8"]}      # measured on another CPU
    info.save(tmp_path)
    assert runtime.resolve_precision(tmp_path, "auto") == "int8"          # the rule: int8 where it passed
    info.runtime["int8"]["passed"] = False
    info.save(tmp_path)
    monkeypatch.setattr(runtime, "bf16_supported", lambda: False)
    assert runtime.resolve_precision(tmp_path, "auto") == "fp32"          # a failed check is never used
    (tmp_path / runtime.INT8_FILE).unlink()
    with pytest.raises(ValueError, match=runtime.INT8_FILE):
        runtime.resolve_precision(tmp_path, "int8")
    with pytest.raises(ValueError, match="unknown precision"):
        runtime.resolve_precision(tmp_path, "int4")
    # a model with no runtime folder (trained, or changed since): an error xqa's commands say in a line
    with pytest.raises(XqaError, match=r"this model has none \(trained, or changed since\): choose fp32"):
        runtime.resolve_precision(None, "int8")


# --------------------------------------------------------------------------- the shipped parts

def _shipped_build_passages(tmp_path) -> Path:
    """passages.jsonl exactly as `xqa build` writes it from the shipped corpus."""
    from xqa.recipes.corpus import CorpusBuild
    from xqa.data.corpus import CORPUS_DIR

    b = CorpusBuild(CORPUS_DIR / "passages.jsonl.gz", tmp_path / "b")
    b.copy_passages()
    return b.passages


def _default_key(tmp_path, encoder):
    from xqa.recipes.corpus import CorpusBuild
    from xqa.data.corpus import CORPUS_DIR

    b = CorpusBuild(CORPUS_DIR / "passages.jsonl.gz", tmp_path / "b")
    if not b.passages.is_file():
        b.copy_passages()
    (tmp_path / "b" / "encoder").mkdir(exist_ok=True)
    shutil.copy(Path(encoder) / "xqa_encoder.json", tmp_path / "b" / "encoder")
    return b.prebuilt_key()


def test_the_shipped_parts_are_those_of_a_default_build_of_the_shipped_corpus(tmp_path, converted_e5):
    from xqa import prebuilt

    key = _default_key(tmp_path, converted_e5)
    assert prebuilt.find(key) == prebuilt.SHIPPED
    for change in ({"dense": {"max_length": 128}}, {"passages_sha256": "0" * 64}, {"encoder_sha256": "1" * 64},
                   {"lexical": {**key["lexical"], "steps": 61}}):
        assert prebuilt.find({**key, **change}) is None
    # each part by its own stage's settings: a dense index another model encodes keeps the shipped Λ
    other_model = {**key, "dense": {**key["dense"], "model": "0123456789ab"}}
    assert prebuilt.find(other_model, parts=("dense",)) is None
    assert prebuilt.find(other_model, parts=("lexical",)) == prebuilt.SHIPPED
    other_lexical = {**key, "lexical": {**key["lexical"], "steps": 61}}
    assert prebuilt.find(other_lexical, parts=("dense",)) == prebuilt.SHIPPED
    assert prebuilt.find(other_lexical, parts=("lexical",)) is None
    assert prebuilt.find({**other_model, "encoder_sha256": "1" * 64}, parts=("lexical",)) is None
    # the build's own choice: with --dense-model, its dense index is encoded, its Λ the shipped one
    from xqa.recipes.corpus import CorpusBuild
    from xqa.data.corpus import CORPUS_DIR

    b = CorpusBuild(CORPUS_DIR / "passages.jsonl.gz", tmp_path / "b", dense_model=converted_e5)
    assert b.prebuilt("dense") is None and b.prebuilt("lexical") == prebuilt.SHIPPED


def test_a_damaged_shipped_file_is_not_used(tmp_path, converted_e5):
    from xqa import prebuilt

    key = _default_key(tmp_path, converted_e5)
    copy = tmp_path / "prebuilt"
    shutil.copytree(prebuilt.SHIPPED, copy)
    assert prebuilt.find(key, copy) == copy
    vec = np.load(copy / "dense.npy")
    vec[0, 0] += np.float16(0.5)
    np.save(copy / "dense.npy", vec)
    assert prebuilt.find(key, copy) is None


@pytest.mark.slow
def test_the_shipped_vectors_are_the_encoders_and_lambdas_own(tmp_path, converted_e5):
    """Re-encode a few shipped passages: the shipped dense vectors are e5's (fp32), and the
    shipped Λ vectors are those of the shipped Λ delta unpacked over the encoder."""
    from retriever.dense.delta import unpack
    from retriever.dense.model import BiEncoder
    from xqa import prebuilt
    from xqa.io import read_passages

    passages = list(read_passages(_shipped_build_passages(tmp_path)))
    rows = [0, 500, 1700, 2900, 3700]
    sub = [passages[i] for i in rows]
    dense = BiEncoder.load(converted_e5)
    dense.config.precision = "fp32"
    got = dense.encode_passages(sub)
    shipped = np.load(prebuilt.SHIPPED / "dense.npy").astype(np.float32)[rows]
    assert (got * shipped).sum(1).min() > 0.999
    lam = BiEncoder.load(unpack(prebuilt.SHIPPED / "lexical", converted_e5, tmp_path / "lexical"))
    shipped = np.load(prebuilt.SHIPPED / "lexical.npy").astype(np.float32)[rows]
    assert (lam.encode_passages(sub) * shipped).sum(1).min() > 0.999


@pytest.mark.slow
def test_a_build_of_the_shipped_corpus_takes_its_vectors_and_lambda_from_the_shipped_parts(tmp_path, converted_e5):
    """The dense, Λ and SPAR stages of a default build of the shipped corpus encode and train
    nothing: they seed their shards from xqa/corpus/prebuilt, and the indexes they build find
    the paragraphs that answer shipped test questions."""
    import gzip

    from retriever.dense.retriever import DenseRetriever
    from retriever.spar.index import SparRetriever
    from xqa.recipes.corpus import CorpusBuild
    from xqa.data.corpus import CORPUS_DIR
    from xqa.records import Question

    b = CorpusBuild(CORPUS_DIR / "passages.jsonl.gz", tmp_path / "b")
    b.copy_passages()
    (tmp_path / "b" / "encoder").symlink_to(converted_e5, target_is_directory=True)
    assert b.prebuilt() is not None
    b.index_dense()
    cfg = json.loads((tmp_path / "b" / "dense" / "config.json").read_text())
    assert cfg["passages"] == 3752 and cfg["precisions"] == ["prebuilt (fp32)"]
    b.train_lexical()
    assert (tmp_path / "b" / "lexical" / "prebuilt.json").is_file()
    assert not (tmp_path / "b" / "lexical" / "checkpoint").exists()      # nothing was trained
    b.index_spar()
    spar_cfg = json.loads((tmp_path / "b" / "spar" / "config.json").read_text())
    assert spar_cfg["passages"] == 3752 and spar_cfg["reused_dense_shards"]
    with gzip.open(CORPUS_DIR / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [r for r in map(json.loads, f) if r["split"] == "test"][::400]
    questions = [Question(r["id"], r["question"], r["lang"]) for r in rows]
    for retriever in (DenseRetriever.load(tmp_path / "b" / "dense"), SparRetriever.load(tmp_path / "b" / "spar")):
        hits = retriever.search(questions, 5)
        found = sum(r["positive_ids"][0] in {h.id for h in hs} for r, hs in zip(rows, hits))
        assert found >= len(rows) * 2 // 3, f"{type(retriever).__name__}: {found} of {len(rows)}"
