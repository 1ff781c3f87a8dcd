#!/usr/bin/env bash
# osu.sh — OMB's osu_allreduce and osu_latency, unmodified, on fold (fold-mpicc, fold-mpiexec) and on Open MPI
# (mpicc.openmpi, mpirun.openmpi) at n = 2 on this host: ROUNDS paired runs, fold and Open MPI alternating, then
# per size the median latency of each, the median, min and max of the per-round ratio fold / Open MPI (< 1: fold
# is faster), and the best (lowest) run of each with their ratio: on a loaded machine a run's average is
# dominated by the times a rank lost its core, and the best run is the nearest to an unloaded one.
# Last, the layer's own cost: osu_allreduce at 8 B on fold next to fold-bench's 8 B allreduce, paired the same
# way. docs/mpi.md shows a run.
# Usage: bench/osu.sh [BUILD_DIR [OMB_DIR [ROUNDS [MAX_BYTES]]]]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$here/build}" && pwd)
O=${2:-$here/../shared/external/osu-micro-benchmarks-5.7}
[ -d "$O" ] || O=$here/../../shared/external/osu-micro-benchmarks-5.7
R=${3:-5}
M=${4:-4096}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
build() { # build CC DIR
  mkdir -p "$T/$2"
  for b in collective/osu_allreduce pt2pt/osu_latency; do
    "$1" -O2 -I"$O/util" "$O/util/osu_util.c" "$O/util/osu_util_mpi.c" "$O/mpi/$b.c" -o "$T/$2/$(basename $b)" -lm
  done
}
build "$B/fold-mpicc" fold
build mpicc.openmpi ompi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
run() { # run IMPL BENCH ARGS... -> "size latency" lines
  local impl=$1 bench=$2; shift 2
  if [ "$impl" = fold ]; then
    "$B/fold-mpiexec" -n 2 "$T/fold/$bench" "$@" | sed 's/^\[0\] //'
  else
    mpirun.openmpi -n 2 "$T/ompi/$bench" "$@"
  fi | awk '$1 ~ /^[0-9]+$/ && NF == 2 { print $1, $2 }'
}
for bench in osu_allreduce osu_latency; do
  min=4; [ $bench = osu_latency ] && min=0
  : >"$T/$bench.rows"
  for r in $(seq "$R"); do
    for impl in fold ompi; do
      run $impl $bench -m $min:$M -i 1000 -x 100 | sed "s/^/$impl $r /" >>"$T/$bench.rows"
    done
  done
  echo "## $bench, 2 ranks, $R paired rounds (us; ratio = fold / Open MPI per round)"
  printf '| %8s | %10s | %10s | %12s | %16s | %9s | %9s | %10s |\n' bytes "fold" "Open MPI" "ratio median" \
    "ratio min - max" "fold best" "OMPI best" "best ratio"
  printf '|---:|---:|---:|---:|---:|---:|---:|---:|\n'
  awk -v R="$R" '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { v[$1, $2, $3] = $4; if (!($3 in seen)) { seen[$3] = 1; order[++ns] = $3 } }
    END {
      for (k = 1; k <= ns; k++) {
        s = order[k]; n = 0; lo = 1e9; hi = 0
        for (r = 1; r <= R; r++) if (((("fold", r, s) in v)) && (("ompi", r, s) in v) && v["ompi", r, s] > 0) {
          n++; f[n] = v["fold", r, s]; o[n] = v["ompi", r, s]; q[n] = f[n] / o[n]
          if (q[n] < lo) lo = q[n]; if (q[n] > hi) hi = q[n]
          if (n == 1 || f[n] < fb) fb = f[n]; if (n == 1 || o[n] < ob) ob = o[n]
        }
        if (n) printf "| %8s | %10.2f | %10.2f | %12.2f | %7.2f - %-6.2f | %9.2f | %9.2f | %10.2f |\n", s, med(f, n), med(o, n), med(q, n), lo, hi, fb, ob, fb / ob
      }
    }' "$T/$bench.rows"
  echo
done
# the layer's cost: the same 8 B float sum through mpi.h (OMB) and through fold.h (fold-bench). They time
# differently: OMB reports the mean of every rank's per-call times, fold-bench the median over calls of the
# slowest rank's time; both put a barrier before each timed call.
echo "## the MPI layer's cost: 8 B allreduce, 2 ranks, $R paired rounds (us)"
printf '| %6s | %22s | %18s | %10s |\n' round "osu_allreduce on fold" "fold-bench median" difference
printf '|---:|---:|---:|---:|\n'
for r in $(seq "$R"); do
  o=$("$B/fold-mpiexec" -n 2 "$T/fold/osu_allreduce" -m 8:8 -i 2000 -x 200 | awk '$2 == 8 { print $3 }')
  f=$("$B/foldrun" -n 2 "$B/fold-bench" -b 8 -e 8 -n 2000 -w 200 -c allreduce -d float32 |
      awk '$2 == 8 && $4 == "float32" { print $7 }')
  printf '| %6s | %22s | %18s | %10s |\n' "$r" "$o" "$f" "$(awk -v a="$o" -v b="$f" 'BEGIN { printf "%+.2f", a - b }')"
done
