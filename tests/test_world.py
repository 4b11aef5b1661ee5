"""The embedded world: layout, cross-lingual share, entity-disjoint splits,
answers in their gold passages, determinism, phrasing variety, the CLI."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from xqa.cli import main
from xqa.errors import XqaError
from xqa.records import Passage, Question
from xqa.world import LANGS, RELATIONS, SIZES, build_world, generate
from xqa.world.templates import TEMPLATES, bn_genitive, ko_particle, ko_ro, render

FILES = ("passages.jsonl", "train.jsonl", "dev.jsonl", "test.jsonl", "labels.jsonl")
QUESTION_KEYS = {"id", "question", "answers", "answers_en", "lang", "crosslingual", "entity", "relation", "positive_ids"}


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world") / "small"
    stats = build_world(out, size="small", seed=0)
    assert stats["built"] is True
    return out


@pytest.fixture(scope="module")
def small():
    return generate("small", seed=0)


@pytest.fixture(scope="module")
def files(small_dir):
    return {name: _read_jsonl(small_dir / name) for name in FILES}


def test_record_layout(files, small_dir):
    passages = files["passages.jsonl"]
    ids = [p["id"] for p in passages]
    assert len(ids) == len(set(ids))
    for p in passages:
        assert set(p) == {"id", "title", "text", "lang"}
        assert p["lang"] in LANGS and p["title"] and p["text"]
        assert p["id"].startswith(p["lang"] + "-")
        Passage(**p)  # round-trips through the shared record
    known = set(ids)
    for split in ("train", "dev", "test"):
        qs = files[f"{split}.jsonl"]
        assert len({q["id"] for q in qs}) == len(qs)
        for q in qs:
            assert set(q) == QUESTION_KEYS
            assert q["id"].startswith(split + "-")
            assert q["lang"] in LANGS and q["relation"] in RELATIONS
            assert isinstance(q["crosslingual"], bool)
            assert q["answers"] and all(isinstance(a, str) and a for a in q["answers"])
            assert q["answers_en"] and all(isinstance(a, str) and a for a in q["answers_en"])
            assert q["positive_ids"] and set(q["positive_ids"]) <= known
            rec = Question(id=q["id"], question=q["question"], lang=q["lang"], answers=tuple(q["answers"]),
                           answers_en=tuple(q["answers_en"]))
            assert rec.to_dict()["answers"] == q["answers"]
    cfg = json.loads((small_dir / "config.json").read_text(encoding="utf-8"))
    assert cfg["kind"] == "world" and cfg["seed"] == 0 and cfg["languages"] == list(LANGS)
    assert cfg["counts"]["passages"] == len(passages)
    assert cfg["counts"]["train"] == len(files["train.jsonl"])


def test_sizes_match_the_spec(files):
    spec = SIZES["small"]
    assert 250 <= len(files["passages.jsonl"]) <= 700
    assert len(files["train.jsonl"]) == spec.n_train
    assert len(files["dev.jsonl"]) == spec.n_dev and len(files["test.jsonl"]) == spec.n_test


def test_default_size_is_large_enough():
    gen = generate("default", seed=0)
    assert len(gen.passages) >= 3000
    assert {s: len(q) for s, q in gen.questions.items()} == {"train": 20000, "dev": 1000, "test": 1000}
    for split, qs in gen.questions.items():
        assert sum(q["crosslingual"] for q in qs) / len(qs) >= 0.3, split


def test_crosslingual_share_and_flag(files):
    lang_of = {p["id"]: p["lang"] for p in files["passages.jsonl"]}
    for split in ("train", "dev", "test"):
        qs = files[f"{split}.jsonl"]
        share = sum(q["crosslingual"] for q in qs) / len(qs)
        assert share >= 0.3, (split, share)
        assert share < 1.0, split  # monolingual questions exist too
        for q in qs:
            # cross-lingual means: no gold passage in the question's language
            assert q["crosslingual"] == all(lang_of[p] != q["lang"] for p in q["positive_ids"]), q["id"]


def test_splits_are_entity_disjoint(files):
    subjects = {s: {q["entity"] for q in files[f"{s}.jsonl"]} for s in ("train", "dev", "test")}
    assert subjects["train"] and subjects["dev"] and subjects["test"]
    assert not subjects["train"] & subjects["dev"]
    assert not subjects["train"] & subjects["test"]
    assert not subjects["dev"] & subjects["test"]


def test_held_out_splits_cover_several_entity_kinds(files):
    for split in ("dev", "test"):
        kinds = {q["entity"].split("/")[0] for q in files[f"{split}.jsonl"]}
        assert {"person", "org"} <= kinds and len(kinds) >= 4, (split, kinds)


def test_answers_are_the_facts_and_occur_in_gold_passages(small):
    """Recompute each answer from the entity model and find it in every gold passage."""
    world = small.world
    by_id = {p["id"]: p for p in small.passages}
    for qs in small.questions.values():
        for q in qs:
            ent = world.entities[q["entity"]]
            assert ent.kind == RELATIONS[q["relation"]][0]
            value = ent.facts[q["relation"]]
            gender = ent.gender or "m"
            assert q["answers"] == [world.surface(value, q["lang"], gender)]
            assert q["answers_en"] == [world.surface(value, "en", gender)]
            assert ent.names[q["lang"]] in q["question"]
            about = False
            for pid in q["positive_ids"]:
                p = by_id[pid]
                assert world.surface(value, p["lang"], gender) in p["text"], (q["id"], pid)
                about |= small.passage_subject[pid] == q["entity"]
                if p["lang"] == q["lang"]:
                    assert q["answers"][0] in p["text"]
                if p["lang"] == "en":
                    assert q["answers_en"][0] in p["text"]
            assert about, f"{q['id']}: no gold passage is about {q['entity']}"


def test_positive_ids_are_complete(small):
    """A passage about the entity that states the fact must be listed as a positive (no false negatives)."""
    world = small.world
    positives = {(q["entity"], q["relation"]): set(q["positive_ids"]) for qs in small.questions.values() for q in qs}
    checked = 0
    for p in small.passages:
        ent = world.entities[small.passage_subject[p["id"]]]
        for rel, value in ent.facts.items():
            if (ent.id, rel) not in positives or value.kind != "number":
                continue
            # every phrasing of a numeric fact writes the number next to the subject's name
            stated = any(render(t, p["lang"], world.in_text(ent.id, p["lang"]), str(value.ref), ent.gender or "m")
                         in p["text"]
                         for t in TEMPLATES[p["lang"]][rel][0])
            assert stated == (p["id"] in positives[(ent.id, rel)]), (p["id"], rel)
            checked += 1
    assert checked > 100


def test_real_places_are_consistent(small):
    world = small.world
    for e in world.entities.values():
        if e.kind == "country":
            capital = world.entities[str(e.facts["capital"].ref)]
            assert capital.facts["city_country"].ref == e.id, e.id
        assert set(e.names) == set(LANGS) and all(e.names.values()), e.id
    names = world.entities["country/japan"].names
    assert (names["ja"], names["ko"], names["ru"]) == ("日本", "일본", "Япония")
    assert world.entities["city/tokyo"].names["te"] == "టోక్యో"
    for lang in LANGS:  # one name, one entity, in every language
        seen = [e.names[lang] for e in world.entities.values()]
        assert len(seen) == len(set(seen)), lang


def test_synthetic_names_are_transliterations(small):
    person = next(e for e in small.world.entities.values() if e.kind == "person")
    n = person.names
    assert n["en"] == n["es"] == n["fi"] and n["en"].isascii()
    assert "・" in n["ja"] and "·" in n["zh"]
    assert all("\u0400" <= ch <= "\u04ff" for ch in n["ru"] if ch != " ")
    assert all("\uac00" <= ch <= "\ud7a3" for ch in n["ko"] if ch != " ")
    assert all("\u0c00" <= ch <= "\u0c7f" for ch in n["te"] if ch != " ")


def test_facts_are_consistent(small):
    world = small.world
    for e in world.entities.values():
        if e.kind == "person" and "employer" in e.facts:
            founded = int(world.entities[str(e.facts["employer"].ref)].facts["founded"].ref)
            assert int(e.facts["birth_year"].ref) >= founded - 25
    answers = defaultdict(set)
    for qs in small.questions.values():
        for q in qs:
            answers[(q["entity"], q["relation"], q["lang"])].add(tuple(q["answers"]))
    assert all(len(v) == 1 for v in answers.values())


def test_every_language_everywhere(files):
    assert {p["lang"] for p in files["passages.jsonl"]} == set(LANGS)
    for split in ("train", "dev", "test"):
        assert {q["lang"] for q in files[f"{split}.jsonl"]} == set(LANGS), split


def test_three_phrasings_per_relation_and_language():
    for lang in LANGS:
        assert set(TEMPLATES[lang]) == set(RELATIONS), lang
        for rel in RELATIONS:
            passages, questions = TEMPLATES[lang][rel]
            for group in (passages, questions):
                rendered = {render(t, lang, "Karimo", "1950") for t in group}
                assert len(rendered) >= 3, (lang, rel)
            assert all("{s}" in t or "{s_" in t for t in passages + questions), (lang, rel)
            assert all("{o" in t for t in passages), (lang, rel)


def test_generated_questions_use_several_phrasings(small):
    shapes = defaultdict(set)
    counts = defaultdict(int)
    for split, qs in small.questions.items():
        for q in qs:
            name = small.world.entities[q["entity"]].names[q["lang"]]
            shapes[(split, q["lang"], q["relation"])].add(q["question"].replace(name, "<S>"))
            counts[(split, q["lang"], q["relation"])] += 1
    busy = [k for k, n in counts.items() if n >= 3]
    assert len({k[1:] for k in busy}) > 80
    for k in busy:
        assert len(shapes[k]) >= 3, k


def test_generated_passages_use_several_phrasings(small):
    """Find which phrasing states each fact; every busy (language, relation) cell uses all three."""
    world = small.world
    used = defaultdict(set)
    uses = defaultdict(int)
    for p in small.passages:
        lang = p["lang"]
        for ent in world.entities.values():
            name = world.in_text(ent.id, lang)
            if name not in p["text"]:
                continue
            gender = ent.gender or "m"
            for rel, value in ent.facts.items():
                obj = world.in_text(value, lang, gender)
                for i, t in enumerate(TEMPLATES[lang][rel][0]):
                    if render(t, lang, name, obj, gender) in p["text"]:
                        used[(lang, rel)].add(i)
                        uses[(lang, rel)] += 1
    busy = [k for k, n in uses.items() if n >= 6]
    assert len(busy) > 40
    for k in busy:
        assert len(used[k]) >= 3, k


def test_morphology_helpers():
    assert ko_particle("서울", "은", "는") == "서울은"
    assert ko_particle("도쿄", "은", "는") == "도쿄는"
    assert ko_particle("일본", "을", "를") == "일본을"
    assert ko_ro("서울") == "서울로" and ko_ro("일본") == "일본으로" and ko_ro("의사") == "의사로"
    assert bn_genitive("জাপান") == "জাপানের" and bn_genitive("রাশিয়া") == "রাশিয়ার"
    assert render("{s} [родился|родилась] в {o} году.", "ru", "Мика", "1950", "f") == "Мика родилась в 1950 году."
    assert render("{s} is {o_a}.", "en", "Kari", "engineer") == "Kari is an engineer."


def test_deterministic_and_seed_sensitive(small_dir, tmp_path):
    again = tmp_path / "again"
    build_world(again, size="small", seed=0)
    for name in FILES + ("config.json",):
        assert (again / name).read_bytes() == (small_dir / name).read_bytes(), name
    other = tmp_path / "other"
    build_world(other, size="small", seed=1)
    assert (other / "passages.jsonl").read_bytes() != (small_dir / "passages.jsonl").read_bytes()
    assert (other / "test.jsonl").read_bytes() != (small_dir / "test.jsonl").read_bytes()


def test_complete_world_is_kept_unless_overwrite(small_dir, tmp_path):
    out = tmp_path / "w"
    first = build_world(out, size="small", seed=3)
    marker = out / "passages.jsonl"
    before = marker.stat().st_mtime_ns
    kept = build_world(out, size="small", seed=4)
    assert kept["built"] is False and kept["seed"] == 3 and marker.stat().st_mtime_ns == before
    assert kept["passages"] == first["passages"]
    rebuilt = build_world(out, size="small", seed=4, overwrite=True)
    assert rebuilt["built"] is True and rebuilt["seed"] == 4
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("x")
    with pytest.raises(XqaError, match="not a complete world"):
        build_world(junk, size="small")
    with pytest.raises(XqaError, match="unknown world size"):
        build_world(tmp_path / "x", size="huge")


def test_cli_writes_the_four_files(tmp_path, capsys):
    out = tmp_path / "cli_world"
    assert main(["world", "build", "--out", str(out), "--size", "small", "--seed", "2"]) == 0
    for name in FILES + ("config.json",):
        assert (out / name).is_file(), name
    printed = capsys.readouterr().out
    assert "cross-lingual share" in printed and "passages" in printed
    assert main(["world", "build", "--out", str(out), "--size", "small"]) == 0
    assert "already a complete world" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["seed"] == 2


def test_identical_across_processes_with_different_hash_seeds(small_dir, tmp_path):
    """No set or dict-of-str ordering leaks into the files: other hash seeds give the same bytes."""
    import os
    import subprocess
    import sys

    out = tmp_path / "hashed"
    code = f"from xqa.world import build_world; build_world({str(out)!r}, size='small', seed=0)"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    for name in FILES:
        assert (out / name).read_bytes() == (small_dir / name).read_bytes(), name
