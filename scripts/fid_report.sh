#!/usr/bin/env bash
# The FiD against the span reader on the same questions, by the same metrics, once a FiD is in the
# embedded build (xqa/models/fid-reader, then `make embedded`): docs/reader.md's comparison, from
# documented commands, on the CPU.
#
#   scripts/fid_report.sh [OUT]        (default runs/fid-report; every step resumes where it stopped)
#
# 1. tunes evidence fusion for the FiD on the shipped corpus's tune questions (xqa search, xqa tune
#    fusion --n-context TUNE_N) and, with FUSION_OUT, writes it beside the shipped FiD and rebuilds,
#    so the build reads the FiD with what was tuned;
# 2. gold paragraph: xqa report gold for both readers on MLQA's same-language pairs and the
#    evaluation-only sets (GOLD_LIMIT questions a set or pair, the same ones for both);
# 3. end to end on the shipped corpus's test questions (PER_LANG a language, same language): the
#    span reader reading its 5 passages, the FiD reading each N of PASSAGES;
# 4. the same on the MLQA pool (MLQA dev as open retrieval; needs ../shared/data or $XQA_DATA):
#    MLQA_PER_LANG test questions a language;
# 5. CPU time per question (xqa bench reader) for each N and precision;
# 6. OUT/report.md: the tables.
#
# Settings (environment): XQA (the command, default .venv/bin/xqa), BUILD (build/embedded), FID
# (the FiD's name in the build, fid), TUNE_N (10), TUNE_LIMIT (tune questions, 0: all 1,307),
# FUSION_OUT (default xqa/models/fid-reader/fusion.json; empty: tune but keep the build as it is),
# GOLD_LIMIT (150), PER_LANG (50), MLQA_PER_LANG (100), PASSAGES ("5 10 20"), BENCH_QUESTIONS (20),
# PRECISIONS (fp32,bf16,int8), MLQA (0: skip the MLQA pool).
set -euo pipefail
OUT=${1:-runs/fid-report}
XQA=${XQA:-.venv/bin/xqa}
BUILD=${BUILD:-build/embedded}
FID=${FID:-fid}
TUNE_N=${TUNE_N:-10}
TUNE_LIMIT=${TUNE_LIMIT:-0}
FUSION_OUT=${FUSION_OUT-xqa/models/fid-reader/fusion.json}
GOLD_LIMIT=${GOLD_LIMIT:-150}
PER_LANG=${PER_LANG:-50}
MLQA_PER_LANG=${MLQA_PER_LANG:-100}
PASSAGES=${PASSAGES:-5 10 20}
BENCH_QUESTIONS=${BENCH_QUESTIONS:-20}
PRECISIONS=${PRECISIONS:-fp32,bf16,int8}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False PYTHONUNBUFFERED=1
Q=xqa/corpus/questions.jsonl.gz
CONFIG=$BUILD/pipeline.json
SPAN=$BUILD/reader
READER=$BUILD/readers/$FID
[ -f "$CONFIG" ] || { echo "$CONFIG: no build there (make embedded)" >&2; exit 2; }
[ -d "$READER" ] || { echo "$READER: the build has no reader '$FID' (put a packed FiD in xqa/models/fid-reader and run make embedded, or xqa build --also-reader $FID=DIR)" >&2; exit 2; }
mkdir -p "$OUT"
step() { printf '\n== %s (%s)\n' "$1" "$(date +%H:%M:%S)"; }
done_file() { [ -s "$1" ] && echo "   $1 is there: skipped"; }

step "1. evidence fusion for $FID, tuned on the shipped corpus's tune questions"
done_file "$OUT/tune.retrieved.jsonl" || \
  "$XQA" search --config "$CONFIG" --questions "$Q" --where split=tune --k 20 --out "$OUT/tune.retrieved.jsonl"
done_file "$OUT/fusion.json" || \
  "$XQA" tune fusion --model "$READER" --dev "$OUT/tune.retrieved.jsonl" --n-context "$TUNE_N" \
      --limit "$TUNE_LIMIT" --cache "$OUT/tune-cache" --out "$OUT/fusion.json"
if [ -n "$FUSION_OUT" ] && ! cmp -s "$OUT/fusion.json" "$FUSION_OUT"; then
  cp "$OUT/fusion.json" "$FUSION_OUT"
  echo "   wrote $FUSION_OUT; the build reads $FID with it after a rebuild:"
  "$XQA" embedded build --out "$BUILD"
fi

step "2. gold paragraph: both readers, the same questions"
for name in span "$FID"; do
  model=$([ "$name" = span ] && echo "$SPAN" || echo "$READER")
  done_file "$OUT/gold-$name.json" || \
    "$XQA" report gold --model "$model" --limit "$GOLD_LIMIT" --json "$OUT/gold-$name.json"
done

answer() {   # answer CONFIG QUESTIONS PER_LANG READER N NAME: answers and their MIA 2022 scores
  local config=$1 questions=$2 per_lang=$3 reader=$4 n=$5 name=$6
  done_file "$OUT/$name.eval.json" && return
  "$XQA" answer --config "$config" --questions "$questions" --where split=test --where crosslingual=false \
      --per-lang "$per_lang" --reader "$reader" --n-passages "$n" --out "$OUT/$name"
  "$XQA" eval --gold "$questions" --where split=test --where crosslingual=false --per-lang "$per_lang" \
      --predictions "$OUT/$name/predictions.json" --json "$OUT/$name.eval.json"
}

step "3. end to end, the shipped corpus's test questions"

answer "$CONFIG" "$Q" "$PER_LANG" span 5 "corpus-span-5"
for n in $PASSAGES; do answer "$CONFIG" "$Q" "$PER_LANG" "$FID" "$n" "corpus-$FID-$n"; done

step "4. end to end, the MLQA pool"
if [ "${MLQA:-1}" = 0 ]; then
  echo "   MLQA=0: skipped"
elif ! "$XQA" data corpus --help >/dev/null 2>&1 || [ ! -d "${XQA_DATA:-../shared/data}/mlqa" ]; then
  echo "   no MLQA under ${XQA_DATA:-../shared/data}: skipped"
else
  [ -s "$OUT/mlqa/questions.jsonl.gz" ] || "$XQA" data corpus --mlqa-pool --per-language 0 --out "$OUT/mlqa"
  "$XQA" build --passages "$OUT/mlqa/passages.jsonl.gz" --also-reader "$FID=$READER" --out "$OUT/mlqa-build"
  answer "$OUT/mlqa-build/pipeline.json" "$OUT/mlqa/questions.jsonl.gz" "$MLQA_PER_LANG" span 5 "mlqa-span-5"
  for n in $PASSAGES; do
    answer "$OUT/mlqa-build/pipeline.json" "$OUT/mlqa/questions.jsonl.gz" "$MLQA_PER_LANG" "$FID" "$n" "mlqa-$FID-$n"
  done
fi

step "5. CPU time a question"
done_file "$OUT/bench-$FID.json" || \
  "$XQA" bench reader --reader "$READER" --passages "${PASSAGES// /,}" --precisions "$PRECISIONS" \
      --questions "$BENCH_QUESTIONS" --json "$OUT/bench-$FID.json"

step "6. $OUT/report.md"
"$XQA" report fid "$OUT" --fid "$FID" --passages $PASSAGES --out "$OUT/report.md"
