#!/bin/sh
# pattern_bench.sh — ring vs ring_skip in a training loop's patterns of sizes (fold-skip-pattern), with and without a straggler.
#
# usage: pattern_bench.sh BUILD_DIR TRANSPORT "PATTERNS" REPS [STEPS]
#        pattern_bench.sh --summary CSV "PATTERNS"   (the summary of an earlier run's lines)
# TRANSPORT: shm or tcp (foldrun on this host, n = FOLD_BENCH_N, default 4),
# or netns1g (four network namespaces at 1 Gbit/s: tests/netns/netns_run.sh, root).
# PATTERNS: among one alt alt2 ddp some (bench/straggler/skip_pattern.c).
# The straggler: FOLD_INJECT_DELAY=2:DELAY (DELAY seconds, default 0.002).
# Each rep runs the four configurations back to back (ring and ring_skip,
# without and with the straggler), so a burst of load hits them alike.
# Prints one CSV line per run (ms: rank 0's median step, fold-skip-pattern),
# then per pattern: medians over the reps (ms per step),
# the median of the paired ratios ring_skip/ring without the straggler,
# the share of what the straggler costs ring that ring_skip recovers
# ((ring,slow - skip,slow) / (ring,slow - ring,no delay), from the medians,
# and the median of the per-rep values), and how many of the timed calls
# the rank after the straggler named it in.
set -eu
summary() { # CSV PATTERNS
  echo "pattern,ring_ms,skip_ms,ring_slow_ms,skip_slow_ms,skip/ring_paired,skip/ring_slow_paired,recovered_medians,recovered_paired_median,named_slow,named_nodelay"
  for P in $2; do
    awk -F, -v p="$P" '
    function med(a, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                   return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
    $3 == p { key = $4 "," ($5 == "0" ? 0 : 1); c[key]++; v[key, c[key]] = $6
              if ($4 == "ring_skip") { nm[$5 == "0" ? 0 : 1] += $7; nc[$5 == "0" ? 0 : 1] += $8 } }
    END {
      k = c["ring,0"]
      for (i = 1; i <= k; i++) { r0[i] = v["ring,0", i]; s0[i] = v["ring_skip,0", i]; r1[i] = v["ring,1", i]; s1[i] = v["ring_skip,1", i]
                                 q[i] = s0[i] / r0[i]; q1[i] = s1[i] / r1[i]; rc[i] = (r1[i] - s1[i]) / (r1[i] - r0[i]) }
      a = med(r0, k); b = med(s0, k); cc = med(r1, k); d = med(s1, k)
      printf "%s,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.0f%%,%.0f%%,%d/%d,%d/%d\n", p, a, b, cc, d, med(q, k), med(q1, k), 100 * (cc - d) / (cc - a), 100 * med(rc, k), nm[1], nc[1], nm[0], nc[0]
    }' "$1"
  done
}
if [ "$1" = --summary ]; then
  summary "$2" "$3"
  exit 0
fi
B=$1 TP=$2 PATS=$3 REPS=$4 STEPS=${5:-9}
N=${FOLD_BENCH_N:-4} DELAY=${DELAY:-0.002}
one() { # pattern algo delay -> "ms named calls"
  D=""
  [ "$3" = 0 ] || D=2:$3
  case $TP in
    netns1g)
      "$(dirname "$0")/../../tests/netns/netns_run.sh" -k "$N" -r 1gbit -t 600 -- \
        env FOLD_TRANSPORT=tcp FOLD_INJECT_DELAY="$D" "$B/fold-skip-pattern" "$1" "$2" "$STEPS" 2>/dev/null |
        awk '$2 == "'"$1"'" || $1 == "'"$1"'" {print $(NF-2), $(NF-1), $NF; exit}' ;;
    *)
      FOLD_INJECT_DELAY="$D" timeout 600 "$B/foldrun" -n "$N" --transport "$TP" "$B/fold-skip-pattern" "$1" "$2" "$STEPS" 2>/dev/null |
        awk '{print $(NF-2), $(NF-1), $NF; exit}' ;;
  esac
}
T=$(mktemp)
trap 'rm -f "$T"' EXIT
echo "transport,n,pattern,algo,delay_s,ms_per_step,named,calls"
for P in $PATS; do
  for i in $(seq "$REPS"); do
    for d in 0 "$DELAY"; do
      for a in ring ring_skip; do
        r=$(one "$P" "$a" "$d")
        echo "$TP,$N,$P,$a,$d,$(echo "$r" | tr ' ' ',')" | tee -a "$T"
      done
    done
  done
done
echo
summary "$T" "$PATS"
