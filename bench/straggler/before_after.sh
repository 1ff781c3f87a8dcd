#!/bin/sh
# before_after.sh — ring against ring_skip of two builds (before and after a change), paired and interleaved, without and with a straggler, with skip counts.
#
# usage: before_after.sh BEFORE_BUILD AFTER_BUILD PATTERN "TRANSPORTS" REPS [STEPS]
# Each rep runs, per transport and per delay (0, then FOLD_INJECT_DELAY=2:DELAY,
# default 0.002 s): ring (AFTER's), ring_skip of BEFORE, ring_skip of AFTER,
# back to back (fold-skip-pattern PATTERN, n = 4 under foldrun), so a burst of
# load hits the three alike. One CSV line per run:
#   transport,pattern,variant,delay_s,ms_per_step,named,calls,skips_all_ranks
# (skips_all_ranks: the steps routed around, summed from FOLD_DEBUG=INFO's lines
# of all ranks; the log's rate limit folds some lines, so it is a lower bound).
# Then per transport: the paired ratios ring_skip/ring (median [min-max]),
# skips per run, "recovered" with the straggler, named counts.
set -eu
BEF=$1 AFT=$2 P=$3 TPS=$4 REPS=$5 STEPS=${6:-9} DELAY=${DELAY:-0.002}
T=$(mktemp) E=$(mktemp)
trap 'rm -f "$T" "$E"' EXIT
echo "transport,pattern,variant,delay_s,ms_per_step,named,calls,skips_all_ranks"
for i in $(seq "$REPS"); do for tp in $TPS; do for d in 0 "$DELAY"; do
  for v in ring:$AFT base:$BEF new:$AFT; do
    a=ring_skip; [ "${v%%:*}" = ring ] && a=ring
    B=${v#*:} D=""
    [ "$d" = 0 ] || D=2:$d
    out=$(FOLD_INJECT_DELAY=$D FOLD_DEBUG=INFO timeout 300 "$B/foldrun" -n 4 --transport "$tp" "$B/fold-skip-pattern" "$P" "$a" "$STEPS" 2 2>"$E" || true)
    sk=$(grep -o "routed around rank [0-9]* at [0-9]*" "$E" | awk '{s += $NF} END {print s + 0}')
    echo "$tp,$P,${v%%:*},$d,$(echo "$out" | awk '{print $(NF-2) "," $(NF-1) "," $NF}'),$sk" | tee -a "$T"
  done
done; done; done
echo
awk -F, '
function med(a,k, i,j,t){for(i=1;i<=k;i++)for(j=i+1;j<=k;j++)if(a[j]<a[i]){t=a[i];a[i]=a[j];a[j]=t} return k%2?a[(k+1)/2]:(a[k/2]+a[k/2+1])/2}
NF >= 8 && $5 != "" { key = $1 "," $2
  if ($3 == "ring") { if ($4 == "0") r0 = $5; else r1 = $5; next }
  if ($4 == "0") { if ($3 == "base") { nb[key]++; qb[key, nb[key]] = $5 / r0; sb[key, nb[key]] = $8 }
                   else { nn[key]++; qn[key, nn[key]] = $5 / r0; sn[key, nn[key]] = $8; R0[key, nn[key]] = r0 } }
  else { if ($3 == "base") { mb[key]++; cb[key, mb[key]] = $5; nmb[key] += $6; ncb[key] += $7 }
         else { mn[key]++; cn[key, mn[key]] = $5; R1[key, mn[key]] = r1; nmn[key] += $6; ncn[key] += $7 } } }
END { for (key in nn) { k = nn[key]
  for (i = 1; i <= k; i++) { a[i] = qb[key, i]; b[i] = qn[key, i]; c[i] = sb[key, i]; d[i] = sn[key, i] }
  printf "%s, no straggler (%d reps): ring_skip/ring paired median: before %.2f [%.2f-%.2f], %d skips per run; after %.2f [%.2f-%.2f], %d skips per run\n", key, k, med(a, k), a[1], a[k], med(c, k), med(b, k), b[1], b[k], med(d, k)
  m = mn[key] < k ? mn[key] : k
  for (i = 1; i <= m; i++) { x0[i] = R0[key, i]; x1[i] = R1[key, i]; y[i] = cn[key, i]; yb[i] = cb[key, i]
    rc[i] = (R1[key, i] - cn[key, i]) / (R1[key, i] - R0[key, i]); rcb[i] = (R1[key, i] - cb[key, i]) / (R1[key, i] - R0[key, i]) }
  A = med(x0, m); B = med(x1, m); C = med(y, m); Cb = med(yb, m)
  printf "%s, straggler: ring %.2f ms without, %.2f with; ring_skip before %.2f (recovered %.0f%% of the medians, paired median %.0f%%, named %d/%d), after %.2f (%.0f%%, %.0f%% [%.0f%%..%.0f%%], named %d/%d)\n", key, A, B, Cb, 100 * (B - Cb) / (B - A), 100 * med(rcb, m), nmb[key], ncb[key], C, 100 * (B - C) / (B - A), 100 * med(rc, m), 100 * rc[1], 100 * rc[m], nmn[key], ncn[key] } }' "$T"
