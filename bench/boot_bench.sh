#!/usr/bin/env bash
# boot_bench.sh — fold_init's time and store requests at 8..128 processes (oversubscribed), per transport and build.
#
# Usage: bench/boot_bench.sh [BUILD_DIR...]
#   Each BUILD_DIR (default <repo>/build) needs foldrun and fold-boottime
#   (cmake --build DIR --target foldrun fold-boottime). Give two to compare a
#   before and an after build: runs are interleaved (for each repetition,
#   size and transport, every build in turn), so both meet the same load.
# Environment (all optional):
#   BOOT_SIZES   process counts (default "8 32 64 128")
#   BOOT_TPS     transports (default "shm tcp")
#   BOOT_REPS    repetitions (default 3); the table shows the median
#   BOOT_OUT     CSV of every run (default bench/results/boot-<date>.csv)
# Per run: init_max_s (slowest rank's fold_init, from fold-boottime),
# requests (the sum over ranks of the store requests each rank's
# FOLD_DEBUG=INFO "joined" line reports), wall_s (foldrun, start to end)
# and served (the requests foldrun's store server applied, from its INFO
# line at exit; empty for a build whose server does not say) and
# rdv_s (from the last rank's arrival in fold_init to the last rank knowing
# every card, from the CLOCK_MONOTONIC times on the same "joined" lines: the
# exchange at the store once everybody is there, before the transports
# connect; one machine, so one clock).
# Prints the CSV path and a median table; docs/data/boot_plot.gp plots it.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
builds=("$@")
[ ${#builds[@]} -eq 0 ] && builds=("$repo/build")
sizes=${BOOT_SIZES:-8 32 64 128}
tps=${BOOT_TPS:-shm tcp}
reps=${BOOT_REPS:-3}
out=${BOOT_OUT:-$repo/bench/results/boot-$(date +%Y%m%d-%H%M%S).csv}
mkdir -p "$(dirname "$out")" || exit 2
for b0 in "${builds[@]}"; do
  b=${b0%%,*}
  for f in foldrun fold-boottime; do
    [ -x "$b/$f" ] || { echo "boot_bench: $b/$f missing (cmake --build $b --target $f)" >&2; exit 2; }
  done
done
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
echo "build,transport,ranks,rep,init_max_s,init_mean_s,requests,wall_s,served,rdv_s,sock_init,sock_end" >"$out"
fail=0
for rep in $(seq 1 "$reps"); do
  for n in $sizes; do
    for tp in $tps; do
      for bi in "${!builds[@]}"; do
        b=${builds[$bi]%%,*}
        benv=()
        [ "$b" != "${builds[$bi]}" ] && IFS=, read -r -a benv <<<"${builds[$bi]#*,}"
        t0=$(date +%s.%N)
        env "${benv[@]}" FOLD_DEBUG=INFO timeout 300 "$b/foldrun" -n "$n" --transport "$tp" --timeout 120 -- "$b/fold-boottime" \
          >"$tmp/out" 2>"$tmp/err"
        rc=$?
        t1=$(date +%s.%N)
        line=$(grep -o 'boottime ranks=.*' "$tmp/out")
        req=$(grep -o '[0-9]* store requests by this rank' "$tmp/err" | awk '{s += $1; k++} END {print (k ? s : "")}')
        served=$(sed -n 's/.*store: served \([0-9]*\) requests.*/\1/p' "$tmp/err" | tail -1)
        # the last rank's arrival (its fold_init start) to the last rank knowing every card
        cards=$(grep -o 'CLOCK_MONOTONIC at start [0-9.]*, cards [0-9.]*' "$tmp/err" | tr -d , |
          awk '$4 > s {s = $4} $6 > c {c = $6} END {if (NR) printf "%.4f", c - s}')
        joined=$(grep -c 'store requests by this rank' "$tmp/err")
        if [ $rc -ne 0 ] || [ -z "$line" ]; then
          echo "boot_bench: $b n=$n $tp failed (rc $rc); its stderr: $out.fail-$bi-$tp-$n-$rep.log:" >&2
          cp "$tmp/err" "$out.fail-$bi-$tp-$n-$rep.log"
          grep -v INFO "$tmp/err" | head -3 >&2
          fail=1
          continue
        fi
        [ "$joined" -eq "$n" ] || req="" # the counts need every rank's line
        max=$(sed -n 's/.*init_max_s=\([0-9.]*\).*/\1/p' <<<"$line")
        mean=$(sed -n 's/.*init_mean_s=\([0-9.]*\).*/\1/p' <<<"$line")
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
        si=$(sed -n 's/.*sockets_init_mean=\([0-9.]*\).*/\1/p' <<<"$line")
        se=$(sed -n 's/.*sockets_end_mean=\([0-9.]*\).*/\1/p' <<<"$line")
        echo "$bi,$tp,$n,$rep,$max,$mean,$req,$wall,$served,$cards,$si,$se" >>"$out"
        echo "build $bi ($b) $tp n=$n rep $rep: init max ${max} s, ${req:-?} store requests, wall ${wall} s" >&2
      done
    done
  done
done
echo "$out"
# median per (build, transport, ranks) (insertion sort: mawk has no asort)
{ echo "build transport ranks init_max_s rdv_s requests requests/rank wall_s sock_init sock_end"
awk -F, 'function med(v, m,    i, j, x) {
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return v[int((m + 1) / 2)]
  }
  NR > 1 {k = $1 "," $2 "," $3; n[k]++; t[k, n[k]] = $5 + 0; r[k, n[k]] = $7 + 0; w[k, n[k]] = $8 + 0; c[k, n[k]] = $10 + 0; si[k, n[k]] = $11 + 0; se[k, n[k]] = $12 + 0}
  END {
    for (k in n) {
      m = n[k]; split("", a); split("", q); split("", z); split("", y); split("", u); split("", v)
      for (i = 1; i <= m; i++) { a[i] = t[k, i]; q[i] = r[k, i]; z[i] = w[k, i]; y[i] = c[k, i]; u[i] = si[k, i]; v[i] = se[k, i] }
      split(k, f, ",");
      ta = med(a, m); qa = med(q, m); za = med(z, m); ya = med(y, m); ua = med(u, m); va = med(v, m)
      printf "%s %s %s %.3f %.3f %d %.1f %.2f %.1f %.1f\n", f[1], f[2], f[3], ta, ya, qa, qa / f[3], za, ua, va;
    }
  }' "$out" | sort -k1,1n -k2,2 -k3,3n; } | column -t
exit $fail
