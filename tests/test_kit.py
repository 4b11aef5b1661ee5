"""The span reader's training kit: its rows are the reader's rows, its encoder is the base exactly,
the mix follows its rule, a kit run stops on time and resumes, and its delta becomes the reader
it trained; and the MLQA-script metric scores as the scripts' rules say."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _write_data(folder: Path, n: int = 6) -> tuple[list[dict], dict[str, dict]]:
    """``n`` real shipped questions (train) and 2 more (dev), with their paragraphs and others as
    negatives, in ``xqa data train``'s layout."""
    with gzip.open(ROOT / "xqa" / "corpus" / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        passages = {p["id"]: p for p in map(json.loads, f)}
    rows = []
    with gzip.open(ROOT / "xqa" / "corpus" / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
        for q in map(json.loads, f):
            p = passages[q["positive_ids"][0]]
            if q.get("crosslingual") or q["answers"][0] not in p["text"] or len(p["text"]) > 1500:
                continue
            rows.append({"id": q["id"], "question": q["question"], "lang": q["lang"], "answers": q["answers"][:1],
                         "answer_starts": [p["text"].find(q["answers"][0])], "positive_ids": [p["id"]],
                         "source": "set-a" if len(rows) % 3 else "set-b"})
            if len(rows) == n + 2:
                break
    ids = sorted({r["positive_ids"][0] for r in rows})
    for r in rows:
        r["negative_ids"] = [i for i in ids if i != r["positive_ids"][0]][:2]
    folder.mkdir(parents=True, exist_ok=True)
    for name, part in (("train.jsonl", rows[:n]), ("dev.jsonl", rows[n:])):
        (folder / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in part), encoding="utf-8")
    (folder / "passages.jsonl").write_text(
        "".join(json.dumps({k: passages[i][k] for k in ("id", "title", "text", "lang")}, ensure_ascii=False) + "\n"
                for i in ids), encoding="utf-8")
    return rows, passages


@pytest.fixture(scope="module")
def kit(converted_e5, tmp_path_factory):
    """``xqa reader kit`` over six real questions, run in this process (a fresh one spends most
    of its time importing torch)."""
    import contextlib
    import io

    from xqa.cli import main

    folder = tmp_path_factory.mktemp("kit")
    rows, passages = _write_data(folder / "data")
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = main(["reader", "kit", "--data", str(folder / "data"), "--base", str(converted_e5),
                     "--out", str(folder / "kit"), "--layers", "1", "--max-length", "64", "--stride", "16",
                     "--quiet"])
    assert code == 0, said.getvalue()[-2000:]
    assert "6 training questions (set-a 4, set-b 2), 2 dev questions" in said.getvalue()
    from reader.span.kit import Kit

    return Kit(folder / "kit"), rows, passages, folder


def test_the_kit_encoder_is_the_base_exactly_on_the_tokens_it_keeps(kit, converted_e5):
    from safetensors.torch import load_file

    k, _, _, _ = kit
    base = load_file(str(converted_e5 / "model.safetensors"))
    mine = k.base_state()
    vocab = k.arrays["vocab"].astype(np.int64)
    assert k.config["encoder_config"]["num_hidden_layers"] == 1
    assert not any(name.startswith("encoder.layer.1.") for name in mine)
    for name, w in mine.items():
        want = base[name][vocab] if name == "embeddings.word_embeddings.weight" else base[name]
        assert w.shape == want.shape and bool((w == want).all()), name


def test_the_kit_encoder_is_read_once_and_models_made_of_it_do_not_change_it(kit, monkeypatch):
    import safetensors.torch
    import torch

    from reader.fid.kit import kit_encoder

    k, _, _, _ = kit
    first = k.base_state()
    first.pop("embeddings.word_embeddings.weight")             # a caller's dict is its own
    monkeypatch.setattr(safetensors.torch, "load_file", lambda *a, **kw: pytest.fail("read again"))
    again = k.base_state()
    assert "embeddings.word_embeddings.weight" in again
    before = {name: w.clone() for name, w in again.items()}
    for model in (k.model().encoder, kit_encoder(k)):       # the span reader's and the FiD's encoder
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)                                  # training changes its own copies only
    assert all(bool((k.base_state()[name] == w).all()) for name, w in before.items())


def test_kit_rows_are_the_readers_rows_and_the_targets_are_the_answers(kit, converted_e5):
    import random

    from transformers import AutoTokenizer

    from reader.span.data import encode, windows
    from reader.span.kit import KitSpanTask

    k, rows, passages, _ = kit
    tok = AutoTokenizer.from_pretrained(str(converted_e5))
    vocab = k.arrays["vocab"].astype(np.int64)
    task = KitSpanTask(k, negatives=1, dev_questions=2)
    random.seed(0)
    batch = task.collate(list(range(len(k))))
    K = 2
    for b in range(len(k)):
        ids = vocab[batch["input_ids"][b * K].numpy()]
        s = int(batch["start_targets"][b].nonzero()[0])
        e = int(batch["end_targets"][b].nonzero()[0])
        assert rows[b]["answers"][0] in tok.decode(ids[s: e + 1].tolist()).strip() or \
            tok.decode(ids[s: e + 1].tolist()).strip() in rows[b]["answers"][0]
        # the gold row is one of the reader's own windows of that question and paragraph
        p = passages[rows[b]["positive_ids"][0]]
        q, t, x = encode(tok, [rows[b]["question"], p["title"], p["text"]])
        wins = windows(q, t, x, tok.cls_token_id, tok.sep_token_id, k.layout)
        row = ids[batch["attention_mask"][b * K].numpy().astype(bool)].tolist()
        assert row in [w.ids for w in wins]


def test_validation_reads_several_questions_a_pass_and_scores_each_by_its_own_windows(kit):
    """A model that marks each question's gold span in its own rows: validation finds every one,
    whether a pass holds one question's windows or several questions'."""
    import torch

    from reader.span.kit import KitSpanTask

    k, _, _, _ = kit
    task = KitSpanTask(k, negatives=1, dev_questions=2)
    marks = {}
    for i in range(task.dev_questions):
        q, p, gold = k.question("dev", i)
        head, text, wins = task._rows(q, p)
        (gs, ge), h = gold[0], len(head)
        for first, n in wins:
            row = tuple(head + text[first: first + n].tolist() + [k.sep_id])
            start, end = torch.zeros(len(row)), torch.zeros(len(row))
            if first <= gs and ge < first + n:
                start[h + gs - first], end[h + ge - first] = 10.0, 10.0
            assert row not in marks
            marks[row] = (start, end)

    class Marker(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.passes = 0

        def forward(self, input_ids, attention_mask):
            self.passes += 1
            start = torch.full(input_ids.shape, -10.0)
            end = torch.full(input_ids.shape, -10.0)
            for r in range(len(input_ids)):
                row = tuple(input_ids[r][attention_mask[r].bool()].tolist())
                start[r, : len(row)], end[r, : len(row)] = marks[row]
            return start, end, None

    for eval_rows, passes in ((1, task.dev_questions), (64, 1)):
        model = Marker()
        task.eval_rows = eval_rows
        assert task.evaluate(model) == {"f1": 1.0, "em": 1.0}
        assert model.passes == passes


def test_the_mix_draws_each_set_by_its_share_and_repeats_nothing_within_a_pass():
    from reader.span.kit import mix_table, mixed_order

    sources = [0] * 900 + [1] * 100
    order = mixed_order(sources, 0.5, 1.0, seed=0)
    counts = Counter(sources[i] for i in order)
    share = 900 ** 0.5 / (900 ** 0.5 + 100 ** 0.5)
    assert len(order) == 1000
    assert counts[0] == round(1000 * share) and counts[1] == round(1000 * (1 - share))
    assert len(set(i for i in order if sources[i] == 0)) == counts[0]          # the big set: no repeat
    small = [i for i in order if sources[i] == 1]
    assert Counter(Counter(small).values()) == {3: 50, 2: 50}                  # 250 draws: 2 passes and a half
    assert np.array_equal(order, mixed_order(sources, 0.5, 1.0, seed=0))
    assert mixed_order(sources, 1.0, 2.0, seed=1).shape == (2000,)
    table = mix_table(sources, ["big", "small"], 0.5)
    assert [round(r["share"], 2) for r in table] == [0.75, 0.25]


def _train(kit_dir: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xqa.cli", "train", "reader", "--family", "span", "--kit", str(kit_dir),
                           "--out", str(out), "--batch-size", "2", "--lr", "1e-3", "--log-every", "1",
                           "--threads", "1", *extra], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_kit_run_stops_on_time_resumes_and_packs_into_the_reader_it_trained(kit, converted_e5, tmp_path):
    import torch
    from safetensors.torch import load_file

    from reader.span.kit import to_reader
    from reader.span.inference import SpanReader

    k, _, _, folder = kit
    out = tmp_path / "run"
    first = _train(folder / "kit", out, "--max-steps", "4", "--save-every", "100", "--max-minutes", "0.0001")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "stopped after" in first.stdout
    state = json.loads((out / "checkpoint" / "trainer_state.json").read_text())
    assert state["step"] == 1 and not state["done"]
    second = _train(folder / "kit", out, "--max-steps", "4", "--save-every", "100")
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resuming from" in second.stdout
    assert json.loads((out / "checkpoint" / "trainer_state.json").read_text())["step"] == 4
    best = out / "best"
    cfg = json.loads((best / "config.json").read_text())
    assert cfg["kind"] == "span_kit_reader"
    shards = {}
    for f in cfg["files"]:
        assert (best / f).stat().st_size <= 15 * 2 ** 20
        shards.update(load_file(str(best / f)))
    assert "delta.embeddings.word_embeddings.weight" not in shards
    # the reader: base + delta, the base's full vocabulary, the kit's layers
    reader = to_reader(out, converted_e5, tmp_path / "reader")
    loaded = SpanReader.load(tmp_path / "reader", runtime=False)
    base = load_file(str(converted_e5 / "model.safetensors"))
    name = "encoder.layer.0.attention.self.query.weight"
    got = loaded.model.encoder.state_dict()[name]
    assert torch.allclose(got, base[name] + shards[f"delta.{name}"].float())
    assert not torch.equal(got, base[name])          # training changed it
    assert loaded.model.encoder.config.vocab_size == base["embeddings.word_embeddings.weight"].shape[0]
    assert loaded.model.encoder.config.num_hidden_layers == 1
    assert torch.equal(loaded.model.span_head.weight, shards["heads.span_head.weight"])
    # xqa reader pack takes the run folder as it takes a span reader's
    packed = subprocess.run([sys.executable, "-m", "xqa.cli", "reader", "pack", "--reader", str(out), "--base",
                             str(converted_e5), "--out", str(tmp_path / "packed")], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert packed.returncode == 0, packed.stderr[-2000:]
    assert reader.exists() and (tmp_path / "packed" / "delta.safetensors").is_file()


def test_the_mlqa_script_metric_follows_its_rules():
    from xqa.evaluation import mlqa

    assert mlqa.score("The Eiffel Tower!", ["eiffel tower"], "en") == (1.0, 1.0)
    assert mlqa.score("the tower", ["a tower"], "en") == (1.0, 1.0)
    # Spanish and German articles go; English ones stay in German text
    assert mlqa.score("la Torre", ["Torre"], "es") == (1.0, 1.0)
    assert mlqa.score("die Mauer", ["Mauer"], "de") == (1.0, 1.0)
    assert mlqa.score("the Mauer", ["Mauer"], "de")[0] == 0.0
    # Unicode punctuation is removed (SQuAD's ASCII set alone would keep « » and 。)
    assert mlqa.score("«Paris»", ["Paris"], "fr") == (1.0, 1.0)
    # Chinese: one token per Han character
    em, f1 = mlqa.score("北京大学", ["北京"], "zh")
    assert em == 0.0 and f1 == pytest.approx(2 * (2 / 4) * 1.0 / (2 / 4 + 1.0))
    assert mlqa.tokens("在2008年", "zh") == ["在", "2008", "年"]
    # Arabic: the article ال is cut out wherever it occurs
    assert mlqa.score("الكتاب", ["كتاب"], "ar") == (1.0, 1.0)
    # no shared token: 0; the best gold answer counts
    assert mlqa.score("Berlin", ["Paris"], "en") == (0.0, 0.0)
    assert mlqa.score("Berlin", ["Paris", "berlin"], "en") == (1.0, 1.0)
    assert mlqa.score("x", [], "en") == (0.0, 0.0)


def _squad(path: Path, paragraphs: list[tuple[str, list[tuple[str, str, str, int]]]]) -> None:
    data = {"data": [{"title": "T", "paragraphs": [
        {"context": ctx, "qas": [{"id": i, "question": q, "answers": [{"text": a, "answer_start": s}]}
                                 for i, q, a, s in qas]} for ctx, qas in paragraphs]}]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def test_a_set_of_several_files_is_read_whole_and_a_question_listed_twice_is_kept_once(tmp_path, monkeypatch):
    from xqa.data import sets, training

    ctx = "Istanbul was the capital of the Ottoman Empire until 1923."
    (tmp_path / "tq").mkdir()
    _squad(tmp_path / "tq" / "a.json", [(ctx, [("1", "What was the capital?", "Istanbul", 0)])])
    # the same question again under another id, and one whose offset points elsewhere
    _squad(tmp_path / "tq" / "b.json", [(ctx, [("9", "What  was the capital?", "Istanbul", 0),
                                               ("2", "Until when?", "1923", 3)])])
    monkeypatch.setitem(sets.SETS, "test-glob", sets.QASet("test-glob", "tq/*.json", "tr", "train", "MIT", "test"))
    passages, examples, skipped = training.collect(tmp_path, set(), ["test-glob"])
    assert len(passages) == 1
    assert [(p["source"], p["license"]) for p in passages.values()] == [("test-glob", "MIT")]   # kept per passage
    assert sorted(e["question"] for e in examples) == ["Until when?", "What was the capital?"]
    until = next(e for e in examples if e["question"] == "Until when?")
    assert ctx[until["answer_starts"][0]:].startswith("1923")
    assert skipped["the same question of the same paragraph again"] == 1
    assert sets.SETS["test-glob"].files(tmp_path) == [tmp_path / "tq" / "a.json", tmp_path / "tq" / "b.json"]
    with pytest.raises(Exception, match="no file matches"):
        sets.QASet("none", "absent/*.json", "tr", "train", "MIT", "x").files(tmp_path)
    with pytest.raises(Exception, match=r"--data .*nodata: no such folder"):   # the folder given, not the default
        sets.data_root(tmp_path / "nodata")


def test_every_train_split_of_the_shared_data_is_a_training_set():
    from xqa.data.sets import SETS, TRAIN_SETS, data_root

    root = Path(__file__).resolve().parents[2] / "shared" / "data"
    if not (root / "squad_v1.1_train").is_dir() or not (root / "tquad_tr").is_dir():
        pytest.skip("../shared/data with SQuAD v1.1 train and TQuAD is absent (a fresh machine has none)")
    assert {"squad", "tquad"} <= set(TRAIN_SETS)
    assert all(SETS[n].role != "eval" for n in TRAIN_SETS)
    for name in TRAIN_SETS:
        assert all(f.is_file() for f in SETS[name].files(data_root(root))), name
    assert len(SETS["tquad"].files(root)) == 8


def test_the_shipped_reader_is_all_twelve_layers_in_at_most_25_mb():
    from xqa.data.corpus import SHIPPED_READER

    cfg = json.loads((SHIPPED_READER / "config.json").read_text(encoding="utf-8"))
    assert cfg["kind"] == "span_reader_delta"
    assert cfg["reader"]["layers"] == cfg["encoder_config"]["num_hidden_layers"] == 12
    assert sum(f.stat().st_size for f in SHIPPED_READER.iterdir()) <= 25_000_000


# ----------------------------------------------------------------------------- the FiD from a kit


def test_fid_rows_cut_from_the_kit_are_the_rows_the_fid_reader_reads(kit, converted_e5):
    """A FiD row made of the kit's ids and marker ids is the tokenizer's row of the formatted passage;
    every question reads its paragraph among others; the target is the answer as its paragraph writes it."""
    import random

    from transformers import AutoTokenizer

    from reader.fid.data import format_passage
    from reader.fid.kit import KitFiDTask

    k, rows, passages, _ = kit
    tok = AutoTokenizer.from_pretrained(str(converted_e5))
    vocab = k.arrays["vocab"].astype(np.int64)
    by_kit_passage = {}
    for pid, p in passages.items():
        by_kit_passage.setdefault(p["title"] + "\n" + p["text"], pid)
    task = KitFiDTask(k, n_context=3, max_length=64, seed=1)
    rng = random.Random(0)
    for i in range(len(k)):
        chosen, at = task.passages_for("train", i, rng)
        assert len(chosen) == 3 and len(set(chosen)) == 3
        _, gold, _ = k.question("train", i)
        assert chosen[at] == gold
        for p, row in zip(chosen, task.rows("train", i, chosen)):
            title, text = (tok.decode(vocab[x].tolist()) for x in k.passage(p))
            original = passages[by_kit_passage[title + "\n" + text]] if title + "\n" + text in by_kit_passage else None
            want = tok(format_passage(rows[i]["question"], rows[i]["lang"], original["title"] if original else title,
                                      original["text"] if original else text), max_length=64, truncation=True)
            assert vocab[row].tolist() == want["input_ids"], (i, p)
        target = task.target("train", i)
        answer = tok.decode(vocab[target[:-1]].tolist()).strip()
        if len(target) < task.max_answer_len:
            assert answer == rows[i]["answers"][0]
        else:                                     # a long answer is cut to max_answer_len - 1 tokens
            assert rows[i]["answers"][0].startswith(answer) and len(answer) > 0
        assert task.target("train", i)[-1] == k.sep_id


@pytest.mark.slow
def test_a_fid_kit_run_stops_on_time_resumes_and_becomes_the_reader_it_trained(kit, converted_e5, tmp_path,
                                                                                monkeypatch, real_build):
    import contextlib
    import io

    import torch
    from safetensors.torch import load_file

    from reader.fid.inference import FiDReader
    from reader.fid.kit import to_reader
    from xqa.cli import main
    from xqa.records import Context, Question

    k, rows, passages, folder = kit
    out = tmp_path / "run"
    args = ["train", "reader", "--family", "fid", "--kit", str(folder / "kit"), "--out", str(out), "--batch-size", "2",
            "--n-context", "3", "--decoder-layers", "1", "--lr", "1e-3", "--max-steps", "4", "--save-every", "100",
            "--log-every", "1", "--dev-limit", "2"]
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(args + ["--max-minutes", "0.0001"]) == 0
    assert "stopped after" in said.getvalue()
    assert not json.loads((out / "checkpoint" / "trainer_state.json").read_text())["done"]
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(args) == 0
    assert "resuming from" in said.getvalue()
    assert json.loads((out / "checkpoint" / "trainer_state.json").read_text())["step"] == 4
    # the kept checkpoint is the one of best F1, ties broken by the lower dev token loss
    evals = [r["eval"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "eval" in r]
    assert evals and all(abs(e["select"] - (e["f1"] - 1e-4 * e["token_loss"])) < 1e-9 for e in evals)
    assert f"F1 less 0.0001 x token loss {max(e['select'] for e in evals):.4f}" in said.getvalue()
    best = out / "best"
    cfg = json.loads((best / "config.json").read_text())
    assert cfg["kind"] == "fid_kit_reader" and cfg["warm_start"] == {"decoder_layers": 1, "share": False}
    shards = {}
    for f in cfg["files"]:
        assert (best / f).stat().st_size <= 15 * 2 ** 20
        shards.update(load_file(str(best / f)))
    assert not any("word_embeddings" in name for name in shards)
    assert any(name.startswith("decoder.bert.encoder.layer.0.crossattention.") for name in shards)
    reader = FiDReader.load(to_reader(out, converted_e5, tmp_path / "reader"))
    base = load_file(str(converted_e5 / "model.safetensors"))
    name = "encoder.layer.0.attention.self.query.weight"
    got = reader.model.t5.encoder.state_dict()[name]
    assert torch.allclose(got, base[name] + shards[f"delta.encoder.{name}"].float())
    assert not torch.equal(got, base[name])                       # training changed it
    assert reader.model.config.encoder.vocab_size == base["embeddings.word_embeddings.weight"].shape[0]
    assert reader.model.decoder_layers == 1 and reader.n_context == 3
    # the output bias: the kit's tokens keep theirs, every other token is below all of them
    bias = reader.model.t5.decoder.cls.predictions.bias.detach()
    kit_tokens = torch.from_numpy(k.arrays["vocab"].astype(np.int64))
    assert torch.equal(bias[kit_tokens], shards["vocab.decoder.cls.predictions.bias"])
    others = torch.ones_like(bias, dtype=torch.bool)
    others[kit_tokens] = False
    assert float(bias[others].max()) < float(bias[kit_tokens].min())
    p = passages[rows[0]["positive_ids"][0]]
    ctx = Context(id=p["id"], title=p["title"], text=p["text"], lang=p["lang"], score=1.0, source="test")
    question = Question(id="q", question=rows[0]["question"], lang=rows[0]["lang"])
    read = reader.read([question], [[ctx]], beams=2, n_best=2)[0]
    assert read.candidates and len(read.relevance) == 1
    # shipped form: xqa reader pack takes the run as it takes a span reader's; unpacked, the weights are
    # the trained ones within int8's step and the word embeddings the base's
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(["reader", "pack", "--reader", str(out), "--base", str(converted_e5), "--out",
                     str(tmp_path / "packed")]) == 0
        assert main(["reader", "unpack", "--delta", str(tmp_path / "packed"), "--base", str(converted_e5),
                     "--out", str(tmp_path / "unpacked")]) == 0
    packed_cfg = json.loads((tmp_path / "packed" / "config.json").read_text())
    assert packed_cfg["kind"] == "fid_reader_delta"
    packed = load_file(str(tmp_path / "packed" / "delta.safetensors"))
    assert all(t.dtype == torch.int8 for name, t in packed.items() if t.ndim == 2)   # every matrix in int8
    assert (tmp_path / "packed" / "delta.safetensors").stat().st_size < sum((best / f).stat().st_size
                                                                           for f in cfg["files"])
    # the weights are compared in fp32 (unpack's runtime check may have chosen int8 for reading)
    unpacked = FiDReader.load(tmp_path / "unpacked", precision="fp32")
    assert unpacked.cpu_precision() == "fp32"
    mine, theirs = reader.model.t5.state_dict(), unpacked.model.t5.state_dict()
    for name, w in mine.items():
        if name.endswith("position_ids"):
            continue
        step = w.float().abs().amax(dim=-1, keepdim=True) / 127 if w.ndim == 2 else torch.zeros(())
        assert bool(((theirs[name].float() - w.float()).abs() <= 0.6 * step + 1e-6).all()), name  # fp16 scales
    emb = unpacked.model.t5.encoder.embeddings.word_embeddings.weight
    assert torch.equal(emb, base["embeddings.word_embeddings.weight"])
    assert unpacked.model.t5.decoder.cls.predictions.decoder.weight.data_ptr() == emb.data_ptr()
    assert unpacked.read([question], [[ctx]], beams=2, n_best=2)[0].candidates
    # a build takes the packed FiD, and the real-text default offers a shipped one as "fid"
    from xqa.data import corpus as shipped
    from xqa.recipes.corpus import place_reader, shipped_readers

    place_reader(tmp_path / "packed", converted_e5, tmp_path / "build" / "readers" / "fid")
    placed = FiDReader.load(tmp_path / "build" / "readers" / "fid")
    assert torch.equal(placed.model.t5.decoder.cls.predictions.bias, unpacked.model.t5.decoder.cls.predictions.bias)
    monkeypatch.setattr(shipped, "SHIPPED_FID", tmp_path / "packed")
    assert shipped_readers({"other": "x"}) == {"other": "x", "fid": str(tmp_path / "packed")}
    monkeypatch.setattr(shipped, "SHIPPED_FID", tmp_path / "none")
    assert shipped_readers() == {}
    # xqa ask --reader RUN answers with the run as it stands: its reader made over the encoder of the
    # pipeline's dense index, into a folder of the temporary directory that is made once
    import tempfile

    from xqa.cli_options import reader_choice
    from xqa.config import PipelineConfig
    from xqa.errors import XqaError

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    _, build, asked = real_build
    for attempt in range(2):
        said, logged = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(logged):
            assert main(["ask", asked[0]["question"], "--config", str(build / "pipeline.json"), "--reader", str(out),
                         "--json"]) == 0
        record = json.loads(said.getvalue())
        assert record["evidence"] and record["answer"] is not None
        made = sorted((tmp_path / "tmp").glob("xqa-readers-*/*"))
        assert len(made) == 1 and (made[0] / "config.json").is_file() and made[0].name.startswith("run-best-")
        if attempt == 0:
            assert "a kit run's reader, made over" in logged.getvalue()
            stamp = (made[0] / "config.json").stat().st_mtime_ns
    assert "a kit run's reader" not in logged.getvalue()                   # the second ask reused it
    assert (made[0] / "config.json").stat().st_mtime_ns == stamp
    chosen = FiDReader.load(made[0])
    assert torch.equal(chosen.model.t5.decoder.cls.predictions.bias, reader.model.t5.decoder.cls.predictions.bias)
    with pytest.raises(XqaError, match="a reader trained from a kit, and this pipeline has no converted encoder"):
        reader_choice(PipelineConfig(), str(out))


def test_fid_kit_copy_targets_point_at_the_answer_in_the_gold_row(kit, converted_e5):
    """With guided cross-attention, each answer token's target is its own position in the gold
    paragraph's row: the token there is the target token."""
    import random

    from reader.fid.kit import KitFiDTask

    k, _, _, _ = kit
    task = KitFiDTask(k, n_context=3, max_length=64, copy_attention=2.0, generator_share=0.1)
    assert task.model.copy_head == (task.model.decoder_layers - 1, 0) and task.model.generator_share == 0.1
    task._rng = random.Random(3)
    batch = task.collate(list(range(len(k))))
    B, N, L = batch["input_ids"].shape
    flat = batch["input_ids"].reshape(B, N * L)
    pointed = 0
    for b in range(B):
        for t in range(batch["labels"].shape[1]):
            where = batch["copy_mask"][b, t].nonzero().flatten().tolist()
            label = int(batch["labels"][b, t])
            if label in (-100, k.sep_id):
                assert not where
                continue
            assert len(where) <= 1
            if where:
                pointed += 1
                assert int(flat[b, where[0]]) == label
    assert pointed >= len(k)             # every question points at least at its first answer token
    loss = task.loss(task.model, batch)
    assert torch_is_finite(loss)


def torch_is_finite(x) -> bool:
    import torch

    return bool(torch.isfinite(x).all())


@pytest.mark.slow
def test_a_fid_overfit_run_trains_on_a_few_questions_and_validates_on_them(kit, tmp_path):
    """``--overfit N``: the check that a FiD, its data and settings can learn at all. The same few
    training questions come over and over, validation reads them, and a small FiD learns them."""
    import contextlib
    import io

    from xqa.cli import main

    _, _, _, folder = kit
    out = tmp_path / "run"
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(["train", "reader", "--family", "fid", "--kit", str(folder / "kit"), "--out", str(out),
                     "--overfit", "2", "--n-context", "2", "--decoder-layers", "1", "--batch-size", "2",
                     "--lr", "1e-3", "--warmup-steps", "5", "--max-steps", "60", "--eval-every", "30",
                     "--log-every", "100", "--save-every", "1000", "--threads", "1"]) == 0
    text = said.getvalue()
    assert "2 train questions validated" in text and "overfit check: 2 training questions" in text
    assert "of draws" not in text                                         # no mix table: the mix is not drawn
    evals = [r["eval"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "eval" in r]
    assert len(evals) == 2 and evals[-1]["token_loss"] < evals[0]["token_loss"]
    assert evals[-1]["f1"] >= 0.5, evals                                  # learned what it was shown
