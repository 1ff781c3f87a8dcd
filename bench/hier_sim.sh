#!/bin/sh
# hier_sim.sh — fold-sim sweeps of the flat algorithms against hier on simulated hosts: CSV, PNG and a best-flat/hier table (docs/hierarchy.md).
#
# usage: bench/hier_sim.sh [BUILD_DIR [OUT_DIR]]      (defaults: build, docs)
# environment:
#   CONFIGS   "HxP ..." hosts x ranks per host (default "64x8 4096x16")
#   COLLS     collectives (default "allreduce broadcast")
#   SIZES     fold-sim -b list (default 8 B .. 256 MiB, x8 steps, and 1 MiB)
#   SIM_CAP   n * bytes above which a point gets the closed form only
#             (default 2G: every rank's scratch is a copy of the vector)
#   RING_MAX_N, HIER_MAX_N  rank counts above which ring and broadcast=
#             scatter_allgather (2(n-1) or n-1 steps,
#             2n(n-1) messages) and hier (its first call's host split is an
#             allgather of 24 bytes per rank: 24 n^2 bytes in all) get the
#             closed form only (defaults 4096, 8192)
#   LAYOUT    contiguous (default) or roundrobin
#   PLOT_ONLY non-empty: no runs; the table and PNG from the existing CSV
# Writes OUT_DIR/hier_sim_HxP.csv (_rr added for roundrobin; every collective's rows; the columns of
# fold-sim --csv, sim_s empty where not simulated) and hier_sim_HxP.png
# (allreduce; broadcast in hier_sim_HxP_broadcast.png), and prints per size
# the best flat algorithm (simulated, else its closed form) against hier.
set -eu
BUILD=${1:-build}
OUT=${2:-docs}
SIM="$BUILD/fold-sim"
CONFIGS=${CONFIGS:-"64x8 4096x16"}
COLLS=${COLLS:-"allreduce broadcast"}
SIZES=${SIZES:-"8,64,512,4K,32K,256K,1M,2M,16M,128M,256M"}
SIM_CAP=${SIM_CAP:-2G}
RING_MAX_N=${RING_MAX_N:-4096}
HIER_MAX_N=${HIER_MAX_N:-8192}
LAYOUT=${LAYOUT:-contiguous}
[ -x "$SIM" ] || { echo "hier_sim.sh: no $SIM (build first)" >&2; exit 2; }
mkdir -p "$OUT"
tmp=$(mktemp -d /tmp/hier_sim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

algos_of() {
  case $1 in
  allreduce) echo "ring recursive_doubling rabenseifner reduce_bcast hier" ;;
  broadcast) echo "binomial scatter_allgather pipeline hier" ;;
  reduce) echo "binomial rabenseifner hier" ;;
  barrier) echo "dissemination hier" ;;
  esac
}

for cfg in $CONFIGS; do
  H=${cfg%x*}
  P=${cfg#*x}
  n=$((H * P))
  sfx=""
  [ "$LAYOUT" = contiguous ] || sfx=_rr
  csv="$OUT/hier_sim_${cfg}${sfx}.csv"
  : >"$tmp/all.csv"
  [ -n "${PLOT_ONLY:-}" ] && cp "$csv" "$tmp/all.csv"
  for coll in $COLLS; do
    [ -n "${PLOT_ONLY:-}" ] && break
    for a in $(algos_of "$coll"); do
      cap=$SIM_CAP
      case $a in ring | scatter_allgather) [ "$n" -le "$RING_MAX_N" ] || cap=1 ;; hier) [ "$n" -le "$HIER_MAX_N" ] || cap=1 ;; esac
      # hier: one untimed call first (its first call also makes its children)
      warm=0
      [ "$a" = hier ] && warm=1
      "$SIM" -c "$coll" -a "$a" --hosts "$H" --ppn "$P" --layout "$LAYOUT" -b "$SIZES" --warmup $warm \
        --sim-cap "$cap" --csv "$tmp/$coll.$a.csv" --png "$tmp/unused.png" >"$tmp/$coll.$a.out" 2>&1 ||
        { echo "hier_sim.sh: fold-sim -c $coll -a $a at $cfg failed:" >&2; cat "$tmp/$coll.$a.out" >&2; exit 1; }
      if [ -s "$tmp/all.csv" ]; then tail -n +2 "$tmp/$coll.$a.csv" >>"$tmp/all.csv"; else cat "$tmp/$coll.$a.csv" >"$tmp/all.csv"; fi
    done
  done
  cp "$tmp/all.csv" "$csv"
  echo "# $cfg ($n ranks, $LAYOUT): $csv"
  for coll in $COLLS; do
    # per size: the best flat algorithm (simulated time, else closed form) and hier
    echo "# $coll: bytes best_flat flat_s hier_sim_s hier_model_s flat/hier hier_sim/model"
    awk -F, -v coll="$coll" 'NR > 1 && $1 == coll {
        t = $5 != "" ? $5 : $6; b = $4
        if ($2 == "hier") { hs[b] = $5; hm[b] = $6 }
        else if (t != "" && (!(b in best) || t + 0 < best[b] + 0)) { best[b] = t; who[b] = $2 ($5 == "" ? "(model)" : "") }
        if (!(b in seen)) { seen[b] = 1; order[++k] = b }
      } END {
        for (i = 1; i <= k; i++) { b = order[i]; h = hs[b] != "" ? hs[b] : hm[b]
          r = h > 0 ? sprintf("%.2f", best[b] / h) : "-"
          q = (hs[b] != "" && hm[b] > 0) ? sprintf("%.3f", hs[b] / hm[b]) : "-"
          printf "%s %s %s %s %s %s %s\n", b, who[b], best[b], (hs[b] == "" ? "-" : hs[b]), (hm[b] == "" ? "-" : hm[b]), r, q }
      }' "$csv"
    command -v gnuplot >/dev/null || { echo "hier_sim.sh: no gnuplot: no PNG" >&2; continue; }
    png="$OUT/hier_sim_${cfg}${sfx}.png"
    [ "$coll" = allreduce ] || png="$OUT/hier_sim_${cfg}${sfx}_${coll}.png"
    plot=""
    i=0
    for a in $(algos_of "$coll"); do
      i=$((i + 1))
      awk -F, -v coll="$coll" -v a="$a" 'NR > 1 && $1 == coll && $2 == a {
          print $4, ($5 == "" ? "nan" : $5), ($6 == "" ? "nan" : $6) }' "$csv" >"$tmp/$coll.$a.dat"
      plot="$plot${plot:+, }'$tmp/$coll.$a.dat' using 1:2 with points pt 7 lc $i title '$a (simulated)', '' using 1:3 with lines lc $i title '$a (closed form)'"
    done
    gnuplot <<EOF
set terminal png size 1000,700 noenhanced
set output '$png'
set title '$coll on $H hosts x $P ranks ($n ranks, $LAYOUT): simulated (points), closed form (lines)' noenhanced
set logscale xy
set xlabel 'bytes'
set ylabel 'virtual seconds'
set key left top
plot $plot
EOF
    echo "# plot: $png"
  done
done
