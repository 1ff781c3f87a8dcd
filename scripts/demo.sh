#!/usr/bin/env bash
# demo.sh — build fold and run the demo: 4 ranks on this host pass a token around a ring.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
# Its own build directory: the test command's `build` keeps its tests.
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DFOLD_BUILD_TESTS=OFF >/dev/null
cmake --build build-demo -j"$(nproc)" >/dev/null
exec build-demo/foldrun -n 4 build-demo/examples/ring_demo
