#!/bin/sh
# skip_bench.sh — ring vs ring_skip vs the default, with and without a straggler (issue 10): medians of repeated fold-bench runs.
#
# usage: skip_bench.sh BUILD_DIR TRANSPORT "SIZES" "DELAYS_MS" REPS [ITERS]
# e.g.   skip_bench.sh build shm "1M 4M 16M" "0 2" 7
# Each (size, delay, algorithm) is run REPS times, interleaved (so a burst
# of load from another process hits every algorithm alike), each run the
# mean of ITERS timed iterations (out-of-place column of fold-bench); the
# median of the REPS is printed. Rank 1 is the straggler:
# FOLD_INJECT_DELAY=1:<delay> delays it before each local reduction.
# A delay written "Ns" (e.g. 2s) is N normal steps: N times the measured
# no-delay ring time divided by 2(n-1), the number of ring steps.
# Output: one CSV line per (transport,size,delay,algo): median us, and the
# runs.
set -eu
B=$1 TP=$2 SIZES=$3 DELAYS=$4 REPS=$5 ITERS=${6:-10}
N=${FOLD_BENCH_N:-4}
one() { # size delay_s algo -> microseconds
  if [ "$3" = default ]; then A=auto; else A=$3; fi
  FOLD_INJECT_DELAY=1:$2 "$B/foldrun" -n "$N" --transport "$TP" "$B/fold-bench" -b "$1" -e "$1" -a "$A" \
    -n "$ITERS" -w 2 2>/dev/null | awk '$1=="[0]" && $2 ~ /^[0-9]+$/ {print $7; exit}'
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "transport,n,size,delay_ms,algo,median_us,runs"
for S in $SIZES; do
  base=""
  for D in $DELAYS; do
    case $D in
      *s) [ -n "$base" ] || { r=""; for i in $(seq "$REPS"); do r="$r $(one "$S" 0 ring)"; done; base=$(echo "$r" | median); }
          ms=$(awk -v b="$base" -v k="${D%s}" -v n="$N" 'BEGIN {printf "%.4f", k * b / (2 * (n - 1)) / 1000}') ;;
      *) ms=$D ;;
    esac
    ds=$(awk -v m="$ms" 'BEGIN {printf "%.6f", m / 1000}')
    rr=""; rs=""; rd=""
    for i in $(seq "$REPS"); do
      rr="$rr $(one "$S" "$ds" ring)"; rs="$rs $(one "$S" "$ds" ring_skip)"; rd="$rd $(one "$S" "$ds" default)"
    done
    for a in ring ring_skip default; do
      case $a in ring) r=$rr ;; ring_skip) r=$rs ;; default) r=$rd ;; esac
      echo "$TP,$N,$S,$ms,$a,$(echo "$r" | median),$(echo $r | tr ' ' ';')"
    done
  done
done
