"""docs/pipeline-json.md names every field of the pipeline config, with its default."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

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
    assert len(blocks) == 3
    for block in blocks:
        cfg = PipelineConfig.from_dict(json.loads(block))
        assert cfg.passages and cfg.reader.model


def test_save_then_load_gives_back_every_field(tmp_path):
    from xqa.config import RetrievalConfig as R

    def changed(cls, **values):
        """An instance of ``cls`` where every field differs from its default."""
        out = {}
        for f in dataclasses.fields(cls):
            if f.name in NOT_IN_THE_FILE or f.name in values:
                continue
            default = _default(f)
            out[f.name] = (not default if isinstance(default, bool) else default + 1 if isinstance(default, (int, float))
                           else f"{f.name}.x" if default is None or isinstance(default, str) else default)
        return cls(**{**out, **values})

    cfg = PipelineConfig(passages="passages.jsonl",
                         retrieval=changed(R, method="hybrid", corroborated_order="sparse", fallback="none",
                                           max_frac=0.5, lam=2.0, k_each=80),
                         reader=changed(ReaderConfig, answerability=None, answerability_threshold=0.7, answerable=None,
                                        not_found_threshold=0.3, miss=0.5),
                         languages=["en", "de"],
                         examples=[{"question": "q", "lang": "en"}], tuned={"alpha": 0.3}, about={"n": 1})
    path = tmp_path / "folder" / "pipeline.json"
    cfg.save(path)
    back = PipelineConfig.load(path)
    assert back.to_dict() == cfg.to_dict() and back.base_dir == str(path.parent)
    assert [p.name for p in path.parent.iterdir()] == ["pipeline.json"]  # written through a rename


def test_the_fusion_settings_are_declared_once():
    from retriever.combined import FusionConfig, FusionSettings

    names = {f.name for f in dataclasses.fields(FusionSettings)}
    assert names <= {f.name for f in dataclasses.fields(RetrievalConfig)}
    assert RetrievalConfig().fusion() == FusionConfig()
    r = RetrievalConfig(method="hybrid", alpha=0.3, mu=0.5)
    assert r.fusion(k_each=40) == FusionConfig("hybrid", alpha=0.3, mu=0.5, k_each=40)
    assert RetrievalConfig(method="hybrid", k_each=100).fusion().k_each == 100   # pipeline.json's depth


def test_each_sides_depth_is_a_setting_of_the_file_and_of_a_search(tiny_pipeline, tmp_path):
    """``retrieval.k_each``: the hybrid of a pipeline searches each side that deep and fuses
    there; the same as the keyword of a search; an impossible depth is said with its field."""
    from xqa.errors import XqaError
    from xqa.pipeline import Pipeline

    base = Path(tiny_pipeline).parent
    cfg = json.loads(Path(tiny_pipeline).read_text())
    cfg["passages"] = str(base / cfg["passages"])
    for key in ("sparse_index", "dense_index", "spar_index", "roman_index", "dhr_index"):
        if cfg["retrieval"].get(key):
            cfg["retrieval"][key] = str(base / cfg["retrieval"][key])
    cfg["retrieval"].update(method="hybrid", k_each=30)
    path = tmp_path / "pipeline.json"
    path.write_text(json.dumps(cfg))
    pipe = Pipeline(PipelineConfig.load(path))
    assert pipe.retriever().k_each == 30
    assert pipe.retriever("hybrid", k_each=7).k_each == 7
    cfg["retrieval"]["k_each"] = 0
    path.write_text(json.dumps(cfg))
    with pytest.raises(XqaError, match=r"field 'retrieval.k_each' should be at least 1 \(or null: k\), found 0"):
        PipelineConfig.load(path)


def test_a_relative_path_resolves_against_the_config_folder_alone(tmp_path, monkeypatch):
    """A path missing beside the config is said missing there, not taken from the working folder."""
    here, there = tmp_path / "here", tmp_path / "there"
    (here / "reader").mkdir(parents=True)
    (here / "p.jsonl").write_text("", encoding="utf-8")
    PipelineConfig(passages="p.jsonl").save(there / "pipeline.json")
    monkeypatch.chdir(here)
    cfg = PipelineConfig.load(there / "pipeline.json")
    assert cfg.path("p.jsonl") == str(there / "p.jsonl") and cfg.path("reader") == str(there / "reader")
    assert cfg.path("google/mt5-base") == "google/mt5-base"    # a model hub name, no folder anywhere
    (there / "google" / "mt5-base").mkdir(parents=True)
    assert cfg.path("google/mt5-base") == str(there / "google" / "mt5-base")
    assert cfg.path(str(here / "p.jsonl")) == str(here / "p.jsonl")
