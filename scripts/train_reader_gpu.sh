#!/usr/bin/env bash
# Train the span reader from a kit on one GPU in a fixed time, then copy what training changed
# (3 fp16 shards of at most 15 MiB, config.json) and the run's metrics into OUT.
#
#   scripts/train_reader_gpu.sh KIT.tar.xz OUT [MINUTES]
#
# KIT.tar.xz: 'xqa reader kit --out kit' packed with 'tar -cJf KIT.tar.xz kit'. The machine needs
# Python with torch, transformers, safetensors, numpy and tqdm, and nothing from the network.
# First 40 steps measure the speed; the run is then sized to MINUTES (default 5) of training:
# its steps, warm-up (5%) and validations (6) follow from the measured rate.
# Back on the CPU: xqa reader pack --reader OUT --base ENCODER --out xqa/models/span-reader
set -euo pipefail
KIT_TAR=${1:?kit tarball (tar -cJf KIT.tar.xz KIT)}
OUT=${2:?folder to copy the trained delta into}
MINUTES=${3:-5}
PY=${PY:-python3}
WORK=${WORK:-/tmp/xqa-reader}
BATCH=${BATCH:-64}
LR=${LR:-1e-4}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
# a rerun starts over: its run is sized anew, and a checkpoint of other settings is not resumed
rm -rf "$WORK/kit" "$WORK/speed" "$WORK/run"; mkdir -p "$WORK/kit" "$OUT"
tar -xJf "$KIT_TAR" -C "$WORK/kit"
KIT=$(echo "$WORK"/kit/*)
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, \
'device', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')"
common=(--family span --kit "$KIT" --batch-size "$BATCH" --lr "$LR" --negatives 1 --log-every 10)
start=$(date +%s)
$PY -m xqa.cli train reader "${common[@]}" --out "$WORK/speed" --max-steps 40 --dev-limit 1 --save-every 100000
steps=$($PY - "$WORK/speed/metrics.jsonl" "$MINUTES" "$BATCH" <<'PY'
import json, sys
rates = [r["examples_per_s"] for r in map(json.loads, open(sys.argv[1])) if "examples_per_s" in r]
rate = max(rates[1:] or rates)          # the first window holds the warm-up
print(int(rate * float(sys.argv[2]) * 60 / int(sys.argv[3])))
PY
)
echo "speed run: $(( $(date +%s) - start )) s; main run: $steps steps of $BATCH questions"
$PY -m xqa.cli train reader "${common[@]}" --out "$WORK/run" --max-steps "$steps" \
    --warmup-steps $(( steps / 20 )) --eval-every $(( steps / 6 )) --save-every $(( steps / 3 )) \
    --dev-limit 300 --max-minutes "$(awk "BEGIN {print $MINUTES * 1.25}")"
cp "$WORK"/run/best/* "$WORK/run/metrics.jsonl" "$OUT/"
echo "total $(( $(date +%s) - start )) s"; ls -la "$OUT"
