"""Generate the embedded world: passages, entity-split questions, stats, files.

Shape of the world (why it is built this way):

- Each described entity gets one passage in each of a few languages (its
  "home" language is likely among them, English often is). A passage states a
  random subset of the entity's facts plus *distractor* facts about related
  entities (a person's employer's founding year next to their birth year, a
  country's capital's population next to its own), so a reader must pick the
  right fact, not the only number.
- Every stated fact is indexed: ``positive_ids`` of a question are all
  passages (about any entity) whose sentences state the asked
  (entity, relation) fact; the answer string occurs verbatim in each.
- A question in language L is *cross-lingual* when no positive passage is in
  L (the XOR-TyDi case): the reader must read another language and answer in
  L — by translating an entity name from a closed, trained-on vocabulary
  (countries, cities, continents, occupations, companies) or copying digits.
- Splits are by subject entity: the subject of a dev/test question is never
  the subject of a train question (objects, e.g. a capital, may appear anywhere).

Deterministic: one ``random.Random`` seeded from ``seed`` drives everything and
no set is ever iterated, so two builds are byte-identical.
"""
from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xqa.world.entities import (
    LANGS,
    RELATIONS,
    SUBJECT_KINDS,
    Entity,
    World,
    build_entities,
)
from xqa.world.labels import answer_labels
from xqa.world.templates import (
    join_sentences,
    passage_templates,
    question_templates,
    render,
)

SPLITS = ("train", "dev", "test")
FILES = ("passages.jsonl", "train.jsonl", "dev.jsonl", "test.jsonl", "labels.jsonl")
GENERATOR_VERSION = 1


@dataclass(frozen=True)
class WorldSize:
    """How big a world to make. Question counts are exact; passages follow from entities."""

    n_persons: int
    n_orgs: int
    real_fraction: float  # share of real places that get passages (and questions)
    n_train: int
    n_dev: int
    n_test: int
    heldout_fraction: float = 0.08  # share of subject entities per kind in dev, and again in test
    crosslingual_target: float = 0.5  # aimed-at share of cross-lingual questions (≥ when mono runs out)
    fact_keep: float = 0.75  # chance that a passage states a given fact of its entity


SIZES: dict[str, WorldSize] = {
    "default": WorldSize(n_persons=900, n_orgs=320, real_fraction=1.0, n_train=20000, n_dev=1000, n_test=1000),
    "small": WorldSize(n_persons=80, n_orgs=30, real_fraction=0.3, n_train=800, n_dev=120, n_test=120,
                       heldout_fraction=0.12),
}

# how many languages describe an entity: real places are famous, synthetic ones are local
_REAL_LANG_COUNTS = (2, 3, 3, 4, 4, 5, 6)
_SYNTH_LANG_COUNTS = (1, 2, 2, 3, 3)


def _describe_langs(rng: random.Random, ent: Entity) -> list[str]:
    real = ent.kind not in ("person", "org")
    n = rng.choice(_REAL_LANG_COUNTS if real else _SYNTH_LANG_COUNTS)
    chosen: list[str] = []
    if ent.home and rng.random() < 0.9:
        chosen.append(rng.choice(ent.home))
    if "en" not in chosen and rng.random() < (0.85 if real else 0.45):
        chosen.append("en")
    rest = [lg for lg in LANGS if lg not in chosen]
    rng.shuffle(rest)
    chosen += rest[: max(0, n - len(chosen))]
    return [lg for lg in LANGS if lg in chosen]


class _Related:
    """True facts about entities related to a subject: the distractor pool."""

    def __init__(self, world: World):
        self.world = world
        self.by_country: dict[str, list[str]] = defaultdict(list)
        for e in world.entities.values():
            for rel in ("city_country", "river_country", "mountain_country"):
                if rel in e.facts:
                    self.by_country[str(e.facts[rel].ref)].append(e.id)

    def facts(self, ent: Entity) -> list[tuple[str, str]]:
        ents = self.world.entities
        out: list[tuple[str, str]] = []

        def country_facts(cid: str, skip: str = "") -> None:
            out.extend([(cid, "capital"), (cid, "continent"), (cid, "country_population")])
            out.extend((x, next(r for r in ("city_country", "river_country", "mountain_country") if r in ents[x].facts))
                       for x in self.by_country[cid] if x != skip)

        def city_facts(city: str) -> None:
            out.extend([(city, "city_country"), (city, "city_population")])

        if ent.kind == "country":
            capital = str(ent.facts["capital"].ref)
            city_facts(capital)
            out.extend((x, next(r for r in ("city_country", "river_country", "mountain_country") if r in ents[x].facts))
                       for x in self.by_country[ent.id] if x != capital)
        elif ent.kind in ("city", "river", "mountain"):
            country = str(ent.facts[f"{ent.kind}_country"].ref)
            country_facts(country, skip=ent.id)
        elif ent.kind == "person":
            city_facts(str(ent.facts["birthplace"].ref))
            if "employer" in ent.facts:
                org = str(ent.facts["employer"].ref)
                out.extend([(org, "founded"), (org, "headquarters")])
        elif ent.kind == "org":
            city = str(ent.facts["headquarters"].ref)
            city_facts(city)
            out.append((str(ents[city].facts["city_country"].ref), "capital"))
        return [(e, r) for e, r in out if e != ent.id]


class _Rotation:
    """Round-robin over a cell's phrasings from a random start, so every cell
    (language, relation) with at least n uses shows n distinct phrasings."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.next: dict[tuple[str, str], int] = {}

    def pick(self, lang: str, rel: str, n: int) -> int:
        key = (lang, rel)
        if key not in self.next:
            self.next[key] = self.rng.randrange(n)
        t = self.next[key] % n
        self.next[key] += 1
        return t


def _sentence(world: World, rotation: _Rotation, lang: str, eid: str, rel: str) -> str:
    ent = world.entities[eid]
    obj = world.in_text(ent.facts[rel], lang, ent.gender or "m")
    temps = passage_templates(lang, rel)
    return render(temps[rotation.pick(lang, rel, len(temps))], lang, world.in_text(eid, lang), obj, ent.gender or "m")


def make_passages(world: World, rng: random.Random, subjects: list[Entity], fact_keep: float,
                  progress: bool = False) -> tuple[list[dict[str, Any]], dict[tuple[str, str], list[str]]]:
    """One passage per (subject, described language); returns passages and the fact index.

    The fact index maps (entity id, relation) to the ids of every passage that
    states that fact, in passage order.
    """
    related = _Related(world)
    plan: list[tuple[Entity, str, list[str]]] = []
    for ent in subjects:
        langs = _describe_langs(rng, ent)
        rels = list(ent.facts)
        chosen = {lg: [r for r in rels if rng.random() < fact_keep] for lg in langs}
        for lg in langs:
            if not chosen[lg]:
                chosen[lg].append(rng.choice(rels))
        for r in rels:  # every fact is stated somewhere about its subject
            if not any(r in chosen[lg] for lg in langs):
                chosen[rng.choice(langs)].append(r)
        plan.extend((ent, lg, [r for r in rels if r in chosen[lg]]) for lg in langs)

    passages: list[dict[str, Any]] = []
    index: dict[tuple[str, str], list[str]] = defaultdict(list)
    counters: Counter[str] = Counter()
    rotation = _Rotation(rng)
    items = plan
    if progress:
        from tqdm import tqdm

        items = tqdm(plan, desc="passages", unit="passage")
    for ent, lang, rels in items:
        pool = related.facts(ent)
        n_dis = min(len(pool), max(rng.randint(1, 3), 3 - len(rels)))
        distractors = rng.sample(pool, n_dis) if n_dis else []
        stated = [(ent.id, r) for r in rels]
        body = stated[1:] + [d for d in distractors if d not in stated]
        rng.shuffle(body)
        order = stated[:1] + body
        text = join_sentences(lang, [_sentence(world, rotation, lang, e, r) for e, r in order])
        counters[lang] += 1
        pid = f"{lang}-{counters[lang]:05d}"
        passages.append({"id": pid, "title": ent.names[lang], "text": text, "lang": lang})
        for fact in order:
            if pid not in index[fact]:
                index[fact].append(pid)
    return passages, dict(index)


def split_entities(rng: random.Random, subjects: list[Entity], heldout_fraction: float) -> dict[str, list[str]]:
    """Assign each subject entity to one split, stratified by kind."""
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for kind in SUBJECT_KINDS:
        ids = sorted(e.id for e in subjects if e.kind == kind)
        rng.shuffle(ids)
        k = round(heldout_fraction * len(ids))
        if len(ids) >= 5:
            k = max(k, 1)
        out["dev"] += ids[:k]
        out["test"] += ids[k:2 * k]
        out["train"] += ids[2 * k:]
    return {s: sorted(v) for s, v in out.items()}


def make_questions(world: World, rng: random.Random, entity_ids: list[str], index: dict[tuple[str, str], list[str]],
                   n: int, split: str, crosslingual_target: float) -> list[dict[str, Any]]:
    """``n`` questions about ``entity_ids`` (subjects), one per (entity, relation, language) where possible."""
    lang_of = {pid: pid.split("-", 1)[0] for pids in index.values() for pid in pids}
    mono: list[tuple[str, str, str]] = []
    cross: list[tuple[str, str, str]] = []
    for eid in entity_ids:
        for rel in world.entities[eid].facts:
            pids = index.get((eid, rel), [])
            if not pids:
                continue
            have = {lang_of[p] for p in pids}
            for lang in LANGS:
                (mono if lang in have else cross).append((eid, rel, lang))
    rng.shuffle(mono)
    rng.shuffle(cross)
    total = len(mono) + len(cross)
    if total == 0:
        raise ValueError(f"no {split} questions can be asked: no stated facts for its entities")
    n_cross = min(len(cross), max(round(crosslingual_target * n), n - len(mono)))
    n_mono = min(len(mono), n - n_cross)
    chosen = [(c, False) for c in mono[:n_mono]] + [(c, True) for c in cross[:n_cross]]
    # not enough distinct (entity, relation, language) triples: ask some again in another phrasing
    base = list(chosen)
    while len(chosen) < n:
        chosen.append(base[(len(chosen) - len(base)) % len(base)])
    rng.shuffle(chosen)
    rotation = _Rotation(rng)
    out = []
    for i, ((eid, rel, lang), is_cross) in enumerate(chosen):
        ent = world.entities[eid]
        temps = question_templates(lang, rel)
        t = rotation.pick(lang, rel, len(temps))
        gender = ent.gender or "m"
        value = ent.facts[rel]
        out.append({
            "id": f"{split}-{i:05d}",
            "question": render(temps[t], lang, world.in_text(eid, lang), "", gender),
            "answers": [world.surface(value, lang, gender)],
            "answers_en": [world.surface(value, "en", gender)],
            "lang": lang,
            "crosslingual": is_cross,
            "entity": eid,
            "relation": rel,
            "positive_ids": list(index[(eid, rel)]),
        })
    return out


@dataclass
class GeneratedWorld:
    """A world in memory: what ``build_world`` writes, plus the entity model behind it.

    ``passage_subject`` maps a passage id to the entity the passage is about
    (its title), which the files do not carry (passages keep the plain
    ``{"id","title","text","lang"}`` layout).
    """

    passages: list[dict[str, Any]]
    questions: dict[str, list[dict[str, Any]]]
    stats: dict[str, Any]
    world: World
    passage_subject: dict[str, str]


def generate(size: str | WorldSize = "default", seed: int = 0, progress: bool = False) -> GeneratedWorld:
    """Make the whole world in memory."""
    spec = SIZES[size] if isinstance(size, str) else size
    rng = random.Random(f"xqa-world:{seed}")
    world = build_entities(rng, spec.n_persons, spec.n_orgs)
    subjects: list[Entity] = []
    for kind in SUBJECT_KINDS:
        ents = sorted((e for e in world.entities.values() if e.kind == kind), key=lambda e: e.id)
        if kind not in ("person", "org") and spec.real_fraction < 1.0:
            ents = sorted(rng.sample(ents, max(1, round(spec.real_fraction * len(ents)))), key=lambda e: e.id)
        subjects += ents
    title_to_id = {(lg, e.names[lg]): e.id for e in subjects for lg in LANGS}
    passages, index = make_passages(world, rng, subjects, spec.fact_keep, progress=progress)
    split_ids = split_entities(rng, subjects, spec.heldout_fraction)
    counts = {"train": spec.n_train, "dev": spec.n_dev, "test": spec.n_test}
    questions = {s: make_questions(world, rng, split_ids[s], index, counts[s], s, spec.crosslingual_target)
                 for s in SPLITS}
    stats = world_stats(passages, questions)
    stats.update(size=size if isinstance(size, str) else "custom", seed=seed, spec=asdict(spec),
                 entities={s: len(split_ids[s]) for s in SPLITS})
    subject_of: dict[str, str] = {}
    for p in passages:
        subject_of[p["id"]] = title_to_id[(p["lang"], p["title"])]
    return GeneratedWorld(passages, questions, stats, world, subject_of)


def world_stats(passages: list[dict[str, Any]], questions: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Counts per language and split, and the cross-lingual share of each split."""
    per_lang = Counter(p["lang"] for p in passages)
    return {
        "languages": list(LANGS),
        "relations": list(RELATIONS),
        "passages": len(passages),
        "passages_per_lang": {lg: per_lang[lg] for lg in LANGS},
        "questions": {s: len(q) for s, q in questions.items()},
        "questions_per_lang": {s: {lg: sum(1 for x in q if x["lang"] == lg) for lg in LANGS} for s, q in questions.items()},
        "crosslingual_share": {s: round(sum(x["crosslingual"] for x in q) / max(1, len(q)), 4) for s, q in questions.items()},
    }



def format_stats(stats: dict[str, Any]) -> str:
    """A short table: passages per language, questions per split and language, cross-lingual share."""
    langs = stats["languages"]
    lines = [f"{'':<12}" + "".join(f"{lg:>6}" for lg in langs) + f"{'total':>8}"]
    ppl = stats["passages_per_lang"]
    lines.append(f"{'passages':<12}" + "".join(f"{ppl[lg]:>6}" for lg in langs) + f"{stats['passages']:>8}")
    for split, n in stats["questions"].items():
        per = stats.get("questions_per_lang", {}).get(split, {})
        lines.append(f"{split:<12}" + "".join(f"{per.get(lg, 0):>6}" for lg in langs) + f"{n:>8}")
    share = ", ".join(f"{s} {v:.1%}" for s, v in stats["crosslingual_share"].items())
    lines.append(f"cross-lingual share: {share}")
    return "\n".join(lines)


@dataclass
class WorldBuildConfig:
    """What ``xqa world build`` makes (its options, :mod:`xqa.cli_config`); :func:`build_world`'s arguments."""

    out: str = field(metadata={"help": "output folder (passages.jsonl, train/dev/test.jsonl, config.json)"})
    size: str = field(default="default", metadata={
        "choices": ("default", "small"),
        "help": "default: >=3,000 passages, 20k/1k/1k questions; small: a few hundred passages for tests"})
    seed: int = field(default=0, metadata={"help": "random seed; a fixed seed gives byte-identical files"})
    overwrite: bool = field(default=False, metadata={"help": "rebuild even if OUT is already a complete world"})


def describe_build(stats: dict[str, Any], out: str | Path) -> str:
    """What :func:`build_world` did (built, or kept a complete world) and the world's table."""
    if not stats.get("built", True):
        lines = [f"{out} is already a complete world (size {stats.get('size')}, seed {stats.get('seed')}); "
                 "pass --overwrite to rebuild"]
    else:
        lines = [f"world written to {out}"]
    if "languages" in stats:
        lines.append(format_stats(stats))
    return "\n".join(lines)

def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False))
            f.write("\n")


def build_world(out_dir: str | Path, size: str = "default", seed: int = 0, overwrite: bool = False,
                progress: bool = False) -> dict[str, Any]:
    """Write ``passages.jsonl``, ``{train,dev,test}.jsonl``, ``labels.jsonl`` and ``config.json`` into ``out_dir``.

    Written atomically (a temporary sibling folder renamed into place). When
    ``out_dir`` is already a complete world and ``overwrite`` is false, nothing
    is written and the stored stats are returned with ``"built": False``.
    """
    from xqa.artifacts import atomic_dir, is_complete, load_config, save_config
    from xqa.errors import XqaError

    if size not in SIZES:
        raise XqaError(f"unknown world size {size!r}; choose one of {sorted(SIZES)}")
    out = Path(out_dir)
    if is_complete(out) and not overwrite:
        cfg = load_config(out, kind="world")
        stale = _stale(out, cfg)
        if not stale:
            return {**cfg.get("stats", {}), "built": False}
        print(f"{out}: {stale}: building it again", flush=True)
        overwrite = True
    if out.exists() and not overwrite:
        if out.is_dir() and not any(out.iterdir()):
            overwrite = True  # an empty folder holds nothing to lose
        else:
            raise XqaError(f"{out} exists but is not a complete world (no config.json); pass --overwrite (overwrite=True) to replace it")
    gen = generate(size, seed, progress=progress)
    passages, questions, stats = gen.passages, gen.questions, gen.stats
    with atomic_dir(out, overwrite=overwrite) as tmp:
        _write_jsonl(tmp / "passages.jsonl", passages)
        for s in SPLITS:
            _write_jsonl(tmp / f"{s}.jsonl", questions[s])
        _write_jsonl(tmp / "labels.jsonl", answer_labels(gen.world))
        save_config(tmp, "world", {"generator_version": GENERATOR_VERSION, "size": size, "seed": seed,
                                   "languages": list(LANGS), "files": list(FILES),
                                   "counts": {"passages": stats["passages"], **stats["questions"]},
                                   "stats": stats})
    return {**stats, "built": True}


def _stale(out: Path, cfg: dict[str, Any]) -> str:
    """Why the complete world in ``out`` is not what this generator makes ("" if it is)."""
    version = cfg.get("generator_version")
    if version != GENERATOR_VERSION:
        return f"a world of generator version {version}, this is version {GENERATOR_VERSION}"
    missing = [f for f in FILES if not (out / f).is_file()]
    if missing:
        return f"a world without {', '.join(missing)} (made by an earlier version of xqa)"
    return ""
