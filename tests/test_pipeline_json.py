"""docs/pipeline-json.md names every field of the pipeline config, with its default."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from xqa.config import PipelineConfig, ReaderConfig, RetrievalConfig

PAGE = Path(__file__).resolve().parents[1] / "docs" / "pipeline-json.md"
SECTIONS = {"Top level": PipelineConfig, "`retrieval`": RetrievalConfig, "`reader`": ReaderConfig}
NOT_IN_THE_FILE = {"base_dir"}  # set from the file's location when it is loaded


def _tables() -> dict[str, dict[str, str]]:
    """Section heading -> {field: its default cell}."""
    tables: dict[str, dict[str, str]] = {}
    section = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            tables[section] = {}
        elif section and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tables[section][cells[0].strip("`")] = cells[1]
    return tables


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def test_every_field_is_documented_with_its_default():
    tables = _tables()
    for heading, cls in SECTIONS.items():
        assert heading in tables, f"docs/pipeline-json.md has no section {heading!r}"
        documented = tables[heading]
        fields = {f.name: f for f in dataclasses.fields(cls) if f.name not in NOT_IN_THE_FILE}
        assert set(documented) == set(fields), (
            f"{heading}: undocumented {sorted(set(fields) - set(documented))}, "
            f"not fields {sorted(set(documented) - set(fields))}")
        for name, f in fields.items():
            default = _default(f)
            if dataclasses.is_dataclass(default):
                assert documented[name] == "(below)", name
            else:
                assert json.loads(documented[name].strip("`")) == default, (heading, name, documented[name])


def test_the_examples_are_valid_configs():
    blocks = re.findall(r"```json\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 2
    for block in blocks:
        cfg = PipelineConfig.from_dict(json.loads(block))
        assert cfg.passages and cfg.reader.model
