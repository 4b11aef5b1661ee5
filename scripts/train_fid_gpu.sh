#!/usr/bin/env bash
# On one GPU, in one go: time a FiD of google/mt5-base's shape (random weights, its 250k vocabulary)
# training with 100 passages x 250 tokens a question, then train the warm-started FiD (multilingual-
# e5-small's encoder, a decoder warm-started from it) from a kit for a fixed time, and copy what
# training changed (fp16 shards of at most 15 MiB, vocab.npy, config.json), its metrics and the
# mt5-base-shape table into OUT: the shards, config.json and vocab.npy as they are, and the log, the
# metrics, the machine and the mt5-base-shape table in report.tar (at most 8 files of at most 16 MiB
# come back from a lent machine; 4 decoder layers make 5 shards, 63 MB in all).
#
#   scripts/train_fid_gpu.sh KIT.tar.xz OUT [MINUTES]
#
# KIT.tar.xz: 'xqa reader kit --out kit' packed with 'tar -cJf KIT.tar.xz kit'. The machine needs
# Python with torch, transformers, safetensors, numpy and tqdm, and nothing from the network.
# Settings (environment): N_CONTEXT (passages a question reads, 10), DECODER_LAYERS (4), SHARE=1
# (the decoder shares the encoder's layers), ENCODER_INIT (a packed span reader to start the
# encoder from, e.g. xqa/models/span-reader; empty: the kit's e5), COPY (guided cross-attention
# weight; empty: none), BATCH (32), LR (1e-4), DEV_LIMIT (dev questions validated, 300), SCALE=0
# (skip the mt5-base-shape timing), BUDGET_S (seconds the whole script may take, 540).
# First 30 steps measure the speed; the run is then sized to MINUTES (default 6) of training, or
# to what BUDGET_S leaves, whichever is less, and stops (resumable) at that time whatever its step.
# Back on the CPU: xqa reader pack --reader OUT --base ENCODER --out xqa/models/fid-reader
set -euo pipefail
KIT_TAR=${1:?kit tarball (tar -cJf KIT.tar.xz KIT)}
OUT=${2:?folder to copy the trained delta into}
MINUTES=${3:-6}
PY=${PY:-python3}
WORK=${WORK:-/tmp/xqa-fid}
BATCH=${BATCH:-32}
LR=${LR:-1e-4}
N_CONTEXT=${N_CONTEXT:-10}
DECODER_LAYERS=${DECODER_LAYERS:-4}
DEV_LIMIT=${DEV_LIMIT:-300}
BUDGET_S=${BUDGET_S:-540}     # the whole script, under the 600 s a lent machine gives one command
start=$(date +%s)
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
REPORT=$WORK/report
# a rerun starts over: its run is sized to the time left, and a checkpoint of other settings is not resumed
rm -rf "$WORK/kit" "$WORK/speed" "$WORK/run" "$REPORT"; mkdir -p "$WORK/kit" "$REPORT" "$OUT"
exec > >(tee -a "$REPORT/log.txt") 2>&1
tar -xJf "$KIT_TAR" -C "$WORK/kit"
KIT=$(echo "$WORK"/kit/*)
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, \
'device', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')" | tee "$REPORT/machine.txt"
if [ "${SCALE:-1}" != 0 ]; then
  $PY -m xqa.cli bench reader --sizes base --train-only --train-passages 100 --length 250 --train-batch 1 \
      --train-steps 3 --answer-len 8 --device cuda --bf16 --gradient-checkpointing \
      --json "$REPORT/mt5-base-shape.json" | tee "$REPORT/mt5-base-shape.txt"
  echo "mt5-base shape: $(( $(date +%s) - start )) s"
fi
common=(--family fid --kit "$KIT" --batch-size "$BATCH" --lr "$LR" --n-context "$N_CONTEXT"
        --decoder-layers "$DECODER_LAYERS" --log-every 10)
[ "${SHARE:-0}" = 1 ] && common+=(--share-layers --decoder-layers 0)
[ -n "${ENCODER_INIT:-}" ] && common+=(--encoder-init "$ENCODER_INIT")
[ -n "${COPY:-}" ] && common+=(--copy-attention "$COPY")
$PY -m xqa.cli train reader "${common[@]}" --out "$WORK/speed" --max-steps 30 --dev-limit 1 --save-every 100000
# what is left of BUDGET_S, less 75 s for the model's start, the last validation, saving and copying
left=$(( BUDGET_S - ($(date +%s) - start) - 75 ))
[ "$left" -ge 60 ] || { echo "only $left s left of BUDGET_S=$BUDGET_S for training: stopping"; exit 1; }
minutes=$(awk "BEGIN {m = $MINUTES; l = $left / 60; print (l < m ? l : m)}")
steps=$($PY - "$WORK/speed/metrics.jsonl" "$minutes" "$BATCH" <<'PY'
import json, sys
rates = [r["examples_per_s"] for r in map(json.loads, open(sys.argv[1])) if "examples_per_s" in r]
rate = max(rates[1:] or rates)          # the first window holds the warm-up
print(max(10, int(0.9 * rate * float(sys.argv[2]) * 60 / int(sys.argv[3]))))   # 10 %: validations
PY
)
echo "speed run done at $(( $(date +%s) - start )) s; main run: $steps steps of $BATCH questions, at most $minutes min"
$PY -m xqa.cli train reader "${common[@]}" --out "$WORK/run" --max-steps "$steps" \
    --warmup-steps $(( steps / 20 )) --eval-every $(( steps / 5 )) --save-every $(( steps / 3 )) \
    --dev-limit "$DEV_LIMIT" --max-minutes "$minutes"
cp "$WORK"/run/best/* "$OUT/"
cp "$WORK/run/metrics.jsonl" "$REPORT/"
echo "total $(( $(date +%s) - start )) s"
tar -cf "$OUT/report.tar" -C "$REPORT" .
ls -la "$OUT"
files=$(find "$OUT" -type f | wc -l); big=$(find "$OUT" -type f -size +16M | wc -l)
[ "$files" -le 8 ] && [ "$big" = 0 ] || echo "WARNING: $files files, $big over 16 MiB: not all of OUT comes back"

