#!/bin/sh
# skip_bench.sh — ring vs ring_skip vs the default, with and without a straggler: medians of repeated fold-bench runs.
#
# usage: skip_bench.sh BUILD_DIR TRANSPORT "SIZES" "DELAYS_MS" REPS [ITERS]
# TRANSPORT: shm, tcp (foldrun on this host, loopback), or netns1g (four
# network namespaces at 1 Gbit/s over tcp: tests/netns/netns_run.sh, root).
# e.g.   skip_bench.sh build shm "1M 4M 16M" "0 2" 7
# Each (size, delay, algorithm) is run REPS times, interleaved (so a burst
# of load from another process hits every algorithm alike), each run the
# mean of ITERS timed iterations (out-of-place column of fold-bench); the
# median of the REPS is printed. Rank 1 is the straggler:
# FOLD_INJECT_DELAY=1:<delay> delays it before each local reduction.
# A delay written "Ns" (e.g. 2s) is N normal steps: N times the measured
# no-delay ring time divided by 2(n-1), the number of ring steps.
# Output: one CSV line per (transport,size,delay,algo): median us, the
# median of the paired ratios to ring (run i of the algorithm over run i of
# ring: less sensitive to the load drifting than a ratio of medians), and
# the runs. ALGOS (environment) overrides "ring ring_skip default"; also
# "noskip" (ring_skip with FOLD_SKIP_ALPHA=1e6: its path without skips) and
# "old_skip" (ring_skip of the build in OLD_BUILD).
set -eu
B=$1 TP=$2 SIZES=$3 DELAYS=$4 REPS=$5 ITERS=${6:-10}
N=${FOLD_BENCH_N:-4}
one() { # size delay_s algo -> microseconds
  BB=$B SKA=${FOLD_SKIP_ALPHA:-}
  case $3 in
    default) A=auto ;;
    old_skip) A=ring_skip BB=$OLD_BUILD ;; # ring_skip of another build (OLD_BUILD): before/after
    noskip) A=ring_skip SKA=1e6 ;;          # ring_skip that never skips: its path's own cost
    *) A=$3 ;;
  esac
  case $TP in
    netns1g) # four network namespaces joined by a bridge, every link shaped to 1 Gbit/s (tests/netns)
      FOLD_INJECT_DELAY=1:$2 FOLD_TRANSPORT=tcp "$(dirname "$0")/../../tests/netns/netns_run.sh" -k "$N" -r 1gbit -t 600 -- \
        env FOLD_INJECT_DELAY=1:$2 FOLD_SKIP_ALPHA="$SKA" "$BB/fold-bench" -b "$1" -e "$1" -a "$A" \
        -n "$ITERS" -w 1 2>/dev/null | awk '$1=="[h0]" && $2 ~ /^[0-9]+$/ {print $7; exit}' ;;
    *)
      FOLD_INJECT_DELAY=1:$2 FOLD_SKIP_ALPHA="$SKA" "$BB/foldrun" -n "$N" --transport "$TP" "$BB/fold-bench" -b "$1" -e "$1" -a "$A" \
        -n "$ITERS" -w 2 2>/dev/null | awk '$1=="[0]" && $2 ~ /^[0-9]+$/ {print $7; exit}' ;;
  esac
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ALGOS=${ALGOS:-ring ring_skip default}
echo "transport,n,size,delay_ms,algo,median_us,ratio_to_ring,runs"
for S in $SIZES; do
  base=""
  for D in $DELAYS; do
    case $D in
      *s) [ -n "$base" ] || { r=""; for i in $(seq "$REPS"); do r="$r $(one "$S" 0 ring)"; done; base=$(echo "$r" | median); }
          ms=$(awk -v b="$base" -v k="${D%s}" -v n="$N" 'BEGIN {printf "%.4f", k * b / (2 * (n - 1)) / 1000}') ;;
      *) ms=$D ;;
    esac
    ds=$(awk -v m="$ms" 'BEGIN {printf "%.6f", m / 1000}')
    rm -f /tmp/skip_bench.$$.*
    for i in $(seq "$REPS"); do
      for a in $ALGOS; do one "$S" "$ds" "$a" >>"/tmp/skip_bench.$$.$a"; done
    done
    for a in $ALGOS; do
      r=$(cat "/tmp/skip_bench.$$.$a" | tr '\n' ' ')
      ratio=$(paste "/tmp/skip_bench.$$.$a" "/tmp/skip_bench.$$.ring" 2>/dev/null | awk '$2 > 0 {print $1 / $2}' | median)
      echo "$TP,$N,$S,$ms,$a,$(echo "$r" | median),${ratio:-},$(echo $r | tr ' ' ';')"
    done
    rm -f /tmp/skip_bench.$$.*
  done
done
