#!/bin/sh
# plots.sh — the slow-node ring paper's figures 7-10 from fold-sim ring-skip's CSV, with the closed-form saving overlaid (gnuplot PNGs, docs/straggler.md).
#
# usage: plots.sh FOLD_SIM DATA_DIR IMG_DIR [--no-sim]
# Runs fold-sim ring-skip --once (reduce-scatter, n = 4, 8, 32, 256) into
# DATA_DIR/ring_skip_once_rs.csv unless --no-sim, adds the closed form
# (DATA_DIR/ring_skip_once_rs_model.csv) and draws four PNGs into IMG_DIR.
#
# The closed form (docs/straggler.md, "The closed form"): a rank late once
# by dT, step overhead T = 3 us, T_trans = 5 us + 8 KB at 100 Gbit/s:
#   T_ring = (n-1)(T_trans + T) + dT
#   no skip unless dT > alpha T (the watchdog of the rank after it fires
#   at alpha T + T_trans, before the late partial arrives at dT + T_trans);
#   then T_skip = min(T_ring, max(dT + (n-1) T_trans + 2T, T0 + alpha T)):
#   the late rank's raw contribution to the farthest block travels n-1 hops
#   unreduced and its owner merges it (T) and reduces (T); and the others
#   cannot finish before the normal time T0 plus the time they waited
#   before skipping.
set -eu
SIM=$1 DATA=$2 IMG=$3
mkdir -p "$DATA" "$IMG"
CSV=$DATA/ring_skip_once_rs.csv MODEL=$DATA/ring_skip_once_rs_model.csv
[ "${4:-}" = --no-sim ] || "$SIM" ring-skip --once --csv "$CSV"
awk -F, 'BEGIN {T = 3; TT = 5 + 8192 / 12500; OFS = ","; print "n,alpha,dT_us,t_ring_us,t_skip_us,saving"}
  NR > 1 {
    n = $2; a = $3; d = $4
    tr = (n - 1) * (TT + T) + d
    ts = tr
    t0 = (n - 1) * (TT + T)
    if (d > a * T) { x = d + (n - 1) * TT + 2 * T; if (x < t0 + a * T) x = t0 + a * T; if (x < ts) ts = x }
    print n, a, d, tr, ts, (tr - ts) / tr
  }' "$CSV" >"$MODEL"
# one gnuplot data file per (n, alpha): dT, sim ring, sim skip, sim saving, model skip, model saving
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
paste -d, "$CSV" "$MODEL" | awk -F, -v d="$TMP" 'NR > 1 { f = d "/" $2 "_" $3 ".dat"; print $4, $5, $6, $7 * 100, $12, $13 * 100 > f }'
# saving against alpha at dT = 10, 20 and 40 us (n = 4 and 8)
awk -F, -v d="$TMP" 'NR > 1 && ($4 == 10 || $4 == 20 || $4 == 40) { print $3, $7 * 100 > (d "/alpha_" $2 "_" $4 ".dat") }' "$CSV"
gnuplot <<GP
set terminal pngcairo size 800,520 font "sans,11"
set grid
set key left top
set xlabel "dT (us): rank 1 is late once by dT"
set output "$IMG/ring_skip_fig7_times.png"
set title "Reduce-scatter time, n = 4, alpha = 2 (paper's fig. 7): simulator and closed form"
set ylabel "time (us)"
plot "$TMP/4_2.dat" u 1:2 w p pt 7 t "ring (sim)", "" u 1:3 w p pt 5 t "ring_skip (sim)", \
     "" u 1:5 w l lw 2 t "ring_skip (closed form)", "" u 1:(\$2) w l dt 2 t "ring (closed form = T0 + dT)"
set output "$IMG/ring_skip_fig8_saving_alpha.png"
set title "Saving (T_ring - T_skip) / T_ring against dT, n = 4 (paper's fig. 8); lines: closed form"
set ylabel "saving (%)"
set key right top
plot for [a in "1.2 1.5 2 3 4"] "$TMP/4_".a.".dat" u 1:4 w lp pt 7 ps 0.6 t "alpha ".a." (sim)", \
     for [a in "1.2 2 4"] "$TMP/4_".a.".dat" u 1:6 w l dt 2 lw 2 t "alpha ".a." (closed form)"
set output "$IMG/ring_skip_fig9_saving_vs_alpha.png"
set title "Saving against alpha (paper's fig. 9)"
set xlabel "alpha"
plot for [n in "4 8"] for [d in "10 20 40"] "$TMP/alpha_".n."_".d.".dat" u 1:2 w lp pt 7 t "n = ".n.", dT = ".d." us"
set output "$IMG/ring_skip_fig10_saving_n.png"
set title "Saving against dT for n = 4, 8, 32, 256, alpha = 2 (paper's fig. 10); dashed: closed form"
set xlabel "dT (us)"
plot for [n in "4 8 32 256"] "$TMP/".n."_2.dat" u 1:4 w lp pt 7 ps 0.6 t "n = ".n." (sim)", \
     for [n in "4 8 32 256"] "$TMP/".n."_2.dat" u 1:6 w l dt 2 t "n = ".n." (closed form)"
GP
echo "wrote $IMG/ring_skip_fig{7,8,9,10}*.png and $MODEL"
