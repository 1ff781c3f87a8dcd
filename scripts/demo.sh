#!/usr/bin/env bash
# demo.sh — build fold and run the demo: KMeans (k = 10) on scikit-learn's digits with 4 ranks under foldrun,
# one line per superstep (moved distance, inertia, time), then scikit-learn's answer and time next to fold's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh demo
# Its own build directory: the test command's `build` keeps its tests.
echo "== building fold (Release) in build-demo/: about a minute on a fresh machine, seconds after that"
mkdir -p build-demo
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DFOLD_BUILD_TESTS=OFF >build-demo/build.log 2>&1 ||
  { tail -n 30 build-demo/build.log; echo "demo: cmake failed (build-demo/build.log)" >&2; exit 1; }
# cmake's [ NN%] lines, one every 10 percent: the build is moving
if ! cmake --build build-demo -j"$(nproc)" 2>&1 | tee -a build-demo/build.log |
  awk '/^\[ *[0-9]+%\]/ { p = substr($0, 2, index($0, "%") - 2) + 0; if (p >= nx) { printf "   %3d%%\n", p; fflush(); nx = p - p % 10 + 10 } }'; then
  tail -n 30 build-demo/build.log
  echo "demo: the build failed (build-demo/build.log)" >&2
  exit 1
fi
data=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
out=$(mktemp /tmp/fold-demo.XXXXXX)
trap 'rm -f "$out"' EXIT
echo "== fold: 4 ranks under foldrun"
build-demo/foldrun -n 4 build-demo/examples/kmeans_digits "$data" 10 "$out"
echo "== scikit-learn on the same data, from the same initial centroids"
/usr/bin/python3 examples/ml_ref.py kmeans "$data" 10 --compare "$out"
