#!/usr/bin/env bash
# Installs what megacut needs to build and test on a Debian/Ubuntu machine, with apt-get.
# A no-op when everything is already there, so every other script may call it first.
set -euo pipefail

# package -> a file whose presence shows it is installed (dpkg queries are slow on CI).
declare -A probe=(
  [g++]=/usr/bin/g++
  [cmake]=/usr/bin/cmake
  [ninja-build]=/usr/bin/ninja
  [libboost-graph-dev]=/usr/include/boost/graph/adjacency_list.hpp
  [libeigen3-dev]=/usr/include/eigen3/Eigen/Dense
  [nlohmann-json3-dev]=/usr/include/nlohmann/json.hpp
  [libcli11-dev]=/usr/include/CLI/CLI.hpp
  [libgtest-dev]=/usr/include/gtest/gtest.h
  [clang-format]=/usr/bin/clang-format
  [python3-matplotlib]=/usr/lib/python3/dist-packages/matplotlib/__init__.py
)

missing=()
for pkg in "${!probe[@]}"; do
  if [[ ! -e "${probe[$pkg]}" ]]; then missing+=("$pkg"); fi
done
# matplotlib counts as present when any python3 on the PATH can import it.
if [[ " ${missing[*]} " == *" python3-matplotlib "* ]] &&
   python3 -c 'import matplotlib' 2>/dev/null; then
  missing=("${missing[@]/python3-matplotlib/}")
fi
read -r -a missing <<< "${missing[*]}"
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
