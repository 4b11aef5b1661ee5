"""The world's answer labels: write an answer copied from a passage in the question's language.

A reader that copies a span answers a cross-lingual question with a value in
the passage's language ("東京" from a Japanese passage, asked in English). A
label table, one item per line, names each answer entity in every language it
has a name in, as Wikidata's labels do:

    {"id": "city/tokyo", "labels": {"en": "Tokyo", "ja": "東京", "ko": "도쿄"}}
    {"id": "occupation/chemist", "labels": {"es": "químico"}, "female": {"es": "química"}}

``female`` (optional) holds the forms that differ for a woman (Wikidata's
"female form of label"). :meth:`AnswerLabels.shown` rewrites a candidate that
is a label of an item in another language, and no label in the question's
language, as that item's label in the question's language. It leaves the text
unchanged when the text is no label, is already one in the question's
language, or names items whose labels in that language differ (ambiguous).
A feminine form is translated to the feminine form where the target language
has one; a form that is both (English "chemist") to the plain label.

Evidence fusion matches a candidate against the passages by the text the reader
wrote and scores it, and shows (and sums duplicates, and evaluates) the label:
the translated answer keeps the evidence of the span it was copied from.
The embedded world writes its table (:func:`answer_labels`) as ``world/labels.jsonl``,
which its pipeline config names as ``reader.labels``. It is a feature of the world,
whose names of places, companies and occupations are a closed set it generated; a
real corpus would need a Wikidata label dump of its answer entities in the same layout.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from xqa.errors import InputError, XqaError

from xqa.io import json_type, jsonl_objects
from xqa.world.entities import World

_LANG_CODE = re.compile(r"[a-z]{2,3}(?:[_-][a-zA-Z]{2,4})?")


def answer_labels(world: World) -> list[dict[str, Any]]:
    """The world's label table: every entity's and occupation's name in every language, the
    feminine occupation forms where they differ; what Wikidata's labels are to Wikipedia."""
    rows: list[dict[str, Any]] = [{"id": e.id, "labels": dict(e.names)}
                                  for e in sorted(world.entities.values(), key=lambda e: e.id)]
    for occ in sorted(world.occupations):
        forms = world.occupations[occ]
        row: dict[str, Any] = {"id": f"occupation/{occ}", "labels": {lg: m for lg, (m, _) in forms.items()}}
        female = {lg: f for lg, (m, f) in forms.items() if f != m}
        if female:
            row["female"] = female
        rows.append(row)
    return rows


class AnswerLabels:
    """Names of answer items per language; see the module doc."""

    def __init__(self, items: Iterable[dict]):
        from reader.evidence import normalize_answer

        self.labels: list[dict[str, str]] = []
        self.female: list[dict[str, str]] = []
        # normalised label -> [(item, language, is_female_form)]
        self._index: dict[str, list[tuple[int, str, bool]]] = {}
        for item in items:
            i = len(self.labels)
            labels, female = dict(item["labels"]), dict(item.get("female") or {})
            self.labels.append(labels)
            self.female.append(female)
            for forms, is_female in ((labels, False), (female, True)):
                for lang, text in forms.items():
                    self._index.setdefault(normalize_answer(text), []).append((i, lang, is_female))

    def __len__(self) -> int:
        return len(self.labels)

    @classmethod
    def load(cls, path: str | Path) -> "AnswerLabels":
        """Read a JSONL table; a malformed line, a missing, null or repeated ``id``, a language key
        that is no language code, and a table without items are errors naming ``file:line``."""
        path = Path(path)
        if not path.is_file():
            raise XqaError(f"{path}: no answer label table there (JSONL of {{\"id\", \"labels\": {{lang: name}}}})")
        if path.stat().st_size == 0:
            raise InputError(path, None, "the file is empty")
        items, seen = [], {}
        for n, obj in jsonl_objects(path):
            item_id = obj.get("id")
            if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or not str(item_id).strip():
                what = "missing" if "id" not in obj else f"{json_type(item_id)}, not a non-empty string"
                raise InputError(path, n, f"field 'id' is {what}")
            if str(item_id) in seen:
                raise InputError(path, n, f"duplicate item id {item_id!r} (first at line {seen[str(item_id)]})")
            seen[str(item_id)] = n
            for key in ("labels", "female"):
                forms = obj.get(key, {} if key == "female" else None)
                if not isinstance(forms, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                                          for k, v in forms.items()):
                    raise InputError(path, n, f"field {key!r} should map language codes to non-empty names")
                bad = next((k for k in forms if not _LANG_CODE.fullmatch(k)), None)
                if bad is not None:
                    raise InputError(path, n, f"field {key!r}: {bad!r} is not a language code (e.g. 'en', 'zh_cn')")
            if not obj["labels"]:
                raise InputError(path, n, "field 'labels' is empty")
            items.append(obj)
        if not items:
            raise InputError(path, None, "holds no label items")
        return cls(items)

    def shown(self, text: str, lang: str) -> str:
        """``text`` written in ``lang`` when it is unambiguously another language's label."""
        from reader.evidence import normalize_answer

        hits = self._index.get(normalize_answer(text))
        if not hits or any(l == lang for _, l, _ in hits):
            return text
        targets = set()
        for item, _, is_female in hits:
            target = (self.female[item].get(lang) if is_female else None) or self.labels[item].get(lang)
            if target is not None:
                targets.add(target)
        return targets.pop() if len(targets) == 1 else text

    def forms(self, text: str) -> list[str]:
        """Every name (all languages, feminine forms too) of the one item ``text`` names; [] when
        it names none or several. Training (``xqa train reader --labels``) looks for these in the
        passages of a question whose answer they state in another language."""
        from reader.evidence import normalize_answer

        items = {item for item, _, _ in self._index.get(normalize_answer(text), ())}
        if len(items) != 1:
            return []
        (item,) = items
        return list(dict.fromkeys([*self.labels[item].values(), *self.female[item].values()]))

    def shown_all(self, texts: Sequence[str], lang: str | None) -> list[str]:
        return list(texts) if not lang else [self.shown(t, lang) for t in texts]

