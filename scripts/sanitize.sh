#!/usr/bin/env bash
# The megakernel and PDL GPU tests on the tiny configs, and the argmax and wide-block tile
# tests, under compute-sanitizer: racecheck (shared-memory hazards between the threads of a
# block), synccheck (barriers used wrongly) and memcheck (out-of-bounds and misaligned
# accesses). Writes each tool's full log and a summary of all to OUT_DIR; fails if a tool
# reports an error or a test fails. Slow: gpu-check runs it only when asked
# (MEGACUT_GPU_STEPS="... sanitize").
#
# racecheck has no model of release/acquire: it reports a hazard on a flag in shared memory
# written with st.release and polled with ld.acquire, which the PTX memory model orders
# (tests/gpu/release_acquire_handover.cu reproduces it alone, and is run first). So every
# racecheck hazard is listed by its two source lines, and one whose write and read are both such
# strong operations (a `.release.` and an `.acquire.` access) is counted as the tool's; any
# other fails the run.
# Usage: scripts/sanitize.sh [BUILD_DIR] [OUT_DIR]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/gpu}
out=${2:-$root/build/sanitize}
mkdir -p "$out"

sanitizer=$(command -v compute-sanitizer || true)
[[ -z "$sanitizer" && -x /usr/local/cuda/bin/compute-sanitizer ]] &&
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
if [[ -z "$sanitizer" ]]; then
  echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin): sanitize skipped" |
    tee "$out/sanitize-summary.txt"
  exit 0
fi

export MEGACUT_CONFIGS=$root/configs
# The tiny-config cases only: Llama-3.2-1B under the sanitizer would take hours.
suites=("tests/gpu/megakernel_gpu_test:MegakernelGpu.*:-*Llama1b*"
        "tests/gpu/pdl_gpu_test:PdlGpu.Tiny*"
        "tests/gpu/gpu_kernels_test:Shapes/ArgmaxTest.*:WideBlock.*")
summary="$out/sanitize-summary.txt"
: >"$summary"
failed=0
# racecheck's hazards in LOG by their write and read lines, each line's source shown; exits 1 if
# one is not between two strong (release/acquire) accesses or if not every hazard was printed.
classify_hazards() {
  python3 - "$root" "$1" <<'PY'
import collections, os, re, sys
root, log = sys.argv[1], sys.argv[2]
sources = collections.defaultdict(list)
for folder in ("executor", "tests"):
    for d, _, files in os.walk(os.path.join(root, folder)):
        for f in files:
            sources[f].append(os.path.join(d, f))
# The statement that ends at a site's line (line info names an asm statement's last line).
def line_of(site):
    name, _, number = site.rpartition(":")
    paths = sources.get(name, [])
    if len(paths) != 1 or not number.isdigit():
        return ""
    lines = [l.strip() for l in open(paths[0], errors="replace").read().splitlines()]
    n = int(number)
    if not 0 < n <= len(lines):
        return ""
    for first in range(n - 1, max(n - 7, -1), -1):
        if first < n - 1 and lines[first].endswith(";"):
            break
        if "asm" in lines[first]:
            return " ".join(lines[first:n])
    return lines[n - 1]
pairs = collections.Counter()
kind = write = None
errors = None
for text in open(log, errors="replace"):
    if m := re.search(r"Potential (\w+) hazard", text):
        kind, write = m.group(1), None
    elif m := re.search(r"(Write|Read) Thread .* in (\S+:\d+)\s*$", text):
        if m.group(1) == "Write":
            write = m.group(2)
        elif kind is not None:
            pairs[(kind, write or "?", m.group(2))] += 1
            kind = None
    elif m := re.search(r"RACECHECK SUMMARY: \d+ hazards displayed \((\d+) errors", text):
        errors = (errors or 0) + int(m.group(1))
strong = lambda site, order: f".{order}." in line_of(site)
bad = 0
for (k, w, r), count in sorted(pairs.items(), key=lambda item: -item[1]):
    tool = strong(w, "release") and strong(r, "acquire")
    bad += 0 if tool else count
    print(f"  {count:8d} {k} write {w} / read {r}: "
          + ("release/acquire, the tool's" if tool else "NOT between strong accesses"))
    for site in (w, r):
        print(f"           {site}: {line_of(site) or '(source not found)'}")
shown = sum(pairs.values())
if errors is not None and shown != errors:
    print(f"  {errors} errors reported, {shown} printed: raise --print-limit")
    bad += 1
sys.exit(1 if bad else 0)
PY
}

echo "== racecheck: a release/acquire handover alone, and with __syncthreads"
for variant in 0 1; do
  "$sanitizer" --tool racecheck --show-backtrace no "$build/tests/gpu/release_acquire_handover" \
    "$variant" 2>&1 | grep -E "variant|RACECHECK SUMMARY" | sed 's/^/  /'
done | tee -a "$summary"

for tool in racecheck synccheck memcheck; do
  for suite in "${suites[@]}"; do
    binary=$build/${suite%%:*}
    filter=${suite#*:}
    log="$out/sanitize-$tool-$(basename "$binary").log"
    echo "== $tool: $(basename "$binary") --gtest_filter=$filter"
    if [[ $tool == racecheck ]]; then
      # Every hazard printed (no backtraces), then sorted by site: those of the tool pass.
      "$sanitizer" --tool racecheck --racecheck-report hazard --print-limit 100000000 \
        --show-backtrace no "$binary" --gtest_filter="$filter" >"$log" 2>&1
    else
      "$sanitizer" --tool "$tool" --error-exitcode 1 "$binary" --gtest_filter="$filter" >"$log" 2>&1
    fi
    status=$?
    {
      echo "$tool $(basename "$binary") ($filter): exit $status"
      grep -E "(RACECHECK|ERROR) SUMMARY|^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test" "$log" |
        sed 's/^/  /'
      [[ $tool != racecheck ]] || classify_hazards "$log"
    } | tee -a "$summary"
    classified=${PIPESTATUS[0]}
    [[ $status -eq 0 && $classified -eq 0 ]] || failed=1
  done
done
exit $failed
