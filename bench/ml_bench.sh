#!/usr/bin/env bash
# ml_bench.sh — the figures of docs/iterq.md: KMeans (1,000,000 x 32, k = 16, 10 supersteps) and logistic
# regression (200,000 x 32) with fold at 1 and 2 ranks next to scikit-learn at 1 and 2 threads, and the cost
# of the queue's per-superstep status exchange. Usage: bench/ml_bench.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
scripts/deps.sh bench
cmake --build "$B" -j2 --target foldrun fold-mlbench >/dev/null
R="$B/foldrun"
M="$B/bench/fold-mlbench"
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in 1 2; do "$R" -n "$n" --bind core "$M" kmeans 1000000 32 16 10; done
for t in 1 2; do OMP_NUM_THREADS=$t /usr/bin/python3 bench/ml_sklearn.py kmeans 1000000 32 16 10 | sed "s/^/[$t threads] /"; done
for n in 2 4; do "$R" -n "$n" "$M" exchange 20000; done
for n in 1 2; do "$R" -n "$n" --bind core "$M" logreg 200000 32; done
/usr/bin/python3 bench/ml_sklearn.py logreg 200000 32 2>/dev/null
