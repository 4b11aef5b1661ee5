"""A user's own QA sets: both layouts read and checked (each problem named by file:line), written as
span-reader training files, and a span reader continued on them that stops on time, resumes and
loads as a pipeline's reader."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xqa.data.own import OwnDataConfig, build, read_own
from xqa.errors import InputError, XqaError

ROOT = Path(__file__).resolve().parents[1]

# Two paragraphs of the shipped corpus's kind (short, so that tests stay fast).
BERLIN = "Berlin ist die Hauptstadt Deutschlands. Die Stadt hat etwa 3,7 Millionen Einwohner."
TOKYO = "東京は日本の首都である。人口は約1400万人で、世界最大の都市圏を持つ。"


def _squad(path: Path, qas_de: list[dict], qas_ja: list[dict] | None = None) -> Path:
    data = {"version": "mine", "data": [
        {"title": "Berlin", "paragraphs": [{"context": BERLIN, "qas": qas_de}]},
        *([{"title": "東京", "paragraphs": [{"context": TOKYO, "qas": qas_ja}]}] if qas_ja else [])]}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _line_of(path: Path, needle: str) -> int:
    """The line of the record (its opening brace) whose id is ``needle``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if f'"id": "{needle}"' in line)
    while "{" not in lines[at]:
        at -= 1
    return at + 1


GOOD_DE = [{"id": "b1", "question": "Was ist die Hauptstadt Deutschlands?",
            "answers": [{"text": "Berlin", "answer_start": 0}]},
           {"id": "b2", "question": "Wie viele Einwohner hat Berlin?",
            "answers": [{"text": "etwa 3,7 Millionen", "answer_start": BERLIN.index("etwa")}]}]


def test_a_squad_layout_file_gives_each_answer_at_its_place_in_its_context(tmp_path):
    path = _squad(tmp_path / "mine.json", GOOD_DE)
    qs = read_own(f"{path}:de")
    assert [q.id for q in qs] == ["b1", "b2"]
    with pytest.raises(XqaError, match=r"mine\.json:jp: 'jp' after the file name \(FILE:LANG\) is no language code"):
        read_own(f"{path}:jp")   # not "no such file"
    for q in qs:
        assert q.lang == "de" and q.title == "Berlin" and q.context == BERLIN
        assert [q.context[s: s + len(a)] for a, s in zip(q.answers, q.starts)] == q.answers
    assert qs[1].starts == [BERLIN.index("etwa 3,7")]
    assert qs[0].where == f"{path}:{_line_of(path, 'b1')}"


def test_a_squad_answer_missing_from_its_context_is_named_by_file_line_and_place(tmp_path):
    bad = [GOOD_DE[0], {"id": "b2", "question": "Wer regiert?", "answers": [{"text": "Olaf", "answer_start": 3}]}]
    path = _squad(tmp_path / "mine.json", bad)
    with pytest.raises(InputError) as e:
        read_own(str(path), lang="de")
    line = _line_of(path, 'b2')
    assert str(e.value) == (f"{path}:{line}: data[0].paragraphs[0].qas[1]: answer 'Olaf' is not in its context")


def test_the_language_comes_from_the_record_the_file_or_lang_and_must_be_known(tmp_path):
    rows = [{"question": "首都は？", "answers": ["東京"], "context": TOKYO, "lang": "ja"},
            {"question": "Hauptstadt?", "answers": ["Berlin"], "context": BERLIN}]
    path = _jsonl(tmp_path / "mixed.jsonl", rows)
    assert [q.lang for q in read_own(f"{path}:de")] == ["ja", "de"]
    assert [q.lang for q in read_own(str(path), lang="de")] == ["ja", "de"]
    with pytest.raises(InputError, match=rf"{path}:2: no language"):
        read_own(str(path))
    with pytest.raises(XqaError, match="unknown language code 'xx'"):
        read_own(str(path), lang="xx")
    _jsonl(path, [{**rows[0], "lang": "japanese"}])
    with pytest.raises(InputError, match=rf"{path}:1: field 'lang': unknown language code 'japanese'"):
        read_own(str(path))


def test_jsonl_takes_answers_as_strings_objects_or_one_string_and_answer_start(tmp_path):
    rows = [{"id": 7, "question": "Hauptstadt?", "answers": ["Berlin", "Berlin"], "context": BERLIN, "title": "B"},
            {"question": "Einwohner?", "answers": [{"text": " etwa 3,7 Millionen", "answer_start": 56}],
             "context": BERLIN},
            {"question": "Stadt?", "answer": "Stadt", "answer_start": BERLIN.index("Stadt hat"), "context": BERLIN},
            {"question": "Welche Stadt?", "answers": ["Berlin"], "answer_start": [40], "context": BERLIN}]
    path = _jsonl(tmp_path / "mine.jsonl", rows)
    qs = read_own(str(path), lang="de")
    assert [q.id for q in qs] == ["7", f"{path.stem}:2", f"{path.stem}:3", f"{path.stem}:4"]
    assert qs[0].answers == ["Berlin"] and qs[0].title == "B"
    assert qs[1].answers == ["etwa 3,7 Millionen"] and qs[1].starts == [BERLIN.index("etwa")]
    assert qs[2].starts == [BERLIN.index("Stadt hat")]          # the given occurrence, not the first
    assert qs[3].starts == [0]                                   # a start that misses: the first occurrence
    assert [q.where for q in qs] == [f"{path}:{n}" for n in range(1, 5)]


def test_every_problem_of_a_run_is_listed_by_file_line_and_nothing_is_written(tmp_path):
    rows = [{"question": "Hauptstadt?", "answers": ["Berlin"], "context": BERLIN},
            {"question": "   ", "answers": ["Berlin"], "context": BERLIN},
            {"question": "Wer regiert?", "answers": ["Olaf"], "context": BERLIN},
            {"question": "Einwohner?", "answers": [], "context": BERLIN},
            {"question": "Fluss?", "answers": ["Spree"]},
            {"question": "Stadt?", "answers": ["Stadt"], "context": BERLIN, "lang": "xx"}]
    path = _jsonl(tmp_path / "mine.jsonl", rows)
    dev = _squad(tmp_path / "dev.json", [{"id": "d1", "question": "", "answers": [{"text": "Berlin"}]}])
    out = tmp_path / "out"
    with pytest.raises(XqaError) as e:
        build(OwnDataConfig(train=[str(path)], dev=[f"{dev}:de"], out=str(out), lang="de", negatives=0))
    message = str(e.value)
    assert message.startswith("6 problems in your QA data (nothing written)")
    for expected in (f"{path}:2: the question is empty",
                     f"{path}:3: answer 'Olaf' is not in its context",
                     f"{path}:4: field 'answers' is empty",
                     f"{path}:5: missing field 'context'",
                     f"{path}:6: field 'lang': unknown language code 'xx'",
                     f"{dev}:{_line_of(dev, 'd1')}: data[0].paragraphs[0].qas[0]: the question is empty"):
        assert expected in message
    assert not out.exists()


def test_a_line_that_is_not_json_and_an_id_used_twice_are_named(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"question": "Hauptstadt?", "answers": ["Berlin"], "context": BERLIN}) + "\n{oops\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path}:2: invalid JSON"):
        read_own(str(path), lang="de")
    _jsonl(path, [{"id": "a", "question": "Hauptstadt?", "answers": ["Berlin"], "context": BERLIN}] * 2)
    with pytest.raises(InputError, match=rf"{path}:2: duplicate question id 'a' \(first at {path}:1\)"):
        read_own(str(path), lang="de")
    with pytest.raises(XqaError) as e:   # all problems at once: the duplicate said once, not again as a clash
        build(OwnDataConfig(train=[f"{path}:de"], out=str(tmp_path / "out")))
    assert str(e.value).startswith("1 problem in your QA data") and str(e.value).count("'a'") == 1
    with pytest.raises(XqaError, match=rf"{tmp_path} is a folder; name the files in it"):
        read_own(str(tmp_path), lang="de")
    # the lines after a bad one are read too: every problem at once; a first line that is a
    # JSON list is a JSONL line that is no object, not a list document with "extra data"
    good = json.dumps({"question": "Hauptstadt?", "answers": ["Berlin"], "context": BERLIN})
    path.write_text(f"[1, 2]\n{good}\n{{oops\n" + json.dumps({"question": "Wer?", "answers": ["Olaf"],
                                                               "context": BERLIN}) + "\n", encoding="utf-8")
    with pytest.raises(XqaError) as e:
        build(OwnDataConfig(train=[f"{path}:de"], out=str(tmp_path / "out")))
    assert str(e.value).startswith("3 problems in your QA data")
    for said in (f"{path}:1: expected a JSON object, found a list", f"{path}:3: invalid JSON",
                 f"{path}:4: answer 'Olaf' is not in its context"):
        assert said in str(e.value)
    # a duplicate id and a later bad record: both said, in the file's line order
    _jsonl(path, [{"id": "a", "question": "Hauptstadt?", "answers": ["Berlin"], "context": BERLIN}] * 2
           + [{"id": "b", "question": "Wer?", "answers": ["Olaf"], "context": BERLIN}])
    with pytest.raises(XqaError) as e:
        build(OwnDataConfig(train=[f"{path}:de"], out=str(tmp_path / "out")))
    lines = str(e.value).splitlines()[1:]
    assert [line.strip().split(": ")[0] for line in lines] == [f"{path}:2", f"{path}:3"]
    assert "duplicate question id 'a'" in lines[0] and "answer 'Olaf' is not in its context" in lines[1]


def test_two_files_of_one_name_without_ids_get_ids_that_do_not_clash(tmp_path):
    row = {"question": "Hauptstadt?", "answers": ["Berlin"], "context": BERLIN}
    (tmp_path / "t").mkdir()
    (tmp_path / "d").mkdir()
    train, dev = _jsonl(tmp_path / "t" / "qa.jsonl", [row]), _jsonl(tmp_path / "d" / "qa.jsonl", [row])
    out = tmp_path / "out"
    build(OwnDataConfig(train=[f"{train}:de"], dev=[f"{dev}:de"], out=str(out), negatives=0, progress=False))
    ids = [json.loads(line)["id"] for name in ("train.jsonl", "dev.jsonl") for line in (out / name).open()]
    assert ids == [f"{tmp_path}/t/qa:1", f"{tmp_path}/d/qa:1"]
    alone = tmp_path / "alone"   # one file: its stem, as before
    build(OwnDataConfig(train=[f"{train}:de"], out=str(alone), negatives=0, progress=False))
    assert [json.loads(line)["id"] for line in (alone / "train.jsonl").open()] == ["qa:1"]


def test_a_spreadsheets_csv_or_tsv_is_read_by_its_header_and_rows_are_named_by_their_first_line(tmp_path):
    """Excel writes UTF-8 CSV with a byte-order mark; a quoted cell may span lines."""
    csv_file = tmp_path / "mine.csv"
    csv_file.write_bytes("\ufeffQuestion,Answer,Context,Lang,ID\n"
                         f"Hauptstadt?,Berlin,\"{BERLIN}\",de,\n"
                         "Wo?,Tokio,\"Er wohnt\nin Tokio.\",de,w1\n"
                         "\n"
                         f"Einwohner?,\"[\"\"3,7 Millionen\"\", \"\"etwa 3,7 Millionen\"\"]\",\"{BERLIN}\",,\n"
                         .encode("utf-8"))
    qs = read_own(str(csv_file), lang="de")
    assert [(q.id, q.answers, q.lang) for q in qs] == [
        ("mine:2", ["Berlin"], "de"), ("w1", ["Tokio"], "de"),
        ("mine:6", ["3,7 Millionen", "etwa 3,7 Millionen"], "de")]   # the line the row starts on
    assert qs[1].context == "Er wohnt\nin Tokio."
    semicolons = tmp_path / "excel-de.csv"   # German Excel's "CSV": ';' between cells, commas inside them
    semicolons.write_text(f"Frage;question;Answer;Context\nx;Einwohner?;3,7 Millionen;{BERLIN}\n", encoding="utf-8")
    [q] = read_own(f"{semicolons}:de")
    assert q.answers == ["3,7 Millionen"] and q.context == BERLIN
    tsv = tmp_path / "mine.tsv"
    tsv.write_text(f"question\tanswers\tcontext\tanswer_start\nStadt?\tStadt\t{BERLIN}\t{BERLIN.index('Stadt hat')}\n",
                   encoding="utf-8")
    [q] = read_own(f"{tsv}:de")
    assert q.starts == [BERLIN.index("Stadt hat")]

    workbook = tmp_path / "mine.xlsx"
    workbook.write_bytes(b"PK\x03\x04")
    with pytest.raises(XqaError, match="a spreadsheet workbook; save the sheet as CSV"):
        read_own(str(workbook), lang="de")
    for text, said in (("frage,answer,context\nx,y,z\n", r":1: the first row names no 'question' column"),
                       ("question,answer,answer,context\n", r":1: the first row names 'answer' twice"),
                       ("question,answer,context\nHauptstadt?,Berlin\n", r":2: 2 cells, where the first row names 3"),
                       (f"question,answer,context,answer_start\nH?,Berlin,\"{BERLIN}\",vorn\n",
                        r":2: column 'answer_start' should be an offset, found 'vorn'")):
        csv_file.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=rf"{csv_file}{said}"):
            read_own(str(csv_file), lang="de")


def _own_sets(tmp_path: Path) -> tuple[list[str], Path]:
    """Training files (a German SQuAD file named with its language, a JSONL file whose record
    names its own) and a dev file."""
    squad = _squad(tmp_path / "train.json", GOOD_DE)
    lines = _jsonl(tmp_path / "train.jsonl", [{"id": "t1", "question": "日本の首都はどこか。", "answers": ["東京"],
                                               "context": TOKYO, "title": "東京", "lang": "ja"}])
    dev = _jsonl(tmp_path / "dev.jsonl", [{"id": "d1", "question": "Welche Stadt ist die Hauptstadt?",
                                           "answers": ["Berlin"], "context": BERLIN, "lang": "de"}])
    return [f"{squad}:de", str(lines)], dev


def test_the_command_writes_the_span_readers_training_files(tmp_path):
    from reader.span.task import load_training_questions
    from xqa.io import read_passages

    train, dev = _own_sets(tmp_path)
    out = tmp_path / "data"
    done = subprocess.run([sys.executable, "-m", "xqa.cli", "data", "own", "--train", *train, "--dev", str(dev),
                           "--negatives", "0", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "3 training questions and 1 dev questions (de 3, ja 1 in all), 2 contexts" in done.stdout
    passages = {p.id: p for p in read_passages(out / "passages.jsonl")}
    assert sorted(p.text for p in passages.values()) == sorted([BERLIN, TOKYO])
    rows = load_training_questions(str(out / "train.jsonl"))
    assert [r["id"] for r in rows] == ["b1", "b2", "t1"]
    assert [r["lang"] for r in rows] == ["de", "de", "ja"]
    assert "answer_start did not point" not in done.stdout
    for r in rows:
        p = passages[r["positive_ids"][0]]
        assert [p.text[s: s + len(a)] for a, s in zip(r["answers"], r["answer_starts"])] == r["answers"]
    dev_rows = load_training_questions(str(out / "dev.jsonl"))
    assert dev_rows[0]["positive_ids"] == rows[0]["positive_ids"]    # one context, one passage
    # training files edited by hand: each question whose answer is not in its paragraph, or whose
    # paragraph is not in the passages, is named by file:line, all at once, before any model loads
    lines = (out / "train.jsonl").read_text(encoding="utf-8").splitlines()
    edited = [json.loads(x) for x in lines]
    edited[1]["answers"] = ["Olaf"]
    edited[2]["positive_ids"] = ["nowhere"]
    hand = _jsonl(tmp_path / "hand.jsonl", edited)
    with pytest.raises(XqaError) as e:
        load_training_questions(str(hand), passages=passages)
    assert str(e.value).startswith("2 of 3 training questions cannot be trained on")
    assert f"{hand}:2: none of its answers ('Olaf') is in its paragraph" in str(e.value)
    assert f"{hand}:3: its paragraph 'nowhere' is not in the passages file" in str(e.value)
    encoder = tmp_path / "encoder"   # looks like one: the data is refused before it would load
    encoder.mkdir()
    (encoder / "config.json").write_text(json.dumps({"model_type": "xlm-roberta"}))
    trained = subprocess.run([sys.executable, "-m", "xqa.cli", "train", "reader", "--family", "span", "--init",
                              str(encoder), "--train", str(hand), "--passages",
                              str(out / "passages.jsonl"), "--out", str(tmp_path / "run")],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert trained.returncode == 1 and f"{hand}:2: none of its answers" in trained.stderr, trained.stderr[-2000:]
    assert not (tmp_path / "run").exists()
    with pytest.raises(XqaError, match=r"train.json:1: invalid JSON .*; training data is JSONL, a question a "
                                       r"line: turn a SQuAD JSON file of your own into it with 'xqa data own'"):
        load_training_questions(train[0].rsplit(":", 1)[0], passages=passages)
    # a bad record: exit 1, one line per problem, no traceback
    bad = _jsonl(tmp_path / "bad.jsonl", [{"question": "Wer?", "answers": ["Olaf"], "context": BERLIN}])
    failed = subprocess.run([sys.executable, "-m", "xqa.cli", "data", "own", "--train", f"{bad}:de", "--out",
                             str(tmp_path / "bad")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1
    assert f"{bad}:1: answer 'Olaf' is not in its context" in failed.stderr
    assert "Traceback" not in failed.stderr


def _tiny_reader(converted_e5: Path):
    """A randomly initialised 2-layer BERT over multilingual-e5's tokenizer, as a span reader."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from reader.span.inference import SpanReader, SpanSettings
    from reader.span.model import SpanModel

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(str(converted_e5))
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=256, pad_token_id=1,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return SpanReader(SpanModel(BertModel(cfg, add_pooling_layer=False)), tok, SpanSettings(max_length=96),
                      base="test: random 2-layer")


def test_a_span_reader_continued_on_own_data_stops_on_time_resumes_and_loads_as_a_reader(
        converted_e5, tmp_path, capsys):
    import torch
    from safetensors.torch import load_file

    from xqa.pipeline import load_reader
    from xqa.records import Context, Question

    train, dev = _own_sets(tmp_path)
    data = tmp_path / "data"
    build(OwnDataConfig(train=train, dev=[str(dev)], out=str(data), negatives=0, progress=False))
    start = tmp_path / "start"
    _tiny_reader(converted_e5).save(start)
    out = tmp_path / "run"

    def train_reader(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "xqa.cli", "train", "reader", "--arch", "span", "--init",
                               str(start), "--train", str(data / "train.jsonl"), "--passages",
                               str(data / "passages.jsonl"), "--dev", str(data / "dev.jsonl"), "--out", str(out),
                               "--batch-size", "2", "--max-steps", "4", "--eval-every", "2", "--lr", "1e-3",
                               "--threads", "1", "--log-every", "1", "--save-every", "100", *extra],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)

    first = train_reader("--max-minutes", "0.0001")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "stopped after" in first.stdout
    assert json.loads((out / "checkpoint" / "trainer_state.json").read_text())["step"] == 1
    second = train_reader()
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resuming from" in second.stdout
    assert f"answer with it: xqa ask \"…\" --reader {out}" in second.stdout and "--reader" not in first.stdout
    kept = json.loads((out / "checkpoint" / "trainer_state.json").read_text())["best_step"]
    assert f"(step 4; kept: step {kept}, dev F1 " in second.stdout   # the step best/ holds, not the last
    assert json.loads((out / "checkpoint" / "trainer_state.json").read_text())["step"] == 4
    # continued from the given reader: its weights moved, its settings kept
    before = load_file(str(start / "encoder" / "model.safetensors"))
    after = load_file(str(out / "best" / "encoder" / "model.safetensors"))
    name = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(before[name], after[name])
    assert torch.equal(before["embeddings.word_embeddings.weight"], after["embeddings.word_embeddings.weight"])
    reader = load_reader(out)
    assert reader.family == "span" and reader.settings.max_length == 96
    q = Question("q", "Was ist die Hauptstadt Deutschlands?", "de")
    ctx = Context(id="p", title="Berlin", text=BERLIN, lang="de", score=0.0, source="gold")
    (output,) = reader.read([q], [[ctx]], n_best=1)
    assert output.text and output.text in BERLIN
    # options the continued reader cannot take are said, not ignored; its window can be changed
    from xqa.cli import main

    common = ["train", "reader", "--arch", "span", "--init", str(start), "--train", str(data / "train.jsonl"),
              "--passages", str(data / "passages.jsonl"), "--batch-size", "2", "--max-steps", "1",
              "--threads", "1"]
    for extra, said in ((["--layers", "1"], "--layers 1: --init "),
                        (["--stride", "48"], "--stride 48: two windows of 96 tokens"),
                        (["--max-length", "64", "--stride", "40"], "--stride 40: two windows of 64 tokens")):
        capsys.readouterr()
        assert main([*common, "--out", str(tmp_path / "refused"), *extra]) == 1
        assert said in capsys.readouterr().err
        assert not (tmp_path / "refused").exists()
    common[5] = str(converted_e5)
    assert main([*common, "--out", str(tmp_path / "refused"), "--layers", "20"]) == 1
    assert "has 12 layers; keep at most 12 (0: all)" in capsys.readouterr().err
    common[5] = str(start)
    assert main([*common, "--out", str(tmp_path / "wider"), "--max-length", "128", "--stride", "32",
                 "--max-answer-len", "10"]) == 0
    wider = load_reader(tmp_path / "wider")
    assert (wider.settings.max_length, wider.settings.stride, wider.settings.max_answer_len) == (128, 32, 10)
    # the stride is recorded as read with: the default for 128 tokens (32) is the same run
    recorded = json.loads((tmp_path / "wider" / "config.json").read_text())["settings"]
    assert recorded["stride"] == 32 and recorded["max_answer_len"] == 10
    capsys.readouterr()
    assert main([*common, "--out", str(tmp_path / "wider"), "--max-length", "128", "--max-answer-len", "10"]) == 0
    assert "already in" in capsys.readouterr().out


def test_a_span_reader_started_from_the_encoder_is_the_same_each_run_with_one_seed(converted_e5, tmp_path,
                                                                                     capsys):
    """The span heads are new weights: drawn from --seed, so two runs give the same reader, and
    options of another family, or that a kit holds, are refused rather than dropped."""
    from safetensors.torch import load_file

    from xqa.cli import main

    train, dev = _own_sets(tmp_path)
    data = tmp_path / "data"
    build(OwnDataConfig(train=train, out=str(data), negatives=0, progress=False))
    common = ["train", "reader", "--family", "span", "--init", str(converted_e5), "--layers", "1",
              "--max-length", "64", "--train", str(data / "train.jsonl"), "--passages",
              str(data / "passages.jsonl"), "--batch-size", "1", "--max-steps", "1", "--threads", "1"]
    heads = []
    for name in ("a", "b"):
        assert main([*common, "--out", str(tmp_path / name)]) == 0
        heads.append(load_file(str(tmp_path / name / "best" / "heads.safetensors")))
    assert heads[0].keys() == heads[1].keys()
    assert all(torch_equal(heads[0][k], heads[1][k]) for k in heads[0])
    for extra, said in ((["--n-context", "3"], "--n-context: not an option of --family span"),
                        (["--kit", str(tmp_path), "--dev", "d.jsonl"], "--dev does not go with it"),
                        (["--kit", str(tmp_path), "--max-answer-len", "5"], "--max-answer-len does not go with it")):
        capsys.readouterr()
        args = ["train", "reader", "--family", "span", "--out", str(tmp_path / "refused"), *extra]
        assert main(args) == 1
        assert said in capsys.readouterr().err, extra


def torch_equal(a, b) -> bool:
    import torch

    return torch.equal(a, b)


def test_a_packed_reader_given_to_init_says_to_unpack_it_first(tmp_path):
    train, dev = _own_sets(tmp_path)
    data = tmp_path / "data"
    build(OwnDataConfig(train=train, out=str(data), negatives=0, progress=False))
    done = subprocess.run([sys.executable, "-m", "xqa.cli", "train", "reader", "--arch", "span", "--init",
                           str(ROOT / "xqa" / "models" / "span-reader"), "--train", str(data / "train.jsonl"),
                           "--passages", str(data / "passages.jsonl"), "--out", str(tmp_path / "run")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "is a packed reader" in done.stderr and "xqa reader unpack" in done.stderr


def test_the_split_by_article_shares_no_article_and_takes_the_asked_numbers(tmp_path):
    articles = [{"title": f"a{i}", "paragraphs": [{"context": f"Text {i} Berlin.", "qas": [
        {"id": f"{i}-{j}", "question": f"Q{j}?", "answers": [{"text": "Berlin", "answer_start": len(f"Text {i} ")}]}
        for j in range(3)]}]} for i in range(10)]
    src = tmp_path / "set.json"
    src.write_text(json.dumps({"data": articles}), encoding="utf-8")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "split_by_article.py"), str(src), "--out",
                           str(tmp_path / "split"), "--train", "8", "--dev", "4"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr

    def titles_and_ids(name: str) -> tuple[set[str], list[str]]:
        data = json.loads((tmp_path / "split" / name).read_text(encoding="utf-8"))["data"]
        return {a["title"] for a in data}, [qa["id"] for a in data for p in a["paragraphs"] for qa in p["qas"]]

    (train_t, train_q), (dev_t, dev_q), (held_t, held_q) = map(titles_and_ids, ("train.json", "dev.json", "held.json"))
    assert len(train_q) == 8 and len(dev_q) == 4 and len(held_q) == 15 and not set(train_q) & set(dev_q)
    assert not (train_t | dev_t) & held_t and len(held_t) == 5
    assert len(read_own(f"{tmp_path / 'split' / 'train.json'}:de")) == 8    # the layout xqa data own reads


def test_bm25_negatives_are_other_contexts_of_the_language_without_the_answer(tmp_path):
    contexts = [BERLIN, "Hamburg ist eine Hafenstadt. Die Stadt hat etwa 1,9 Millionen Einwohner.",
                "München ist die Hauptstadt Bayerns. Berlin liegt weit im Norden.",
                "Köln liegt am Rhein. Die Stadt hat etwa eine Million Einwohner."]
    rows = [{"id": f"q{i}", "question": q, "answers": [a], "context": c} for i, (q, a, c) in enumerate([
        ("Wie viele Einwohner hat die Hauptstadt?", "3,7 Millionen", contexts[0]),
        ("Wie viele Einwohner hat die Hafenstadt?", "1,9 Millionen", contexts[1]),
        ("Was ist die Hauptstadt Bayerns?", "München", contexts[2]),
        ("Woran liegt die Stadt?", "Rhein", contexts[3])])]
    out = tmp_path / "data"
    s = build(OwnDataConfig(train=[str(_jsonl(tmp_path / "mine.jsonl", rows))], lang="de", out=str(out),
                            negatives=2, progress=False))
    passages = {json.loads(line)["id"]: json.loads(line)["text"] for line in (out / "passages.jsonl").open()}
    train = [json.loads(line) for line in (out / "train.jsonl").open()]
    assert s["negatives"] == sum(len(r["negative_ids"]) for r in train) > 0
    for r in train:
        assert len(r["negative_ids"]) <= 2 and r["positive_ids"][0] not in r["negative_ids"]
        assert not any(r["answers"][0] in passages[n] for n in r["negative_ids"])
    assert (out / "bm25").is_dir() and not (out / "dev.jsonl").exists()
    # the same folder again with other contexts: the index of the first is not searched for them
    other = [{"id": f"o{i}", "question": q, "answers": [a], "context": c} for i, (q, a, c) in enumerate([
        ("Wie lang ist der Rhein?", "1233 Kilometer", "Der Rhein ist 1233 Kilometer lang. Er fließt durch Köln."),
        ("Wo entspringt die Donau?", "im Schwarzwald", "Die Donau entspringt im Schwarzwald und fließt nach Osten."),
        ("Wohin fließt die Elbe?", "in die Nordsee", "Die Elbe fließt in die Nordsee. Sie fließt durch Hamburg."),
        ("Wie lang ist die Weser?", "452 Kilometer", "Die Weser ist 452 Kilometer lang und fließt nach Bremen.")])]
    again = build(OwnDataConfig(train=[str(_jsonl(tmp_path / "other.jsonl", other))], lang="de", out=str(out),
                                negatives=2, progress=False))
    assert again["negatives"] > 0   # (the old index's hits name none of these passages: none were kept)
