"""scripts/gpu_tree.sh: what a lent GPU machine's call leaves behind, and putting it back."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_tree.sh"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def run(repo, *args, check=True):
    out = subprocess.run(["bash", str(SCRIPT), *args], cwd=repo, capture_output=True, text=True)
    if check:
        assert out.returncode == 0, out.stderr + out.stdout
    return out


@pytest.fixture
def repo(tmp_path):
    files = {
        "pyproject.toml": b"[project]\n",
        "xqa/cli.py": b"print()\n",
        "xqa/corpus/__init__.py": b"",
        "xqa/corpus/prebuilt/dense.npy": b"x" * 3_000_000,
        "xqa/corpus/passages.jsonl.gz": b"y" * 1_000_000,
        "docs/demo.png": b"z" * 500_000,
        "docs/guide.md": b"# guide\n",
    }
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (tmp_path / ".gitignore").write_text("/runs/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    (tmp_path / "runs" / "gpu").mkdir(parents=True)
    (tmp_path / "runs" / "gpu" / "kit.tar.xz").write_bytes(b"k" * 2_000_000)
    return tmp_path


def test_aside_counts_the_tree_without_the_corpus_and_back_restores_it(repo):
    before = run(repo, "size", "runs/gpu").stdout
    assert "tree 4.50 MB + carry 2.00 MB = 6.50 MB" in before
    assert "tree 0.00 MB + carry 2.00 MB = 2.00 MB" in run(repo, "size", "--aside", "runs/gpu").stdout
    assert (repo / "xqa/corpus/prebuilt/dense.npy").exists()          # counted as aside, not moved
    out = run(repo, "aside", "runs/gpu").stdout
    assert "tree 0.00 MB + carry 2.00 MB = 2.00 MB" in out
    assert not (repo / "xqa/corpus/prebuilt").exists()
    assert not (repo / "docs/demo.png").exists()
    assert (repo / "runs/aside/xqa/corpus/prebuilt/dense.npy").stat().st_size == 3_000_000
    assert (repo / "xqa/corpus/__init__.py").exists() and (repo / "docs/guide.md").exists()
    assert "the tree is whole again" in run(repo, "back").stdout
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True)
    assert status.stdout == ""


def test_aside_twice_refuses_and_back_reports_what_is_still_missing(repo):
    run(repo, "aside")
    (repo / "xqa/corpus/passages.jsonl.gz").write_bytes(b"new")
    assert run(repo, "aside", check=False).returncode == 2          # runs/aside holds it already
    (repo / "xqa/corpus/passages.jsonl.gz").unlink()
    shutil.rmtree(repo / "runs/aside/docs")
    out = run(repo, "back", check=False)
    assert out.returncode == 1 and "docs/demo.png" in out.stderr


def test_over_the_limit_is_refused(repo):
    big = repo / "runs" / "big"
    big.mkdir()
    with open(big / "blob", "wb") as f:
        f.truncate(70 * 1024 * 1024)
    out = run(repo, "size", "runs/big", check=False)
    assert out.returncode == 1 and "over the limit" in out.stderr


def test_it_runs_in_a_git_worktree_whose_git_is_a_file(repo, tmp_path_factory):
    other = tmp_path_factory.mktemp("wt") / "checkout"
    subprocess.run(["git", "worktree", "add", "-q", str(other)], cwd=repo, check=True)
    assert (other / ".git").is_file()
    out = run(other, "size")
    assert "tree 4.50 MB" in out.stdout


PREPARE = SCRIPT.with_name("prepare_fid_gpu.sh")

FAKE_XQA = """#!/usr/bin/env bash
# stands in for xqa: logs each call and writes what the real command would
echo "$*" >> calls.log
case "$1 $2" in
  "data train") mkdir -p "$4"; echo '{"train": 2}' > "$4/summary.jsonl" ;;
  "reader kit") out="${@: -1}"; mkdir -p "$out"; echo '{"kind": "kit"}' > "$out/config.json"; head -c 5000 /dev/urandom > "$out/rows.npy" ;;
  *) exit 9 ;;
esac
"""


def test_prepare_makes_the_kit_tarball_once_and_skips_what_is_there(repo):
    import tarfile

    xqa = repo / "fake-xqa"
    xqa.write_text(FAKE_XQA)
    xqa.chmod(0o755)
    (repo / "build/embedded/encoder").mkdir(parents=True)
    (repo / "build/embedded/encoder/config.json").write_text("{}")      # make embedded is not run
    env = {"PATH": "/usr/bin:/bin", "XQA": str(xqa)}

    def prepare():
        out = subprocess.run(["bash", str(PREPARE), "runs/carry"], cwd=repo, capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr + out.stdout
        return out.stdout

    first = prepare()
    assert (repo / "calls.log").read_text().splitlines() == [
        "data train --out runs/real", "reader kit --data runs/real --base build/embedded/encoder --out runs/kit"]
    with tarfile.open(repo / "runs/carry/kit.tar.xz") as tar:
        assert sorted(tar.getnames()) == ["kit", "kit/config.json", "kit/rows.npy"]
    assert not (repo / "runs/carry/kit.tar.xz.tmp").exists()
    assert re.search(r"tree 0\.0\d MB \+ carry 0\.0\d MB", first)   # counted with the corpus aside
    second = prepare()
    assert len((repo / "calls.log").read_text().splitlines()) == 2      # nothing made again
    assert second.count("there: skipped") == 4
