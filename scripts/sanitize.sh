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
# racecheck hazard is printed and listed by the source lines of its two accesses, and one whose
# write is a `.release.` and whose read an `.acquire.` access (both in asm statements) is counted
# as the tool's; any other fails the run. Printing every hazard is slow where there are many.
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
# racecheck's hazards in LOG (hazard report, every one printed) by the source lines of their
# accesses, each line's statement shown; exits 1 if a hazard has an access that is not a strong
# one of its kind (a write inside an asm statement with `.release.`, a read inside one with
# `.acquire.`), if the counts do not add up, or if the log has no summary.
classify_hazards() {
  python3 - "$root" "$1" <<'PY'
import collections, os, re, sys
root, log = sys.argv[1], sys.argv[2]
sources = collections.defaultdict(list)
for folder in ("executor", "tests"):
    for d, _, files in os.walk(os.path.join(root, folder)):
        for f in files:
            sources[f].append(os.path.join(d, f))
files = {}

def code_lines(path):
    if path not in files:
        text = open(path, errors="replace").read().splitlines()
        files[path] = [line.split("//")[0].strip() for line in text]
    return files[path]

# The asm statement a site's line lies in (line info names one of its lines), or "".
def asm_statement(site):
    name, _, number = site.rpartition(":")
    paths = sources.get(os.path.basename(name), [])
    if len(paths) != 1 or not number.isdigit():
        return ""
    lines, n = code_lines(paths[0]), int(number) - 1
    if not 0 <= n < len(lines):
        return ""
    for first in range(n, max(n - 8, -1), -1):
        if re.search(r"\basm\b", lines[first]):
            last = first
            while last < len(lines) and not lines[last].endswith(";"):
                last += 1
            return " ".join(lines[first:last + 1]) if last >= n else ""
        if first < n and lines[first].endswith(";"):
            return ""
    return ""

hazards = collections.Counter()
current = None
counted = None
for text in open(log, errors="replace"):
    if m := re.search(r"Potential (\w+) hazard", text):
        if current:
            hazards[(current[0], tuple(sorted(current[1])))] += 1
        current = (m.group(1), [])
    elif current and (m := re.search(r"(Write|Read) Thread .* in (\S+:\d+)\s*$", text)):
        current[1].append((m.group(1), m.group(2)))
    elif m := re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?", text):
        counted = (counted or 0) + int(m.group(1)) + int(m.group(2))
if current:
    hazards[(current[0], tuple(sorted(current[1])))] += 1

def strong(role, site):
    return (".release." if role == "Write" else ".acquire.") in asm_statement(site)

bad = 0
for (kind, accesses), count in sorted(hazards.items(), key=lambda item: -item[1]):
    tool = len(accesses) == 2 and all(strong(role, site) for role, site in accesses)
    bad += 0 if tool else count
    print(f"  {count:8d} {kind} " + " / ".join(f"{role.lower()} {site}" for role, site in accesses)
          + (": release/acquire, the tool's" if tool else ": NOT between strong accesses"))
    for role, site in accesses:
        print(f"           {site}: {asm_statement(site) or '(no asm statement found)'}")
shown = sum(hazards.values())
if counted is None:
    print("  no RACECHECK SUMMARY in the log")
    bad += 1
elif shown != counted:
    print(f"  {counted} hazards counted, {shown} printed")
    bad += 1
sys.exit(1 if bad else 0)
PY
}

# The tool's report on a release/acquire handover, reproduced alone: with the handover (variant
# 0) every hazard must be the tool's, with __syncthreads (1) there must be none.
handover=$build/tests/gpu/release_acquire_handover
for variant in 0 1; do
  log="$out/sanitize-racecheck-handover-$variant.log"
  echo "== racecheck: release_acquire_handover $variant"
  "$sanitizer" --tool racecheck --racecheck-report hazard --print-limit 100000000 \
    --show-backtrace no "$handover" "$variant" >"$log" 2>&1
  status=$?
  {
    echo "racecheck release_acquire_handover $variant: exit $status"
    grep -E "^variant|RACECHECK SUMMARY" "$log" | sed 's/^/  /'
    classify_hazards "$log"
  } | tee -a "$summary"
  classified=${PIPESTATUS[0]}
  if ((variant == 1)) && ! grep -q "RACECHECK SUMMARY: 0 hazards" "$log"; then classified=1; fi
  [[ $status -eq 0 && $classified -eq 0 ]] || failed=1
done

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
