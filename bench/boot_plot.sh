#!/usr/bin/env bash
# boot_plot.sh — the figure of bench/boot_bench.sh's CSV: store requests and fold_init time against the process count, before and after (gnuplot PNG, docs/bootstrap.md).
#
# usage: bench/boot_plot.sh CSV PNG [LABEL0 LABEL1]
# Three panels: store requests (all ranks), the slowest fold_init, and
# rdv_s (the last rank's arrival to the last rank knowing every card).
# CSV as boot_bench.sh writes it with two builds (build 0 and 1); the
# labels name them in the key (default "before" and "after"). Per build,
# transport and process count the median of the repetitions is drawn.
set -eu
CSV=$1 PNG=$2 L0=${3:-before} L1=${4:-after}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# one file per (build, transport): ranks, median init_max_s, median requests, median rdv_s
awk -F, -v d="$TMP" 'function med(v, m,    i, j, x) {
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return v[int((m + 1) / 2)]
  }
  NR > 1 {k = $1 "_" $2 SUBSEP $3; n[k]++; t[k, n[k]] = $5 + 0; r[k, n[k]] = $7 + 0; v[k, n[k]] = $10 + 0}
  END {
    for (k in n) {
      split(k, f, SUBSEP); m = n[k]; split("", a); split("", q); split("", z)
      for (i = 1; i <= m; i++) { a[i] = t[k, i]; q[i] = r[k, i]; z[i] = v[k, i] }
      print f[2], med(a, m), med(q, m), med(z, m) > (d "/" f[1] ".unsorted")
    }
  }' "$CSV"
for f in "$TMP"/*.unsorted; do sort -n "$f" >"${f%.unsorted}.dat"; done
gnuplot <<GP
set terminal pngcairo size 1500,460 font "sans,11" noenhanced
set output "$PNG"
set multiplot layout 1,3 title "fold_init on one 2-core machine, 8..128 processes (oversubscribed), median of the runs"
set grid
set key left top
set xlabel "processes"
set xrange [0:136]
set ylabel "store requests, all ranks"
set title "Store requests"
plot "$TMP/0_tcp.dat" u 1:3 w lp pt 7 lw 2 t "$L0", \
     "$TMP/1_tcp.dat" u 1:3 w lp pt 5 lw 2 t "$L1"
set ylabel "slowest rank's fold_init (s)"
set title "Init time"
plot "$TMP/0_shm.dat" u 1:2 w lp pt 7 lw 2 t "$L0, shm", "$TMP/0_tcp.dat" u 1:2 w lp pt 6 lw 2 dt 2 t "$L0, tcp", \
     "$TMP/1_shm.dat" u 1:2 w lp pt 5 lw 2 t "$L1, shm", "$TMP/1_tcp.dat" u 1:2 w lp pt 4 lw 2 dt 2 t "$L1, tcp"
set ylabel "last arrival to every card known (s)"
set title "The exchange at the store"
plot "$TMP/0_shm.dat" u 1:4 w lp pt 7 lw 2 t "$L0, shm", "$TMP/0_tcp.dat" u 1:4 w lp pt 6 lw 2 dt 2 t "$L0, tcp", \
     "$TMP/1_shm.dat" u 1:4 w lp pt 5 lw 2 t "$L1, shm", "$TMP/1_tcp.dat" u 1:4 w lp pt 4 lw 2 dt 2 t "$L1, tcp"
unset multiplot
GP
echo "$PNG"
