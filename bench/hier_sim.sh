#!/bin/sh
# hier_sim.sh — fold-sim sweeps of the flat algorithms against hier (one leader per host, and every rank leading a slice) on simulated hosts: CSV, PNG and a best-flat/hier table (docs/hierarchy.md).
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
#             2n(n-1) messages) and hier get the closed form only
#             (defaults 4096, 65536)
#   ALGOS     only these algorithms (e.g. "hier hier_all"); the other
#             algorithms' rows of COLLS are kept from the existing CSV
#   LAYOUT    contiguous (default) or roundrobin
#   PLOT_ONLY non-empty: no runs; the table and PNG from the existing CSV
# allreduce runs hier twice: `hier` with one leader per host
# (FOLD_HIER_LEADERS=one) and `hier_all` with every rank leading its slice
# (FOLD_HIER_LEADERS=all; hosts of one size). hier_all's closed form is made
# here from the library's own per-algorithm closed forms (fold-sim's model
# column): the host reduce_scatter and allgather on P ranks (host link) of
# b = ceil(count / P) elements per rank, plus the lanes' allreduce of b on
# H ranks, whose P lanes share each NIC: the longer of one lane's time and
# one latency plus P lanes' bytes (its time at the network bandwidth less its
# time at an infinite one, times P); each phase's algorithm is the one the
# library picks for it (fold-sim -a auto), above SIM_CAP the one it picked at
# the largest size simulated. Pipelined over K chunks (FOLD_HIER_CHUNKS, else
# K by size as allreduce_hier.c counts it), the phases are those of a chunk's
# slice, and the time is the first reduce_scatter, K times the longer of the
# lanes' allreduce and the host link's reduce_scatter plus allgather, and the
# last allgather.
# Rows of collectives not in COLLS are kept from the existing CSV.
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
HIER_MAX_N=${HIER_MAX_N:-65536}
ALGOS=${ALGOS:-}
LAYOUT=${LAYOUT:-contiguous}
[ -x "$SIM" ] || { echo "hier_sim.sh: no $SIM (build first)" >&2; exit 2; }
mkdir -p "$OUT"
tmp=$(mktemp -d /tmp/hier_sim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The closed form of hier_all (see above) for every row of CSV $3 (H = $1
# hosts of P = $2 ranks), written into its model_s and ratio columns.
NET_LAT=5e-6 NET_BW=1.25e10 HOST_LAT=5e-7 HOST_BW=5e10
model_of() { # model_of COLL N BYTES LAT BW -> "NAME MODEL" (NAME: auto's pick, else the last one)
  out=$("$SIM" -c "$1" -n "$2" -b "$3" --latency "$4" --bandwidth "$5" ${6:+-a "$6"} ${6:+--sim-cap 1} 2>/dev/null |
        awk -v c="$1" '$1 == c { print $2, $6 }' | tail -1)
  echo "$out"
}
all_model() {
  H=$1 P=$2 f=$3
  [ "$H" -gt 1 ] && [ "$P" -gt 1 ] || return 0
  : >"$f.new"
  last_rs="" last_ag="" last_ar=""
  while IFS=, read -r rc algo nn bytes sim model rest; do
    if [ "$rc" = collective ]; then echo "$rc,$algo,$nn,$bytes,$sim,$model,$rest" >>"$f.new"; continue; fi
    # the pipeline's chunks as allreduce_hier.c counts them (FOLD_HIER_CHUNKS, else by size)
    set -- $(awk -v bytes="$bytes" -v P="$P" -v H="$H" -v K="${FOLD_HIER_CHUNKS:-0}" 'BEGIN {
        cnt = bytes / 4
        for (r = 0; 2 ^ r < H; r++);
        per = 20480 * (r > 0 ? r : 1)
        if (K == 0) { K = 1; if (bytes >= 4194304) while (K < 64 && (K + 1) * (K + 1) * per <= bytes) K++ }
        if (K > int(cnt / P)) K = int(cnt / P)
        if (K <= 1) { print 1, int((cnt + P - 1) / P) * 4; exit }
        C = int((int((cnt + K - 1) / K) + P - 1) / P) * P
        print int((cnt + C - 1) / C), C / P * 4 }')
    K=$1 b=$2
    [ "$b" -gt 0 ] || b=4
    for ph in "reduce_scatter $P $HOST_LAT $HOST_BW rs" "allgather $P $HOST_LAT $HOST_BW ag" "allreduce $H $NET_LAT $NET_BW ar"; do
      set -- $ph
      eval "prev=\$last_$5"
      capped=""
      w=$(($2 * b)) # fold-sim's n x bytes; reduce_scatter's sendbuf is n blocks
      [ "$1" = reduce_scatter ] && w=$((w * $2))
      [ "$w" -le "$(numfmt --from=iec "$SIM_CAP")" ] || capped=$prev
      r=$(model_of "$1" "$2" "$b" "$3" "$4" "$capped")
      name=${r%% *} m=${r#* }
      name=${name#auto:}
      eval "last_$5=\$name"
      if [ "$1" = allreduce ]; then
        m0=$(model_of allreduce "$H" "$b" "$NET_LAT" 1e30 "$name")
        m=$(awk -v m="$m" -v m0="${m0#* }" -v p="$P" -v a="$NET_LAT" 'BEGIN { x = a + p * (m - m0); printf "%.9e", (x > m ? x : m) }')
      fi
      eval "m_$5=\$m"
    done
    # K 1: the sum of the phases; pipelined: the first chunk's reduce_scatter,
    # then per chunk the longer of the lanes' allreduce and the host link's
    # reduce_scatter plus allgather (they share each rank's link), then the
    # last chunk's allgather
    t=$(awk -v k="$K" -v rs="$m_rs" -v ag="$m_ag" -v ar="$m_ar" 'BEGIN {
        h = rs + ag; printf "%.9e", (k == 1 ? rs + ar + ag : rs + ag + k * (ar > h ? ar : h)) }')
    ratio=$([ -n "$sim" ] && awk -v s="$sim" -v t="$t" 'BEGIN { printf "%.6f", s / t }' || echo "")
    echo "$rc,hier_all,$nn,$bytes,$sim,$t,$ratio,$(echo "$rest" | cut -d, -f2-)" >>"$f.new"
  done <"$f"
  mv "$f.new" "$f"
}

algos_of() {
  case $1 in
  allreduce) echo "ring recursive_doubling rabenseifner reduce_bcast hier hier_all" ;;
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
  if [ -z "${PLOT_ONLY:-}" ] && [ -s "$csv" ]; then # the other collectives' rows stay
    awk -F, -v colls=" $COLLS " -v algos=" $ALGOS " 'NR == 1 || index(colls, " " $1 " ") == 0 ||
        (algos != "  " && index(algos, " " $2 " ") == 0)' "$csv" >"$tmp/all.csv"
    [ "$(wc -l <"$tmp/all.csv")" -gt 1 ] || : >"$tmp/all.csv"
  fi
  for coll in $COLLS; do
    [ -n "${PLOT_ONLY:-}" ] && break
    for a in $(algos_of "$coll"); do
      case " ${ALGOS:-$a} " in *" $a "*) ;; *) continue ;; esac
      cap=$SIM_CAP
      case $a in ring | scatter_allgather) [ "$n" -le "$RING_MAX_N" ] || cap=1 ;; hier) [ "$n" -le "$HIER_MAX_N" ] || cap=1 ;; esac
      # hier: one untimed call first (its first call also makes its children)
      warm=0
      lead=""
      case $a in hier) warm=1 lead=one ;; hier_all) warm=1 lead=all cap=$([ "$n" -le "$HIER_MAX_N" ] && echo "$SIM_CAP" || echo 1) ;; esac
      [ "$coll" = allreduce ] || lead=""
      FOLD_HIER_LEADERS=$lead "$SIM" -c "$coll" -a "${a%_all}" --hosts "$H" --ppn "$P" --layout "$LAYOUT" -b "$SIZES" \
        --warmup $warm --sim-cap "$cap" --csv "$tmp/$coll.$a.csv" --png "$tmp/unused.png" >"$tmp/$coll.$a.out" 2>&1 ||
        { echo "hier_sim.sh: fold-sim -c $coll -a $a at $cfg failed:" >&2; cat "$tmp/$coll.$a.out" >&2; exit 1; }
      [ "$a" = hier_all ] && all_model "$H" "$P" "$tmp/$coll.$a.csv"
      if [ -s "$tmp/all.csv" ]; then tail -n +2 "$tmp/$coll.$a.csv" >>"$tmp/all.csv"; else cat "$tmp/$coll.$a.csv" >"$tmp/all.csv"; fi
    done
  done
  cp "$tmp/all.csv" "$csv"
  echo "# $cfg ($n ranks, $LAYOUT): $csv"
  for coll in $COLLS; do
    # per size: the best flat algorithm (simulated time, else closed form) and hier
    echo "# $coll: bytes best_flat flat_s hier_sim_s hier_model_s flat/hier hier_sim/model [hier_all_sim_s hier_all_model_s flat/hier_all hier_all_sim/model]"
    awk -F, -v coll="$coll" 'NR > 1 && $1 == coll {
        t = $5 != "" ? $5 : $6; b = $4
        if ($2 == "hier") { hs[b] = $5; hm[b] = $6 }
        else if ($2 == "hier_all") { as[b] = $5; am[b] = $6 }
        else if (t != "" && (!(b in best) || t + 0 < best[b] + 0)) { best[b] = t; who[b] = $2 ($5 == "" ? "(model)" : "") }
        if (!(b in seen)) { seen[b] = 1; order[++k] = b }
      } END {
        for (i = 1; i <= k; i++) { b = order[i]; h = hs[b] != "" ? hs[b] : hm[b]
          r = h > 0 ? sprintf("%.2f", best[b] / h) : "-"
          q = (hs[b] != "" && hm[b] > 0) ? sprintf("%.3f", hs[b] / hm[b]) : "-"
          printf "%s %s %s %s %s %s %s", b, who[b], best[b], (hs[b] == "" ? "-" : hs[b]), (hm[b] == "" ? "-" : hm[b]), r, q
          if (b in as) { h = as[b] != "" ? as[b] : am[b]
            printf " %s %s %s %s", (as[b] == "" ? "-" : as[b]), (am[b] == "" ? "-" : am[b]), (h > 0 ? sprintf("%.2f", best[b] / h) : "-"),
              ((as[b] != "" && am[b] > 0) ? sprintf("%.3f", as[b] / am[b]) : "-") }
          printf "\n" }
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
