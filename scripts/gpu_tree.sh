#!/usr/bin/env bash
# A lent GPU machine receives at most 64 MiB a call: the working tree's tracked (and untracked, not
# ignored) files plus what the call carries. A FiD training run there reads the code, the span
# reader and the kit, not the embedded corpus or the docs' pictures; setting those aside for the
# call leaves room to carry the whole kit at once.
#
#   scripts/gpu_tree.sh aside [CARRY ...]   move them into runs/aside/, print what would travel
#   scripts/gpu_tree.sh back                move them back and check the tree is whole again
#   scripts/gpu_tree.sh size [CARRY ...]    print what would travel, moving nothing
#   scripts/gpu_tree.sh size --aside [CARRY ...]   the same as if they were set aside
#
# CARRY: the paths the call will carry (counted with the tree). Run from the repository's root.
set -euo pipefail
ASIDE=runs/aside
LIMIT=$((64 * 1024 * 1024))
PATHS=(xqa/corpus/prebuilt xqa/corpus/passages.jsonl.gz xqa/corpus/questions.jsonl.gz
       docs/demo.png docs/fusion-recall.png docs/selective-test.png)

[ -e .git ] && [ -f pyproject.toml ] || { echo "run from the repository's root" >&2; exit 2; }

SKIP=()    # paths counted as set aside (size --aside)

aside_path() {   # is $1 one of PATHS or inside one?
  local p
  for p in "${SKIP[@]}"; do [ "$1" = "$p" ] || [ "${1#"$p"/}" != "$1" ] && return 0; done
  return 1
}

size() {   # bytes of the tree that travels and of each carried path
  local tree carry=0
  tree=$(git ls-files -z --cached --others --exclude-standard \
         | while IFS= read -r -d '' f; do
             if [ -f "$f" ] && [ ! -L "$f" ] && ! aside_path "$f"; then stat -c %s "$f"; fi; done \
         | awk '{s += $1} END {print s + 0}')
  for p in "$@"; do
    [ -e "$p" ] || { echo "carry path $p does not exist" >&2; exit 2; }
    carry=$(( carry + $(du -sbL "$p" | cut -f1) ))
  done
  awk -v t="$tree" -v c="$carry" -v l="$LIMIT" 'BEGIN {
    printf "tree %.2f MB + carry %.2f MB = %.2f MB of %.2f MB (64 MiB)\n", t/1e6, c/1e6, (t+c)/1e6, l/1e6 }'
  [ $(( tree + carry )) -le "$LIMIT" ] || { echo "over the limit: this call would be refused" >&2; return 1; }
}

case "${1:-}" in
  aside)
    shift
    moved=()
    for p in "${PATHS[@]}"; do
      [ -e "$p" ] || continue
      mkdir -p "$ASIDE/$(dirname "$p")"
      [ -e "$ASIDE/$p" ] && { echo "$ASIDE/$p exists already: run '$0 back' first" >&2; exit 2; }
      mv "$p" "$ASIDE/$p"
      moved+=("$p")
    done
    echo "set aside in $ASIDE: ${moved[*]:-nothing (already aside?)}"
    echo "after the GPU calls: $0 back"
    size "$@"
    ;;
  back)
    for p in "${PATHS[@]}"; do
      [ -e "$ASIDE/$p" ] || continue
      [ -e "$p" ] && { echo "$p exists in the tree and in $ASIDE: left both, resolve by hand" >&2; exit 2; }
      mkdir -p "$(dirname "$p")"
      mv "$ASIDE/$p" "$p"
    done
    missing=$(git ls-files --deleted)
    [ -z "$missing" ] || { echo "still missing from the tree:"; echo "$missing"; exit 1; } >&2
    echo "the tree is whole again"
    ;;
  size)
    shift
    if [ "${1:-}" = --aside ]; then shift; SKIP=("${PATHS[@]}"); fi
    size "$@"
    ;;
  *)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
