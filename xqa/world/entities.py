"""Entities of the embedded world: real places from ``data/places.json`` and
synthetic people and companies whose names are transliterated into every script.

Why synthetic people and companies: the world needs thousands of subject
entities so that train/dev/test can be split *by entity*, but only a few
hundred real places have well-known names in all ten languages. Places keep
their real names (``日本``/``東京``, ``도쿄``, ``Токио``, ``طوكيو`` ...); a person
or company gets a name built from syllables, each written in every script by
the table in ``data/names.json``, so its name in one language is a systematic
transliteration of its name in another (learnable by a reader that must
answer in the question's language).

Everything here is deterministic given the ``random.Random`` passed in.
"""
from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

LANGS: tuple[str, ...] = ("ar", "bn", "en", "es", "fi", "ja", "ko", "ru", "te", "zh")

# relation -> (subject kind, value kind); value kinds that are entity kinds name entities
RELATIONS: dict[str, tuple[str, str]] = {
    "capital": ("country", "city"),
    "continent": ("country", "continent"),
    "country_population": ("country", "number"),
    "city_country": ("city", "country"),
    "city_population": ("city", "number"),
    "river_length": ("river", "number"),
    "river_country": ("river", "country"),
    "mountain_height": ("mountain", "number"),
    "mountain_country": ("mountain", "country"),
    "birth_year": ("person", "number"),
    "birthplace": ("person", "city"),
    "occupation": ("person", "occupation"),
    "employer": ("person", "org"),
    "founded": ("org", "number"),
    "headquarters": ("org", "city"),
}

SUBJECT_KINDS: tuple[str, ...] = ("country", "city", "river", "mountain", "person", "org")


@dataclass(frozen=True)
class Value:
    """The object of a fact: an entity id, a plain number, or an occupation id."""

    kind: str  # "entity" | "number" | "occupation"
    ref: str | int


@dataclass
class Entity:
    """One thing the world knows: names in every language and its facts.

    ``home`` lists the languages most likely to describe it (a Japanese city is
    likely described in Japanese); ``gender`` ("m"/"f") is set for people only.
    """

    id: str
    kind: str
    names: dict[str, str]
    facts: dict[str, Value] = field(default_factory=dict)
    home: tuple[str, ...] = ()
    gender: str = ""
    en_definite: bool = False  # English running text says "the Nile", "the United States"


class World:
    """All entities plus the closed vocabulary (occupations) of one world."""

    def __init__(self, entities: dict[str, Entity], occupations: dict[str, dict[str, tuple[str, str]]]):
        self.entities = entities
        self.occupations = occupations

    def name(self, entity_id: str, lang: str) -> str:
        return self.entities[entity_id].names[lang]

    def surface(self, value: Value, lang: str, gender: str = "m") -> str:
        """How ``value`` is written in ``lang`` (numbers: plain digits in every language)."""
        if value.kind == "number":
            return str(value.ref)
        if value.kind == "occupation":
            m, f = self.occupations[str(value.ref)][lang]
            return f if gender == "f" else m
        return self.entities[str(value.ref)].names[lang]

    def in_text(self, value: Value | str, lang: str, gender: str = "m") -> str:
        """``surface`` as written inside a sentence: English adds "the" where the name takes it.

        The answer string (``surface``) is always a substring of this.
        """
        if isinstance(value, str):
            value = Value("entity", value)
        text = self.surface(value, lang, gender)
        if lang == "en" and value.kind == "entity" and self.entities[str(value.ref)].en_definite:
            return "the " + text
        return text

    def of_kind(self, kind: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.kind == kind]


def _load(name: str) -> dict[str, Any]:
    text = resources.files("xqa.world").joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text)


def _names(row: dict[str, Any], langs: list[str], where: str) -> dict[str, str]:
    names = row.get("names")
    if not isinstance(names, list) or len(names) != len(langs) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{where}: {row.get('id')!r} needs {len(langs)} non-empty names in the order {langs}")
    return dict(zip(langs, names))


@functools.lru_cache(maxsize=1)
def _real_entities() -> tuple[dict[str, Entity], ...]:
    data = _load("places.json")
    langs = data["langs"]
    if tuple(langs) != LANGS:
        raise ValueError(f"places.json: langs must be {list(LANGS)}")
    where = "xqa/world/data/places.json"
    ents: dict[str, Entity] = {}
    for cid, names in data["continents"].items():
        ents[f"continent/{cid}"] = Entity(f"continent/{cid}", "continent", _names({"id": cid, "names": names}, langs, where))
    homes: dict[str, tuple[str, ...]] = {}
    for row in data["countries"]:
        eid = f"country/{row['id']}"
        homes[eid] = tuple(row["home"])
        ents[eid] = Entity(eid, "country", _names(row, langs, where), home=homes[eid], facts={
            "capital": Value("entity", f"city/{row['capital']}"),
            "continent": Value("entity", f"continent/{row['continent']}"),
            "country_population": Value("number", int(row["population"])),
        })
    for row in data["cities"]:
        country = f"country/{row['country']}"
        ents[f"city/{row['id']}"] = Entity(f"city/{row['id']}", "city", _names(row, langs, where), home=homes.get(country, ()), facts={
            "city_country": Value("entity", country),
            "city_population": Value("number", int(row["population"])),
        })
    for row in data["rivers"]:
        country = f"country/{row['country']}"
        ents[f"river/{row['id']}"] = Entity(f"river/{row['id']}", "river", _names(row, langs, where), home=homes.get(country, ()), facts={
            "river_length": Value("number", int(row["length"])),
            "river_country": Value("entity", country),
        })
    for row in data["mountains"]:
        country = f"country/{row['country']}"
        ents[f"mountain/{row['id']}"] = Entity(f"mountain/{row['id']}", "mountain", _names(row, langs, where), home=homes.get(country, ()), facts={
            "mountain_height": Value("number", int(row["height"])),
            "mountain_country": Value("entity", country),
        })
    for rid in data.get("english_definite", []):
        matches = [e for e in ents.values() if e.id.split("/", 1)[1] == rid]
        if len(matches) != 1:
            raise ValueError(f"{where}: english_definite names unknown id {rid!r}")
        matches[0].en_definite = True
    for e in ents.values():
        for rel, v in e.facts.items():
            if v.kind == "entity" and v.ref not in ents:
                raise ValueError(f"{where}: {e.id} {rel} refers to unknown {v.ref}")
    return (ents,)


@functools.lru_cache(maxsize=1)
def _name_material() -> dict[str, Any]:
    data = _load("names.json")
    scripts = data["syllable_scripts"]
    for row in data["syllables"]:
        if len(row) != len(scripts):
            raise ValueError(f"names.json: syllable {row!r} needs {len(scripts)} renderings")
    occupations: dict[str, dict[str, tuple[str, str]]] = {}
    for occ, forms in data["occupations"].items():
        if set(forms) != set(LANGS):
            raise ValueError(f"names.json: occupation {occ!r} needs names in {list(LANGS)}")
        occupations[occ] = {lang: (f, f) if isinstance(f, str) else (f[0], f[1]) for lang, f in forms.items()}
    for kind, pats in data["company_kinds"].items():
        if set(pats) != set(LANGS) or not all("{name}" in p for p in pats.values()):
            raise ValueError(f"names.json: company kind {kind!r} needs a '{{name}}' pattern in {list(LANGS)}")
    return {"scripts": scripts, "syllables": data["syllables"], "sep": data["name_separator"],
            "blocked": tuple(data.get("blocked_words", ())),
            "occupations": occupations, "company_kinds": data["company_kinds"]}


def _script_of(lang: str) -> str:
    return "latin" if lang in ("en", "es", "fi") else lang


def transliterate(syllables: list[int], lang: str) -> str:
    """Write a syllable-index word in ``lang``'s script (capitalised where scripts have case)."""
    mat = _name_material()
    col = mat["scripts"].index(_script_of(lang))
    word = "".join(mat["syllables"][i][col] for i in syllables)
    return word[:1].upper() + word[1:]


class _NameMaker:
    """Draws syllable words whose renderings are unique in every language."""

    def __init__(self, rng: random.Random, taken: dict[str, set[str]]):
        self.rng = rng
        self.n = len(_name_material()["syllables"])
        self.taken = taken

    def word(self, lo: int = 2, hi: int = 3) -> list[int]:
        """A random syllable string that spells no blocked (rude) word in Latin letters."""
        blocked = _name_material()["blocked"]
        while True:
            syl = [self.rng.randrange(self.n) for _ in range(self.rng.randint(lo, hi))]
            latin = transliterate(syl, "en").lower()
            if not any(b in latin for b in blocked):
                return syl

    def unique(self, render) -> dict[str, str]:
        for _ in range(1000):
            names = render()
            if all(names[lang] not in self.taken[lang] for lang in LANGS):
                for lang in LANGS:
                    self.taken[lang].add(names[lang])
                return names
        raise RuntimeError("could not draw a unique synthetic name")


def build_entities(rng: random.Random, n_persons: int, n_orgs: int) -> World:
    """All real places plus ``n_orgs`` companies and ``n_persons`` people.

    Facts are consistent: a person works for a company founded before they
    were 25, people are born 1930-2002, companies founded 1880-2015, and
    birthplaces/headquarters lean towards cities of a language's countries.
    """
    (real,) = _real_entities()
    ents = dict(real)
    mat = _name_material()
    taken: dict[str, set[str]] = {lang: {e.names[lang] for e in ents.values()} for lang in LANGS}
    maker = _NameMaker(rng, taken)
    cities = sorted(e.id for e in ents.values() if e.kind == "city")
    city_by_lang: dict[str, list[str]] = {lang: [c for c in cities if lang in ents[c].home] for lang in LANGS}

    def pick_city(lang: str) -> str:
        pool = city_by_lang[lang] if city_by_lang[lang] and rng.random() < 0.75 else cities
        return rng.choice(pool)

    kinds = sorted(mat["company_kinds"])
    orgs: list[str] = []
    for i in range(n_orgs):
        lang = rng.choice(LANGS)
        kind = rng.choice(kinds)

        def render_org(pattern: dict[str, str] = mat["company_kinds"][kind]) -> dict[str, str]:
            base = maker.word()
            return {lg: pattern[lg].replace("{name}", transliterate(base, lg)) for lg in LANGS}

        names = maker.unique(render_org)
        hq = pick_city(lang)
        eid = f"org/{i:05d}"
        ents[eid] = Entity(eid, "org", names, home=(lang,), facts={
            "founded": Value("number", rng.randint(1880, 2015)),
            "headquarters": Value("entity", hq),
        })
        orgs.append(eid)
    occs = sorted(mat["occupations"])
    for i in range(n_persons):
        lang = rng.choice(LANGS)
        gender = rng.choice("mf")

        def render() -> dict[str, str]:
            given, family = maker.word(), maker.word()
            return {lg: transliterate(given, lg) + mat["sep"][lg] + transliterate(family, lg) for lg in LANGS}

        names = maker.unique(render)
        employer = rng.choice(orgs) if orgs else None
        facts = {"birthplace": Value("entity", pick_city(lang)), "occupation": Value("occupation", rng.choice(occs))}
        lo = 1930
        if employer is not None:
            lo = max(lo, int(ents[employer].facts["founded"].ref) - 25)
            facts["employer"] = Value("entity", employer)
        facts["birth_year"] = Value("number", rng.randint(lo, max(lo, 2002)))
        eid = f"person/{i:05d}"
        ents[eid] = Entity(eid, "person", names, home=(lang,), gender=gender,
                           facts={r: facts[r] for r in ("birth_year", "birthplace", "occupation", "employer") if r in facts})
    return World(ents, mat["occupations"])
