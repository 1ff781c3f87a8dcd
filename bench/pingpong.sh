#!/usr/bin/env bash
# pingpong.sh — ping-pong latency and bandwidth of fold (shm, tcp) next to
# Open MPI (vader/sm BTL, tcp BTL over lo), same sizes, same method, one run.
#
# Usage: bench/pingpong.sh [harness args, e.g. -t 0.1 -r 5 -m 1048576]
# Environment (all optional):
#   FOLD_BUILD_DIR       fold build dir (default <repo>/build-bench; configured
#                        and built here when fold-pingpong or foldrun is missing,
#                        else brought up to date incrementally)
#   PINGPONG_RESULTS_DIR where results go (default <repo>/bench/results); each run
#                        writes a new pingpong-<date>-<time>/ under it
#   PINGPONG_TIMEOUT     seconds allowed per run (default 120; a full run of
#                        one side takes a few seconds); FOLD_TIMEOUT defaults to 60
#   PINGPONG_BIND        core (default): rank r pinned to the r-th CPU on both
#                        sides (foldrun --bind core, mpirun --bind-to core);
#                        none: nobody is pinned (foldrun --bind none)
#   PINGPONG_ROUNDS      run all sides this many times (default 1), pairs
#                        interleaved; per size and side the best round (lowest
#                        median latency) is reported: on a shared machine this
#                        filters out rounds that met someone else's load
#   PINGPONG_MODEL_SHM, PINGPONG_MODEL_TCP  harness args for the iteration
#                        model of each transport class (default "-a 0.5 -b 8"
#                        and "-a 10 -b 4": one-way us, GB/s); both sides of a
#                        pair get the same, hence the same iteration counts
#   PINGPONG_ONLY        space-separated subset of: fold-shm fold-tcp ompi-shm ompi-tcp
#   MPICC_OPENMPI, MPIRUN_OPENMPI  the Open MPI tools (default mpicc.openmpi,
#                        mpirun.openmpi)
# Exit status: 0 if every run succeeded, 1 if some failed (the table is still
# printed, with "-" where a side failed), 2 on a setup error (bad
# PINGPONG_ROUNDS or PINGPONG_BIND, results dir not writable).
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FOLD_BUILD_DIR:-$repo/build-bench}
results_root=${PINGPONG_RESULTS_DIR:-$repo/bench/results}
run_timeout=${PINGPONG_TIMEOUT:-120}
# fold's own deadline, below ours, so that a stuck fold run ends with fold's
# message (which rank, which peer) rather than with timeout's kill.
export FOLD_TIMEOUT=${FOLD_TIMEOUT:-60}
bind=${PINGPONG_BIND:-core}
case $bind in core | none) ;; *) echo "pingpong: PINGPONG_BIND must be core or none" >&2; exit 2 ;; esac
rounds=${PINGPONG_ROUNDS:-1}
case $rounds in '' | *[!0-9]* | 0) echo "pingpong: PINGPONG_ROUNDS must be >= 1" >&2; exit 2 ;; esac
only=${PINGPONG_ONLY:-fold-shm fold-tcp ompi-shm ompi-tcp}
mpicc=${MPICC_OPENMPI:-mpicc.openmpi}
mpirun=${MPIRUN_OPENMPI:-mpirun.openmpi}
harness_args=("$@")
read -r -a model_shm <<<"${PINGPONG_MODEL_SHM:--a 0.5 -b 8}"
read -r -a model_tcp <<<"${PINGPONG_MODEL_TCP:--a 10 -b 4}"

stamp=$(date +%Y%m%d-%H%M%S)
out=$results_root/pingpong-$stamp
mkdir -p "$out" || { echo "pingpong: cannot create $out" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fold-pingpong.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

say() { printf '%s\n' "$*" >&2; }
wanted() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- build ----------------------------------------------------------------
fold_ok=1
pp=$build/bench/fold-pingpong
foldrun=$build/foldrun
if wanted fold-shm || wanted fold-tcp; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    say "== configuring fold in $build"
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 || fold_ok=0
  fi
  if [ $fold_ok = 1 ]; then
    say "== building fold-pingpong and foldrun in $build"
    cmake --build "$build" -j2 --target fold-pingpong foldrun >>"$out/build.log" 2>&1 || fold_ok=0
  fi
  if [ $fold_ok = 0 ] || [ ! -x "$pp" ] || [ ! -x "$foldrun" ]; then
    fold_ok=0
    say "!! fold build FAILED (see $out/build.log): fold columns will be empty"
  fi
fi

ompi_ok=1
ppm=$tmp/pingpong_mpi
if wanted ompi-shm || wanted ompi-tcp; then
  # -O3 -DNDEBUG: the flags of the Release build of fold-pingpong.
  if ! "$mpicc" -O3 -DNDEBUG -std=c11 -DPINGPONG_MPI_NAME='"ompi"' -I"$repo/bench" \
      -o "$ppm" "$repo/bench/pingpong_mpi.c" >>"$out/build.log" 2>&1; then
    ompi_ok=0
    say "!! $mpicc build of pingpong_mpi.c FAILED (see $out/build.log): Open MPI columns will be empty"
  fi
fi

# Open MPI 4.x calls its shared-memory BTL "vader"; 5.x renamed it "sm".
ompi_shm_btl=sm
if command -v ompi_info >/dev/null 2>&1 && ompi_info --parsable 2>/dev/null | grep -q '^mca:btl:vader:'; then
  ompi_shm_btl=vader
fi

# ---- run ------------------------------------------------------------------
mpi_common=(-n 2)
[ "$(id -u)" = 0 ] && mpi_common+=(--allow-run-as-root)
# foldrun --bind core puts rank r on the r-th CPU it may use, as
# mpirun --map-by core --bind-to core does; --bind none is needed for an
# unbound run, since foldrun binds by default when the ranks fit the CPUs.
if [ "$bind" = core ]; then
  mpi_common+=(--map-by core --bind-to core)
else
  mpi_common+=(--bind-to none)
fi
fold_cmd=("$pp")

failed=0
# run NAME CMD...: one round of one side, with the harness args "${model[@]}"
# (of the current transport class) then the user's; its stdout (TSV) is
# appended to $out/NAME.tsv, its stderr to $out/NAME.log.
run() {
  local name=$1 rc
  shift
  if ! wanted "$name"; then return 0; fi
  say "== $name (round $round/$rounds): $* ${model[*]} ${harness_args[*]:-}"
  echo "# round $round" >>"$out/$name.log"
  timeout -k 10 "$run_timeout" "$@" "${model[@]}" "${harness_args[@]}" >"$tmp/$name.out" 2>>"$out/$name.log"
  rc=$?
  # foldrun prefixes every line with "[rank] "; the TSV is rank 0's lines bare.
  sed -E 's/^\[[0-9]+\] //' "$tmp/$name.out" >"$tmp/$name.tsv"
  { echo "# round $round"; cat "$tmp/$name.tsv"; } >>"$out/$name.tsv"
  if [ $rc -ne 0 ] || ! grep -q -v '^#' "$tmp/$name.tsv"; then
    failed=1
    [ $rc = 124 ] && rc="timeout after ${run_timeout}s"
    say "!! $name FAILED (exit $rc); log: $out/$name.log"
    tail -n 5 "$out/$name.log" | sed 's/^/   | /' >&2
  fi
}

# Pairs run back to back (fold shm, ompi shm, fold tcp, ompi tcp) so that the
# two sides of each ratio see the same machine load.
load0=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
if awk -v l="$load0" 'BEGIN { exit !(l > 1.0) }'; then
  say "!! machine busy (load average $load0 on $(nproc) cpus): numbers will be noisy"
fi
for s in fold-shm fold-tcp ompi-shm ompi-tcp; do : >"$out/$s.tsv"; done
for round in $(seq 1 "$rounds"); do
  for t in shm tcp; do
    if [ $t = shm ]; then model=("${model_shm[@]}"); else model=("${model_tcp[@]}"); fi
    if [ $fold_ok = 1 ]; then
      run fold-$t "$foldrun" -n 2 --transport $t --bind "$bind" -- "${fold_cmd[@]}"
    elif wanted fold-$t; then
      failed=1
    fi
    if [ $ompi_ok = 1 ]; then
      if [ $t = shm ]; then
        run ompi-shm "$mpirun" "${mpi_common[@]}" --mca btl "self,$ompi_shm_btl" "$ppm"
      else
        run ompi-tcp "$mpirun" "${mpi_common[@]}" --mca btl self,tcp --mca btl_tcp_if_include lo "$ppm"
      fi
    elif wanted ompi-$t; then
      failed=1
    fi
  done
done
load1=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)

# ---- merge: one table, ratio = Open MPI time / fold time (>1: fold faster) -
{
  echo "date=$stamp"
  echo "host=$(uname -n) $(uname -r) cpus=$(nproc)"
  echo "commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "fold_build=$build $(grep -s '^CMAKE_BUILD_TYPE:' "$build/CMakeCache.txt")"
  echo "openmpi=$("$mpirun" --version 2>/dev/null | head -n 1)"
  echo "ompi_shm_btl=$ompi_shm_btl bind=$bind rounds=$rounds model_shm=${model_shm[*]} model_tcp=${model_tcp[*]} harness_args=${harness_args[*]:-}"
  echo "loadavg_before=$load0 loadavg_after=$load1"
} >"$out/meta.txt"

awk -v tsv="$out/pingpong.tsv" '
  function label(b) {
    if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
    if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
    return b " B"
  }
  function cell(v, f) { return v == "" ? "-" : sprintf(f, v) }
  function ratio(o, f) { return (o == "" || f == "" || f + 0 == 0) ? "-" : sprintf("%.2f", o / f) }
  FNR == 1 { side = FILENAME; sub(/.*\//, "", side); sub(/\.tsv$/, "", side) }
  /^#/ || NF < 7 || $2 !~ /^[0-9]+$/ { next }
  {
    if (!($2 in seen)) { seen[$2] = 1; sizes[++n] = $2 + 0 }
    if ((side, $2) in lat && lat[side, $2] + 0 <= $5 + 0) next  # keep the best round
    lat[side, $2] = $5; bw[side, $2] = $7
  }
  END {
    for (i = 2; i <= n; i++)  # insertion sort, numeric
      for (j = i; j > 1 && sizes[j - 1] > sizes[j]; j--) { t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t }
    print "size_bytes\tfold_shm_lat_us\tompi_shm_lat_us\tshm_ratio\tfold_tcp_lat_us\tompi_tcp_lat_us\ttcp_ratio\tfold_shm_bw_GBps\tompi_shm_bw_GBps\tfold_tcp_bw_GBps\tompi_tcp_bw_GBps" > tsv
    hdr = "%-8s | %13s | %13s | %6s | %13s | %13s | %6s\n"
    row = "%-8s | %13s | %13s | %6s | %13s | %13s | %6s\n"
    printf "one-way latency, us (median of repeats); ratio = ompi / fold (>1: fold faster)\n"
    printf hdr, "size", "fold shm", "ompi shm", "ratio", "fold tcp", "ompi tcp", "ratio"
    for (i = 1; i <= n; i++) {
      s = sizes[i]
      fs = lat["fold-shm", s]; os = lat["ompi-shm", s]; ft = lat["fold-tcp", s]; ot = lat["ompi-tcp", s]
      printf row, label(s), cell(fs, "%.3f"), cell(os, "%.3f"), ratio(os, fs), cell(ft, "%.3f"), cell(ot, "%.3f"), ratio(ot, ft)
      printf "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s, fs, os, ratio(os, fs), ft, ot, ratio(ot, ft),
        bw["fold-shm", s], bw["ompi-shm", s], bw["fold-tcp", s], bw["ompi-tcp", s] > tsv
    }
    printf "\nbandwidth, GB/s (1e9 B/s) = size / one-way time; ratio = fold / ompi (>1: fold faster)\n"
    printf hdr, "size", "fold shm", "ompi shm", "ratio", "fold tcp", "ompi tcp", "ratio"
    for (i = 1; i <= n; i++) {
      s = sizes[i]
      if (s == 0) continue
      fs = bw["fold-shm", s]; os = bw["ompi-shm", s]; ft = bw["fold-tcp", s]; ot = bw["ompi-tcp", s]
      # the ratio from the latencies: the same number, without the rounding of tiny bandwidths
      printf row, label(s), cell(fs, "%.3f"), cell(os, "%.3f"), ratio(lat["ompi-shm", s], lat["fold-shm", s]),
        cell(ft, "%.3f"), cell(ot, "%.3f"), ratio(lat["ompi-tcp", s], lat["fold-tcp", s])
    }
  }
' "$out/fold-shm.tsv" "$out/ompi-shm.tsv" "$out/fold-tcp.tsv" "$out/ompi-tcp.tsv" | tee "$out/table.txt"

# ---- plot (optional): latency and bandwidth against size, log-log ----------
if command -v gnuplot >/dev/null 2>&1 && [ "$(wc -l <"$out/pingpong.tsv")" -gt 2 ]; then
  gnuplot 2>>"$out/build.log" <<EOF || say "(gnuplot failed; see $out/build.log)"
set terminal pngcairo size 1200,480 noenhanced
set output "$out/pingpong.png"
set datafile separator "\t"
set datafile missing ""
set key top left
set logscale xy 2
set xlabel "message size (bytes)"
set xtics ("8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, "1M" 1048576, \
           "4M" 4194304, "16M" 16777216, "64M" 67108864)
set grid
set multiplot layout 1,2 title "ping-pong, fold vs Open MPI ($stamp)"
set ylabel "one-way latency (us)"
plot "$out/pingpong.tsv" skip 1 using (\$1 > 0 ? \$1 : NaN):2 with linespoints title "fold shm", \
     "" skip 1 using (\$1 > 0 ? \$1 : NaN):3 with linespoints title "ompi shm", \
     "" skip 1 using (\$1 > 0 ? \$1 : NaN):5 with linespoints title "fold tcp", \
     "" skip 1 using (\$1 > 0 ? \$1 : NaN):6 with linespoints title "ompi tcp"
unset logscale y
set logscale y 10
set ylabel "bandwidth (GB/s)"
plot "$out/pingpong.tsv" skip 1 using (\$1 > 0 ? \$1 : NaN):8 with linespoints title "fold shm", \
     "" skip 1 using (\$1 > 0 ? \$1 : NaN):9 with linespoints title "ompi shm", \
     "" skip 1 using (\$1 > 0 ? \$1 : NaN):10 with linespoints title "fold tcp", \
     "" skip 1 using (\$1 > 0 ? \$1 : NaN):11 with linespoints title "ompi tcp"
unset multiplot
EOF
fi

say ""
say "results: $out (pingpong.tsv, table.txt, per-side *.tsv and *.log, meta.txt)"
if [ $failed = 1 ]; then
  say "some runs FAILED (see above)"
  exit 1
fi
exit 0
