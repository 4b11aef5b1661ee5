#!/usr/bin/env bash
# What a lent GPU machine needs to train the FiD, made on the CPU before any device time is spent
# (docs/reader.md, "Fusion-in-Decoder on real text"); a step whose output is there is skipped.
#
#   scripts/prepare_fid_gpu.sh [CARRY]        (default runs/gpu; needs ../shared/data or $XQA_DATA)
#
# 1. build/embedded (make embedded): the converted encoder the kit and the packed FiD are based on;
# 2. runs/real: xqa data train (every real train split, BM25 negatives);
# 3. runs/kit: xqa reader kit over the converted encoder;
# 4. CARRY/kit.tar.xz: the kit, compressed (39.0 MB), written under a temporary name, then renamed;
# 5. what one device call would carry with the corpus and the docs' pictures set aside
#    (scripts/gpu_tree.sh size --aside), and the calls to make.
# 8 min on 2 cores from a fresh clone with `make env` done. Settings (environment): XQA (the
# command, default .venv/bin/xqa), BUILD (build/embedded), DATA (runs/real), KIT (runs/kit).
set -euo pipefail
CARRY=${1:-runs/gpu}
XQA=${XQA:-.venv/bin/xqa}
BUILD=${BUILD:-build/embedded}
DATA=${DATA:-runs/real}
KIT=${KIT:-runs/kit}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1
[ -e .git ] && [ -f pyproject.toml ] || { echo "run from the repository's root" >&2; exit 2; }
[ -x "$XQA" ] || { echo "$XQA: not there (make env, or set XQA)" >&2; exit 2; }
step() { printf '\n== %s (%s)\n' "$1" "$(date +%H:%M:%S)"; }

step "1. $BUILD/encoder"
if [ -f "$BUILD/encoder/config.json" ]; then echo "   there: skipped"
else make embedded EMBEDDED="$BUILD"; fi

step "2. $DATA: training data from the real train splits"
if [ -s "$DATA/summary.jsonl" ]; then echo "   there: skipped"
else "$XQA" data train --out "$DATA"; fi

step "3. $KIT: the kit"
if [ -f "$KIT/config.json" ]; then echo "   there: skipped"
else "$XQA" reader kit --data "$DATA" --base "$BUILD/encoder" --out "$KIT"; fi

step "4. $CARRY/kit.tar.xz"
mkdir -p "$CARRY"
if [ -s "$CARRY/kit.tar.xz" ] && [ "$CARRY/kit.tar.xz" -nt "$KIT/config.json" ]; then echo "   there: skipped"
else
  tmp="$CARRY/kit.tar.xz.tmp"
  tar -C "$(dirname "$KIT")" -cf - "$(basename "$KIT")" | xz -T2 -6 > "$tmp"
  mv "$tmp" "$CARRY/kit.tar.xz"
fi
ls -l "$CARRY/kit.tar.xz"

step "5. one device call"
bash "$(dirname "$0")/gpu_tree.sh" size --aside "$CARRY"
cat <<MSG

next (docs/reader.md):
  scripts/gpu_tree.sh aside $CARRY
  call 1 (carry $CARRY, timeout_s 600): SCALE=0 scripts/train_fid_gpu.sh $CARRY/kit.tar.xz \$OUT 6
  call 2 (no carry): python3 -m xqa.cli bench reader --sizes base --train-only ... --json \$OUT/mt5-base-shape.json
  give_back; scripts/gpu_tree.sh back
  xqa reader pack --reader FILES_AT --base $BUILD/encoder --out xqa/models/fid-reader
MSG
