"""xqa report fid: the FiD-against-span tables from the files scripts/fid_report.sh writes."""
import json

import pytest

from xqa.errors import XqaError
from xqa.cli import main
from xqa.tools.lib.fid_report import report


def _gold(f1s, n=3):
    table = [{"set": f"mlqa {l}-{l}", "question_lang": l, "context_lang": l, "n": n, "em": f / 2, "f1": f,
              "script_em": f / 2, "script_f1": f + 0.01} for l, f in f1s.items()]
    mean = sum(f1s.values()) / len(f1s)
    return {"table": table, "summary": {"mlqa_same_language_f1": mean, "mlqa_same_language_script_f1": mean + 0.01,
                                        "questions": n * len(f1s)}}


def _eval(f1s):
    per = {l: {"lang": l, "n": 2, "em": f / 2, "f1": f, "n_missing": 0} for l, f in f1s.items()}
    return {"end_to_end": {"mode": "official", "n": 2 * len(f1s),
                           "macro": {"em": sum(f1s.values()) / len(f1s) / 2, "f1": sum(f1s.values()) / len(f1s)},
                           "per_language": per}}


def _write(folder, name, obj):
    (folder / name).write_text(json.dumps(obj), encoding="utf-8")


def test_the_tables_put_both_readers_side_by_side_and_name_what_is_missing(tmp_path):
    _write(tmp_path, "gold-span.json", _gold({"de": 0.5, "en": 0.75}))
    _write(tmp_path, "gold-fid.json", _gold({"de": 0.25, "en": 0.5}))
    _write(tmp_path, "corpus-span-5.eval.json", _eval({"de": 40.0, "en": 60.0}))
    _write(tmp_path, "corpus-fid-10.eval.json", _eval({"de": 45.0, "en": 65.0}))
    _write(tmp_path, "fusion.json", {"beta": 0.5, "gamma": 1.25, "miss": 0.05, "dev_f1": 0.5, "n_context": 10})
    _write(tmp_path, "bench-fid.json", {"threads": 2, "rows": [
        {"precision": "int8", "passages": 10, "questions": 20, "p50_s": 0.7786, "p95_s": 0.8434}]})
    text = report(tmp_path, "fid", (10, 20))
    assert "| mlqa de-de | 3 | 0.500 | 0.250 | 0.510 | 0.260 |" in text
    assert "| **MLQA same language, mean** | 6 | 0.625 | 0.375 | 0.635 | 0.385 |" in text
    assert "| span, 5 | 4 | 25.0 | 50.0 | 40.0 | 60.0 |" in text
    assert "| fid, 10 | 4 | 27.5 | 55.0 | 45.0 | 65.0 |" in text
    assert "| int8 | 10 | 20 | 0.779 | 0.843 |" in text
    assert "reading 10 passages: beta 0.5, gamma 1.25, miss 0.05; tune F1 0.500" in text
    assert "Not there (left out): corpus-fid-20.eval.json, mlqa-span-5.eval.json" in text
    assert "## End to end: the MLQA pool" not in text          # none of its files


def test_gold_runs_of_different_questions_are_refused(tmp_path):
    _write(tmp_path, "gold-span.json", _gold({"de": 0.5}, n=3))
    _write(tmp_path, "gold-fid.json", _gold({"de": 0.5}, n=5))
    with pytest.raises(XqaError, match="3 questions for the span reader and 5 for fid"):
        report(tmp_path)


def test_a_broken_file_is_named_with_its_line(tmp_path, capsys):
    (tmp_path / "fusion.json").write_text('{"beta": 1,\n "gamma": }\n')
    assert main(["report", "fid", str(tmp_path)]) == 1
    assert "fusion.json:2: not JSON" in capsys.readouterr().err


def test_the_command_writes_the_tables_it_prints(tmp_path, capsys):
    _write(tmp_path, "bench-fid.json", {"threads": 2, "rows": [
        {"precision": "fp32", "passages": 5, "questions": 4, "p50_s": 0.5, "p95_s": 0.75}]})
    out = tmp_path / "report.md"
    assert main(["report", "fid", str(tmp_path), "--passages", "5", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| fp32 | 5 | 4 | 0.500 | 0.750 |" in printed
    assert out.read_text(encoding="utf-8") == printed
