#!/usr/bin/env bash
# Fails when a C++ or CUDA source differs from clang-format (Google style, 100 columns).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mapfile -t files < <(find app model simulator planner validation profiler executor tests \
    \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort)
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
