#!/usr/bin/env bash
# demo.sh — build fold and run the demo: 4 ranks on this host pass a token around a ring.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFOLD_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/foldrun -n 4 build/examples/ring_demo
