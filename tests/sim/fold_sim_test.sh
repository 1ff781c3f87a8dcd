#!/usr/bin/env bash
# fold_sim_test.sh — fold-sim: output format, sim/model ratio, CSV columns and plot, --slow, hier, bad arguments.
# Usage: fold_sim_test.sh FOLD_SIM CASE
set -u
F=$1 CASE=$2
T=$(mktemp -d /tmp/fold-sim-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
check() { # check DESCRIPTION COMMAND...: count a failure when COMMAND fails
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what" >&2; fails=$((fails + 1)); fi
}
# ratio_near FILE ALGO N LO HI: the sim/model column of that row lies in [LO, HI]
ratio_near() { awk -v a="$2" -v n="$3" -v lo="$4" -v hi="$5" '$2 == a && $3 == n { found = 1; if ($7 < lo || $7 > hi) bad = 1 } END { exit !(found && !bad) }' "$1"; }

case "$CASE" in
run)
  timeout 60 "$F" -c allreduce -a ring -n 8 -b 1M > "$T/o" 2> "$T/e"; check "ring n=8 -> 0" test $? -eq 0
  cat "$T/o"
  check "parameter line" grep -q '^# fold-sim: latency 5e-06 s, bandwidth 1.25e+10 B/s, op_time 0 s/B, op_overhead 0 s$' "$T/o"
  check "header" grep -Eq '^collective +algorithm +n +bytes +sim_s +model_s +sim/model$' "$T/o"
  check "one row, format" test "$(grep -Ec '^allreduce +ring +8 +1048576 +[0-9.]+e-[0-9]+ +[0-9.]+e-[0-9]+ +[0-9]\.[0-9]{3}$' "$T/o")" -eq 1
  check "ring n=8: sim/model = 1.000" ratio_near "$T/o" ring 8 1.000 1.000
  # every allreduce algorithm within 10% of its model, op_time included
  for a in recursive_doubling rabenseifner direct ring_segmented; do
    timeout 60 "$F" -a $a -n 8,16 -b 64K --op-time 1e-10 > "$T/o" 2> "$T/e"; check "$a -> 0" test $? -eq 0
    check "$a n=16 near the model" ratio_near "$T/o" $a 16 0.9 1.1
  done
  # the library's own choice: each row names the algorithm it picked and
  # shows that algorithm's model (the one forcing it gives)
  timeout 60 "$F" -n 4 -b 4K,4M > "$T/o" 2> "$T/e"; check "auto -> 0" test $? -eq 0
  cat "$T/o"
  check "auto: two rows naming the pick, with its model" \
    test "$(grep -Ec '^allreduce +auto:[a-z_]+ +4 +(4096|4194304) +[0-9.]+e-[0-9]+ +[0-9.]+e-[0-9]+ +[0-9]\.[0-9]{3}$' "$T/o")" -eq 2
  for b in 4096 4194304; do
    a=$(awk -v b=$b '$3 == 4 && $4 == b { sub(/^auto:/, "", $2); print $2 }' "$T/o")
    m=$(awk -v b=$b '$3 == 4 && $4 == b { print $6 }' "$T/o")
    timeout 60 "$F" -n 4 -b $b -a "$a" > "$T/f" 2> "$T/e"; check "forcing $a -> 0" test $? -eq 0
    check "auto at $b B ran $a: the same model" test "$(awk -v b=$b '$3 == 4 && $4 == b { print $6 }' "$T/f")" = "$m"
  done
  ;;
csv)
  timeout 120 "$F" -c allgather -a ring -n 2:16:x2 -b 8:2K:x4 --latency 1e-6 --bandwidth 1e9 --csv "$T/s.csv" > "$T/o" 2> "$T/e"
  check "sweep -> 0" test $? -eq 0
  cat "$T/o" "$T/e"
  check "CSV header" test "$(head -1 "$T/s.csv")" = "collective,algorithm,n,bytes,sim_s,model_s,ratio,latency_s,byte_time_s,op_time_s,op_overhead_s,slow,hosts,ppn,layout,host_latency_s,host_byte_time_s"
  check "CSV rows: 4 n x 5 sizes" test "$(tail -n +2 "$T/s.csv" | wc -l)" -eq 20
  check "CSV 17 columns everywhere" awk -F, 'NF != 17 { exit 1 }' "$T/s.csv"
  check "CSV no hosts: host columns empty" awk -F, 'NR > 1 && ($13 != "" || $15 != "") { exit 1 }' "$T/s.csv"
  check "CSV n and bytes swept" test "$(cut -d, -f3,4 "$T/s.csv" | tail -n +2 | sort -u | wc -l)" -eq 20
  # sim - model is exactly the collective's signature message (32 B, sizeof
  # fold__sig) at 1 ns/B: the model leaves it out, nothing else differs.
  check "CSV sim = model + the 32 B signature message" awk -F, 'NR > 1 && ($5 - $6 - 32e-9 > 1e-13 || $5 - $6 - 32e-9 < -1e-13) { exit 1 }' "$T/s.csv"
  check "CSV parameters" awk -F, 'NR > 1 && ($8 != "1e-06" || $9 != "1e-09") { exit 1 }' "$T/s.csv"
  if command -v gnuplot > /dev/null; then
    check "PNG written" test -s "$T/s.png"
    check "PNG is a PNG" sh -c "head -c 8 '$T/s.png' | od -c | grep -q 'P   N   G'"
    # auto sweeps plot the picked algorithms' models too
    timeout 120 "$F" -n 2:8:x2 -b 64K --csv "$T/a.csv" > "$T/o" 2> "$T/e"; check "auto sweep -> 0" test $? -eq 0
    check "auto PNG written" test -s "$T/a.png"
    check "auto CSV names the picks" awk -F, 'NR > 1 && $2 !~ /^auto:[a-z_]+$/ { exit 1 }' "$T/a.csv"
  else
    check "no gnuplot: a note" grep -q "gnuplot not found" "$T/e"
  fi
  # a single point writes the CSV, no plot
  timeout 60 "$F" -a ring -n 4 -b 64 --csv "$T/one.csv" > "$T/o" 2> "$T/e"; check "one point -> 0" test $? -eq 0
  check "one point: 2 lines" test "$(wc -l < "$T/one.csv")" -eq 2
  check "one point: no PNG" test ! -e "$T/one.png"
  ;;
slow)
  # rank 3 computes 1 ms first: ring waits for it (the model does not know)
  timeout 60 "$F" -a ring -n 8 -b 1M --slow 3:0.001 --csv "$T/s.csv" > "$T/o" 2> "$T/e"; check "--slow -> 0" test $? -eq 0
  cat "$T/o"
  check "slow ranks named" grep -q 'slow ranks (rank:seconds) 3:0.001' "$T/o"
  check "sim >= model + 1 ms" awk -F, 'NR == 2 { exit !($5 >= $6 + 0.001) }' "$T/s.csv"
  check "CSV slow column" awk -F, 'NR == 2 { exit !($12 == "3:0.001") }' "$T/s.csv"
  timeout 60 "$F" -a recursive_doubling -n 4 -b 4K --op-overhead 0.5 > "$T/o" 2> "$T/e"; check "--op-overhead -> 0" test $? -eq 0
  # two reduction calls per rank at n = 4, each 0.5 s on the critical path
  check "op_overhead: about 1 s" awk '$1 == "allreduce" { exit !($5 > 1.0 && $5 < 1.001) }' "$T/o"
  ;;
hosts)
  # hosts of ranks sharing a NIC: the ring within 5% of its closed form in
  # both layouts, round robin (every hop crosses the network) slower
  for l in contiguous roundrobin; do
    timeout 120 "$F" -a ring --hosts 8,16 --ppn 4 -b 8,1M --layout $l --csv "$T/$l.csv" --png "$T/$l.png" > "$T/$l" 2> "$T/e"
    check "ring $l -> 0" test $? -eq 0
    cat "$T/$l"
    check "$l: parameter line names the hosts" grep -q "hosts of 4 ranks ($l)" "$T/$l"
    check "$l: n = hosts * ppn" test "$(awk '$2 == "ring" { print $3 }' "$T/$l" | sort -u | tr '\n' ' ')" = "32 64 "
    check "$l: ring near its closed form" ratio_near "$T/$l" ring 64 0.95 1.05
    check "$l: CSV host columns" awk -F, -v l=$l 'NR > 1 && ($13 * $14 != $3 || $14 != 4 || $15 != l || $16 != "5e-07") { exit 1 }' "$T/$l.csv"
  done
  c=$(awk '$3 == 64 && $4 == 1048576 { print $5 }' "$T/contiguous"); r=$(awk '$3 == 64 && $4 == 1048576 { print $5 }' "$T/roundrobin")
  check "round robin ring slower than contiguous ($r > $c)" awk -v c="$c" -v r="$r" 'BEGIN { exit !(r > 2 * c) }'
  # recursive doubling: every layout gives log2 ppn rounds inside, log2 hosts across
  timeout 60 "$F" -a recursive_doubling --hosts 16 --ppn 8 -b 64K --layout roundrobin > "$T/o" 2> "$T/e"
  check "recursive_doubling -> 0" test $? -eq 0
  check "recursive_doubling near its closed form" ratio_near "$T/o" recursive_doubling 128 0.95 1.05
  ;;
hier)
  # hier on 8 hosts x 4 (contiguous and round robin), after one untimed
  # call: within 10% of its closed form (the sum of its phases' models):
  # allreduce at every size; broadcast where bytes count (at 8 B - 4 KiB
  # the rooted calls' ceil(log2 n) signature rounds on the parent, not in
  # the closed form, add 10-21%); and bench/hier_sim.sh's CSV and table.
  # fold-sim's closed form of hier is the one-leader form
  # (FOLD_HIER_LEADERS=one); bench/hier_sim.sh makes the every-rank-leading
  # one (hier_all) and its table checks it too.
  for layout in contiguous roundrobin; do
    for c in allreduce broadcast; do
      FOLD_HIER_LEADERS=one timeout 120 "$F" -c $c -a hier --hosts 8 --ppn 4 --layout $layout -b 8,4K,256K --warmup 1 > "$T/o" 2> "$T/e"
      check "hier $c $layout -> 0" test $? -eq 0
      want=3
      [ $c = broadcast ] && want=1
      check "hier $c $layout: $want row(s) within 10% of the closed form" \
        test "$(awk '$2 == "hier" && $3 == 32 && $7 >= 0.9 && $7 <= 1.1' "$T/o" | wc -l)" -ge $want
      check "hier $c $layout: 256 KiB within 10%" grep -Eq '^'$c' +hier +32 +262144 .* (0\.9[0-9]{2}|1\.0[0-9]{2}|1\.100)$' "$T/o"
    done
  done
  FOLD_HIER_LEADERS=one timeout 60 "$F" -a hier --hosts 8 --ppn 4 -b 1M --sim-cap 1 > "$T/o" 2> "$T/e"
  check "--sim-cap: the model only" grep -Eq '^allreduce +hier +32 +1048576 +- +[0-9.]+e-[0-9]+ +-$' "$T/o"
  S=$(dirname "$0")/../../bench/hier_sim.sh
  CONFIGS=4x2 COLLS=allreduce SIZES=8,64K timeout 120 "$S" "$(dirname "$F")" "$T" > "$T/o" 2> "$T/e"
  check "hier_sim.sh -> 0" test $? -eq 0
  check "hier_sim.sh: a CSV row per algorithm and size" test "$(grep -c '^allreduce,' "$T/hier_sim_4x2.csv")" -eq 12
  check "hier_sim.sh: the table (hier and hier_all within 10% of their closed forms)" \
    grep -Eq '^65536 [a-z_]+ [0-9.e+-]+ [0-9.e+-]+ [0-9.e+-]+ [0-9.]+ 1\.0[0-9]{2} [0-9.e+-]+ [0-9.e+-]+ [0-9.]+ (0\.9[0-9]{2}|1\.0[0-9]{2}|1\.100)$' "$T/o"
  ;;
badargs)
  for args in "" "--bogus 1" "-c nothing" "-n 0" "-n x" "-n 4:2:x2" "-n 2:8:x1" "-b 3" "-b 12Q" "--latency -1" \
      "--bandwidth 0" "--op-time nan" "--slow 3" "--slow 9:1 -n 4" "--slow 1:-2" "-a nosuch" "-c gather -a ring" "-n" \
      "--hosts 4" "--ppn 4" "--hosts 4 --ppn 4 -n 16" "--hosts 0 --ppn 2" "--hosts 2 --ppn 0" \
      "--hosts 2 --ppn 2 --layout diagonal" "--host-latency -1" "--host-bandwidth 0"; do
    [ -z "$args" ] && continue
    timeout 30 "$F" $args > "$T/o" 2> "$T/e"; rc=$?
    check "'$args' -> 2" test $rc -eq 2
    check "'$args' prints usage" grep -q "^usage: fold-sim" "$T/e"
  done
  timeout 30 "$F" -c nothing 2> "$T/e"; check "names the bad collective" grep -q "unknown collective 'nothing'" "$T/e"
  timeout 30 "$F" --help > "$T/o"; check "--help -> 0" test $? -eq 0
  check "--help prints usage" grep -q "^usage: fold-sim" "$T/o"
  ;;
*) echo "unknown case $CASE" >&2; exit 2 ;;
esac
[ $fails -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
