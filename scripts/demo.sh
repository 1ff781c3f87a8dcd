#!/usr/bin/env bash
# demo.sh — build fold and run the demo: KMeans (k = 10) on scikit-learn's digits with 4 ranks under foldrun,
# one line per superstep (moved distance, inertia, time), then scikit-learn's answer on the same data next to fold's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh demo
# Its own build directory: the test command's `build` keeps its tests.
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DFOLD_BUILD_TESTS=OFF >/dev/null
cmake --build build-demo -j"$(nproc)" >/dev/null
data=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
out=$(mktemp /tmp/fold-demo.XXXXXX)
trap 'rm -f "$out"' EXIT
build-demo/foldrun -n 4 build-demo/examples/kmeans_digits "$data" 10 "$out"
/usr/bin/python3 examples/ml_ref.py kmeans "$data" 10 --compare "$out"
