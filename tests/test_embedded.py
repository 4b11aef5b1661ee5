"""The world recipe's profiles and its refusal to mix them."""
from __future__ import annotations

import json

import pytest

from xqa.recipes.world import PROFILES, WorldBuild
from xqa.errors import XqaError


def test_long_profile_is_the_world_with_a_longer_reader():
    world, long = PROFILES["world"], PROFILES["long"]
    assert long.reader_steps > world.reader_steps
    assert {k: v for k, v in vars(long).items() if k != "reader_steps"} == \
        {k: v for k, v in vars(world).items() if k != "reader_steps"}


def test_a_reader_of_another_profile_is_not_silently_reused(tmp_path):
    state = tmp_path / "reader" / "checkpoint" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"step": PROFILES["world"].reader_steps, "done": True}))
    (tmp_path / "reader" / "best").mkdir()
    (tmp_path / "reader" / "best" / "config.json").write_text(json.dumps({"copy_head": [1, 0]}))
    build = WorldBuild(tmp_path, profile="world")
    (tmp_path / "reader" / "recipe.json").write_text(json.dumps(build._reader_recipe()))
    assert build._reader_finished()
    d, lg = PROFILES["world"].reader_steps, PROFILES["long"].reader_steps
    with pytest.raises(XqaError, match=f"trained {d} steps, but profile 'long' trains {lg}"):
        WorldBuild(tmp_path, profile="long")._reader_finished()
    state.write_text(json.dumps({"step": 10, "done": False}))         # unfinished: resumed, not an error
    assert not WorldBuild(tmp_path, profile="long")._reader_finished()


def test_a_world_of_another_size_or_seed_is_refused_not_built_upon(tmp_path):
    (tmp_path / "world").mkdir()
    (tmp_path / "world" / "config.json").write_text(json.dumps({"kind": "world", "size": "small", "seed": 0}))
    world_stage = lambda build: build.stages()[0]   # noqa: E731
    assert world_stage(WorldBuild(tmp_path, profile="small")).done()
    with pytest.raises(XqaError, match="holds a world of size 'small' and seed 0, not the 'small' world of seed 3"):
        world_stage(WorldBuild(tmp_path, profile="small", seed=3)).done()
    with pytest.raises(XqaError, match="not the 'default' world of seed 0"):
        world_stage(WorldBuild(tmp_path, profile="world")).done()


def test_a_reader_without_a_recorded_recipe_is_trained_again(tmp_path, capsys):
    state = tmp_path / "reader" / "checkpoint" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"step": PROFILES["world"].reader_steps, "done": True}))
    (tmp_path / "reader" / "best").mkdir()
    (tmp_path / "reader" / "best" / "config.json").write_text(json.dumps({"copy_head": None}))
    assert not WorldBuild(tmp_path, profile="world")._reader_finished()
    assert not (tmp_path / "reader").exists()                 # not resumed from the stale checkpoint
    assert "no recipe.json beside the reader" in capsys.readouterr().out


def test_a_reader_of_another_recipe_is_trained_again(tmp_path, capsys, monkeypatch):
    import xqa.recipes.world as world_recipe

    monkeypatch.setattr(world_recipe, "call_distributed", lambda procs, function, arguments: None)
    build = WorldBuild(tmp_path, profile="world")
    build.train_reader()                                       # records the recipe next to the reader
    state = tmp_path / "reader" / "checkpoint" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"step": PROFILES["world"].reader_steps, "done": True}))
    assert build._reader_finished()
    recipe = json.loads((tmp_path / "reader" / "recipe.json").read_text())
    assert recipe["copy_attention"] == PROFILES["world"].reader_copy_attention
    recipe["copy_attention"] = 1.0                              # made by an older profile
    (tmp_path / "reader" / "recipe.json").write_text(json.dumps(recipe))
    assert not build._reader_finished() and not (tmp_path / "reader").exists()
    assert f"copy_attention 1.0 -> {PROFILES['world'].reader_copy_attention}" in capsys.readouterr().out


def test_training_a_reader_forgets_fusion_weights_tuned_for_the_last_one(tmp_path, monkeypatch):
    import xqa.recipes.world as world_recipe

    build = WorldBuild(tmp_path, profile="world")
    build.config_path.write_text(json.dumps({"reader": {}, "tuned": {"fusion": {"beta": 1.0}}}))
    (tmp_path / "fusion.json").write_text("{}")
    tuned = dict((name, done) for name, done, *_ in build.stages())["tune β, γ (evidence fusion)"]
    assert tuned()
    calls = []
    monkeypatch.setattr(world_recipe, "call_distributed",
                        lambda procs, function, arguments: calls.append((procs, arguments["config"])))
    build.train_reader()
    assert not tuned()                                      # the next stage tunes β, γ again
    (procs, config), = calls
    p = PROFILES["world"]
    assert procs == p.reader_procs == 2                      # the whole batch, split over the processes
    assert config.batch_size * procs == p.reader_batch and config.threads == 1
    assert config.copy_attention == p.reader_copy_attention > 0


def test_a_batch_that_does_not_split_over_the_processes_is_refused():
    from dataclasses import replace

    with pytest.raises(ValueError, match="reader_batch 15 must split evenly over reader_procs 2"):
        replace(PROFILES["world"], reader_batch=15)


def test_the_distributed_launcher_runs_one_thread_processes_on_the_loopback(monkeypatch):
    import subprocess

    from xqa.recipes import runner

    from xqa.evaluation.tuning import FusionTuneConfig, tune_fusion

    seen = {}
    monkeypatch.setattr(subprocess, "run", lambda cmd, env: seen.update(cmd=cmd, env=env) or
                        subprocess.CompletedProcess(cmd, 0))
    config = FusionTuneConfig(model="m", dev="d.jsonl", out="f.json", limit=5, threads=1)
    runner.call_distributed(2, tune_fusion, {"config": config})
    cmd = seen["cmd"]
    assert cmd[cmd.index("--nproc-per-node") + 1] == "2" and cmd[cmd.index("--master-addr") + 1] == "127.0.0.1"
    assert cmd[cmd.index("-m", cmd.index("--master-port")):-1] == ["-m", "xqa.recipes.runner"]
    # each process rebuilds the typed config and calls the function with it
    task = json.loads(cmd[-1])
    assert runner._find(task["call"]) is tune_fusion and runner._decode(task["arguments"]) == {"config": config}
    assert seen["env"]["OMP_NUM_THREADS"] == "1"
    monkeypatch.setattr(subprocess, "run", lambda cmd, env: subprocess.CompletedProcess(cmd, 3))
    with pytest.raises(XqaError, match="2 processes of xqa.evaluation.tuning:tune_fusion"):
        runner.call_distributed(2, tune_fusion, {"config": config})


def test_a_stage_process_stopped_by_ctrl_c_exits_without_a_traceback(monkeypatch, capsys):
    """Ctrl+C reaches each process of a stage as well as the command, which says "interrupted"
    once: the processes exit quietly with 130."""
    from xqa.recipes import runner

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "_find", lambda name: interrupted)
    assert runner._main(json.dumps({"call": "m:f", "arguments": {}})) == 130
    assert capsys.readouterr().err == ""


def test_a_stage_that_saves_and_loads_a_model_draws_no_transformers_bar_and_the_setting_returns(tmp_path, capfd):
    from transformers import BertConfig, BertModel
    from transformers.utils import logging as hf_logging

    from xqa.recipes.runner import Stage, run_stages

    folder = tmp_path / "model"
    cfg = BertConfig(vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)

    def save_and_load():
        BertModel(cfg).save_pretrained(folder)
        BertModel.from_pretrained(folder)

    assert hf_logging.is_progress_bar_enabled()
    times = run_stages([Stage("model", lambda: (folder / "config.json").is_file(), save_and_load)])
    out = capfd.readouterr()
    assert "[1/1] model ..." in out.out and set(times) == {"model"}
    assert "Loading weights" not in out.err and "Writing model shards" not in out.err
    assert hf_logging.is_progress_bar_enabled()
    # outside a stage, transformers draws its bar as usual: the check above can see one
    BertModel.from_pretrained(folder)
    assert "Loading weights" in capfd.readouterr().err
    # a stage's part run in a process of its own is as quiet
    from xqa.lazy import function
    from xqa.recipes.runner import call_in_processes

    call_in_processes([(function("transformers:BertModel.from_pretrained"),
                        {"pretrained_model_name_or_path": str(folder)})])
    assert "Loading weights" not in capfd.readouterr().err


def test_a_config_of_an_older_build_is_written_again_with_the_cross_script_index(tmp_path):
    from xqa.recipes.world import RETRIEVAL_METHOD

    build = WorldBuild(tmp_path, profile="small")
    (tmp_path / "world").mkdir()
    (tmp_path / "world" / "config.json").write_text(json.dumps({"languages": ["en", "ko"]}))
    (tmp_path / "world" / "test.jsonl").write_text(
        json.dumps({"id": "q", "question": "Where?", "answers": ["x"], "lang": "en"}) + "\n")
    done = dict((name, is_done) for name, is_done, *_ in build.stages())["pipeline config"]
    old = {"retrieval": {"method": "spar+scd", "sparse_index": "bm25"}, "reader": {},
           "tuned": {"alpha": 1.0, "mu": 0.2}}
    build.config_path.write_text(json.dumps(old))
    assert not done()                                    # an older build's config: written again
    build.write_config()
    assert done()
    cfg = json.loads(build.config_path.read_text())
    assert cfg["retrieval"]["method"] == RETRIEVAL_METHOD == "sparse+roman"
    assert cfg["retrieval"]["roman_index"] == "roman" and cfg["tuned"] == {}   # α, μ, w tuned again
    # a profile that reads another number of passages: written again (w and β/γ depend on it)
    assert cfg["reader"]["n_passages"] == PROFILES["small"].read_passages
    cfg["reader"]["n_passages"] = PROFILES["small"].read_passages + 4
    build.config_path.write_text(json.dumps(cfg))
    assert not done()


def test_retrieval_files_and_reader_follow_the_retrieval_settings(tmp_path, monkeypatch, capsys):
    import xqa.recipes.world as world_recipe

    build = WorldBuild(tmp_path, profile="world")
    build.config_path.write_text(json.dumps({"retrieval": {"method": "sparse+roman", "roman_weight": 1.0},
                                             "reader": {}, "tuned": {}}))
    searched = []
    monkeypatch.setattr(world_recipe, "retrieve", lambda *arguments: searched.append(arguments))
    (tmp_path / "retrieved").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "retrieved" / f"{split}.jsonl").write_text("")
    assert not build._retrieved_current()                # files without a recipe: made before recipes
    build.retrieve_for_reader()
    assert len(searched) == 3 and build._retrieved_current()
    # a reader trained on them
    monkeypatch.setattr(world_recipe, "call_distributed", lambda procs, function, arguments: None)
    build.train_reader()
    state = tmp_path / "reader" / "checkpoint" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"step": PROFILES["world"].reader_steps, "done": True}))
    assert build._reader_finished()
    # the weight is tuned again (say): the retrieval files and then the reader are stale
    cfg = json.loads(build.config_path.read_text())
    cfg["retrieval"]["roman_weight"] = 0.5
    build.config_path.write_text(json.dumps(cfg))
    assert not build._retrieved_current()
    assert not build._reader_finished() and not (tmp_path / "reader").exists()
    assert "retrieval changed" in capsys.readouterr().out


def test_the_reader_trains_to_copy_foreign_names_through_the_labels(tmp_path, monkeypatch):
    import xqa.recipes.world as world_recipe

    calls = []
    monkeypatch.setattr(world_recipe, "call_distributed",
                        lambda procs, function, arguments: calls.append(arguments["config"]))
    for profile in ("small", "world"):
        build = WorldBuild(tmp_path / profile, profile=profile)
        build.reader.mkdir(parents=True)
        build.train_reader()
    small, world = calls
    assert small.labels is None
    assert world.labels == str(tmp_path / "world" / "world" / "labels.jsonl")
    # the recipe names the option only when it is on, so readers built without it and before it agree
    assert "train_labels" not in WorldBuild(tmp_path / "small", profile="small")._reader_recipe()
    assert WorldBuild(tmp_path / "world")._reader_recipe()["train_labels"] is True
    # and the label table is in place before the reader trains
    names = [name for name, *_ in WorldBuild(tmp_path / "world").stages()]
    assert names.index("answer labels") < names.index("FiD reader")


def test_a_cross_script_index_without_stop_tokens_is_built_again_and_w_tuned_again(tmp_path, monkeypatch, capsys):
    import xqa.recipes.world as world_recipe
    from xqa import indexes

    build = WorldBuild(tmp_path, profile="world")
    done = dict((name, is_done) for name, is_done, *_ in build.stages())["cross-script BM25 index"]
    (build.roman / "_all").mkdir(parents=True)
    (build.roman / "config.json").write_text(json.dumps({"kind": "bm25"}))   # complete, built without stop tokens
    (build.roman / "_all" / "config.json").write_text(json.dumps({"kind": "bm25-language"}))
    assert not done() and "building it again" in capsys.readouterr().out
    build.config_path.write_text(json.dumps({"retrieval": {"method": "sparse+roman", "roman_weight": 1.7},
                                             "reader": {}, "tuned": {"alpha": 1.0, "roman_weight": 1.7}}))
    before = build._retrieval_recipe()
    assert "roman_stop_fraction" not in before             # files made from an index without stop tokens

    def index(cfg):
        assert cfg.cross_script and cfg.stop_fraction == world_recipe.ROMAN_STOP_FRACTION and cfg.overwrite
        (build.roman / "_all" / "config.json").write_text(
            json.dumps({"kind": "bm25-language", "stop_fraction": world_recipe.ROMAN_STOP_FRACTION}))
        return {}
    monkeypatch.setattr(indexes, "build_sparse", index)
    monkeypatch.setattr(indexes, "describe_sparse", lambda summary, out: "")
    build.index_roman()
    assert done()
    cfg = json.loads(build.config_path.read_text())
    assert "roman_weight" not in cfg["tuned"] and cfg["tuned"]["alpha"] == 1.0   # w is tuned again
    # and the reader's passages (so the reader) follow the new index, even if w comes out the same
    assert build._retrieval_recipe() == {**before, "roman_stop_fraction": world_recipe.ROMAN_STOP_FRACTION}
