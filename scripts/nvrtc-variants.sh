#!/usr/bin/env bash
# On the GPU machine: time variants of the tile headers that mk regions compile with NVRTC, in
# one process-free sweep, without rebuilding megacut.
#
#   scripts/nvrtc-variants.sh MEGACUT ROUNDS [PATCH...] -- RUN_ARGS...
#
# Variant "base" is this tree; each PATCH (a unified diff against it, `git diff` output) is
# applied to a copy of the tree's tracked files. Each round runs `MEGACUT run RUN_ARGS` once per
# variant, in turn, with MEGACUT_SOURCE_DIR naming the variant's tree (megacut compiles its
# regions from those headers; the header text is part of the kernel cache key). Prints, per
# variant, each round's TTFO and decode step p50 and their medians, in ms. RUN_ARGS should name
# an mk composition: conventional kernels are compiled into megacut, not read from the headers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -lt 4 ]]; then
  sed -n '4,13p' "$0" >&2
  exit 2
fi
megacut=$1
rounds=$2
shift 2
patches=()
while [[ $# -gt 0 && $1 != -- ]]; do
  patches+=("$(realpath "$1")")
  shift
done
[[ ${1:-} == -- ]] || { echo "nvrtc-variants: RUN_ARGS must follow --" >&2; exit 2; }
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

names=(base)
trees=("$root")
for patch in "${patches[@]}"; do
  name=$(basename "$patch")
  name=${name%.*}
  tree=$work/$name
  mkdir -p "$tree"
  # The tracked files the work tree has (a copy of it may lack files its index still lists).
  (cd "$root" && git ls-files -z | while IFS= read -r -d '' f; do
    [[ -e $f ]] && printf '%s\0' "$f"
  done | xargs -0 cp --parents -t "$tree")
  if ! (cd "$tree" && git apply "$patch"); then
    echo "nvrtc-variants: $patch does not apply to this tree" >&2
    exit 1
  fi
  names+=("$name")
  trees+=("$tree")
done

# p50 of the line of `megacut run` output starting with $1 ("TTFO", "decode step").
p50_of() { sed -n "s/^$1 .* p50 \([0-9.]*\).*/\1/p" | head -n 1; }

declare -A ttfo decode
for ((r = 1; r <= rounds; ++r)); do
  for i in "${!names[@]}"; do
    log=$work/${names[$i]}-$r.log
    if ! MEGACUT_SOURCE_DIR=${trees[$i]} "$megacut" run "$@" >"$log" 2>&1; then
      echo "nvrtc-variants: ${names[$i]}, round $r failed:" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
    ttfo[${names[$i]}]+="$(p50_of TTFO <"$log") "
    decode[${names[$i]}]+="$(p50_of 'decode step' <"$log") "
    echo "round $r ${names[$i]}: TTFO p50 $(p50_of TTFO <"$log") ms, decode step p50 $(p50_of 'decode step' <"$log") ms"
  done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo
printf '%-24s %12s %16s   (each round: TTFO / decode step)\n' variant "TTFO p50" "decode step p50"
for name in "${names[@]}"; do
  printf '%-24s %12s %16s   %s / %s\n' "$name" "$(median <<<"${ttfo[$name]}")" \
    "$(median <<<"${decode[$name]}")" "${ttfo[$name]}" "${decode[$name]}"
done
