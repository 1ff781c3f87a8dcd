#!/usr/bin/env bash
# rules_e2e.sh — FOLD_RULES end to end under foldrun (the algorithm that runs, bad files) and fold-bench --tune files.
# Usage: rules_e2e.sh BUILD_DIR select TRANSPORT   rules pick the algorithm that runs; a bad file warns and falls back
#        rules_e2e.sh BUILD_DIR hier               the multihost rule picks hier on 2 x 2 test hosts, not elsewhere
#        rules_e2e.sh BUILD_DIR tune               --tune at n=3 over shm, then tcp, into one file that FOLD_RULES accepts
set -uo pipefail
B=$1 mode=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; for f in out err; do echo "--- $f" >&2; tail -40 "$tmp/$f" >&2 2>/dev/null; done; exit 1; }

# run N TRANSPORT [env...] -- fold-bench args: fold-bench under foldrun, output in $tmp/out, $tmp/err
run() {
  local n=$1 tp=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout -k 5 120 "$B/foldrun" -n "$n" --transport "$tp" --timeout 60 -- "$B/fold-bench" "$@" \
    >"$tmp/out" 2>"$tmp/err"
}

case $mode in
select)
  tp=$1
  other=tcp
  [ "$tp" = tcp ] && other=shm
  # Line numbers matter: the trace names FILE:LINE of the rule that chose.
  cat >"$tmp/r.rules" <<EOF
# end-to-end rules
allreduce $other 3 * direct           # another transport: must not match
allreduce $tp 3 0-1K recursive_doubling
allreduce $tp 3 4K ring               # exactly 4096 bytes
allreduce * 4- * reduce_bcast         # another rank count

broadcast $tp 3 * scatter_allgather
EOF
  run 3 "$tp" FOLD_DEBUG=TRACE FOLD_RULES="$tmp/r.rules" -- -c allreduce -b 1K -e 8K -n 1 -w 0 --check ||
    fail "allreduce run failed"
  grep -q 'Wrong elements : 0 OK' "$tmp/out" || fail "wrong results"
  grep -q WARN "$tmp/err" && fail "a valid file warned"
  for r in 0 1 2; do
    want="\[$r\] fold\[rank $r\] TRACE: fold_allreduce"
    grep -q "$want: 1024 B, 3 ranks, $tp: recursive_doubling ($tmp/r.rules:3)\$" "$tmp/err" || fail "rank $r: 1 KiB not by line 3"
    grep -q "$want: 4096 B, 3 ranks, $tp: ring ($tmp/r.rules:4)\$" "$tmp/err" || fail "rank $r: 4 KiB not by line 4"
    grep -q "$want: 8192 B, 3 ranks, $tp: .* (built-in rule [0-9]*)\$" "$tmp/err" || fail "rank $r: 8 KiB not built-in"
  done
  grep -q "direct ($tmp/r.rules:2)" "$tmp/err" && fail "the $other rule matched on $tp"
  run 3 "$tp" FOLD_DEBUG=TRACE FOLD_RULES="$tmp/r.rules" -- -c broadcast -b 64 -e 64 -n 1 -w 0 --check ||
    fail "broadcast run failed"
  grep -q "TRACE: fold_broadcast: 64 B, 3 ranks, $tp: scatter_allgather ($tmp/r.rules:7)\$" "$tmp/err" ||
    fail "broadcast not by line 7"

  # A bad file: every rank warns with FILE:LINE, runs, and uses the built-in rules.
  printf 'allreduce %s 3 * ring\nallreduce %s 3 0-1K rign\n' "$tp" "$tp" >"$tmp/bad.rules"
  run 3 "$tp" FOLD_DEBUG=TRACE FOLD_RULES="$tmp/bad.rules" -- -c allreduce -b 1K -e 1K -n 1 -w 0 --check ||
    fail "a bad file stopped the run"
  grep -q 'Wrong elements : 0 OK' "$tmp/out" || fail "wrong results with a bad file"
  for r in 0 1 2; do
    grep -qF "[$r] fold[rank $r] WARN: FOLD_RULES: $tmp/bad.rules:2: allreduce has no algorithm \"rign\" (known: reduce_bcast recursive_doubling rabenseifner ring ring_segmented direct shm ring_skip hier) (FOLD_RULES ignored: using the built-in rules)" "$tmp/err" ||
      fail "rank $r: no FILE:LINE warning"
  done
  grep -q "(built-in rule [0-9]*)\$" "$tmp/err" || fail "no built-in choice after a bad file"
  grep -q "bad.rules:1)" "$tmp/err" && fail "a rule of a rejected file was used"
  run 3 "$tp" FOLD_RULES="$tmp/missing.rules" -- -c allreduce -b 8 -e 8 -n 1 -w 0 || fail "a missing file stopped the run"
  grep -qF "WARN: FOLD_RULES: $tmp/missing.rules: cannot open: No such file or directory" "$tmp/err" || fail "no missing-file warning"
  # What is not a small regular file is refused at once, with one warning
  # per rank naming the file and why: an endless device, a FIFO (opening
  # or reading it would block fold_init forever), a directory, a file over
  # the 1 MiB limit, a file whose read fails (EIO).
  mkfifo "$tmp/fifo"
  truncate -s 1048577 "$tmp/huge.rules"
  for bad in "/dev/zero|a character device, not a regular file" "$tmp/fifo|a FIFO, not a regular file" \
    "$tmp|a directory, not a regular file" \
    "$tmp/huge.rules|1048577 bytes, over the limit of 1048576 for a rules file" \
    "/proc/self/mem|read error: Input/output error"; do
    f=${bad%%|*} why=${bad#*|}
    env FOLD_RULES="$f" timeout -k 5 60 "$B/foldrun" -n 3 --transport "$tp" --timeout 30 -- "$B/fold-bench" \
      -c allreduce -b 8 -e 8 -n 1 -w 0 --check >"$tmp/out" 2>"$tmp/err" || fail "FOLD_RULES=$f: the run failed"
    grep -q 'Wrong elements : 0 OK' "$tmp/out" || fail "FOLD_RULES=$f: wrong results"
    [ "$(grep -cF "WARN: FOLD_RULES: $f: $why (FOLD_RULES ignored: using the built-in rules)" "$tmp/err")" -eq 3 ] ||
      fail "FOLD_RULES=$f: want one warning per rank: $why"
    [ "$(grep -c WARN "$tmp/err")" -eq 3 ] || fail "FOLD_RULES=$f: other warnings"
  done
  # FOLD_ALGO with an empty item: the same grammar as fold_comm_set_algo,
  # reported once per rank and ignored.
  run 3 "$tp" FOLD_ALGO="allreduce=ring," -- -c allreduce -b 8 -e 8 -n 1 -w 0 --check || fail "a bad FOLD_ALGO stopped the run"
  [ "$(grep -cF 'WARN: FOLD_ALGO: item 2 of "allreduce=ring," is empty' "$tmp/err")" -eq 3 ] ||
    fail "FOLD_ALGO=allreduce=ring,: want one warning per rank"
  echo "ok: rules select on $tp; bad files warn and fall back"
  ;;
tune)
  f=$tmp/tuned.rules
  # a rule of someone else's (another rank count) must survive both runs
  printf '# mine\nallreduce tcp 5 * ring   # keep\n' >"$f"
  for tp in shm tcp; do
    run 3 "$tp" -- --tune "$f" -b 64 -e 64K -f 32 -n 3 -w 1 || fail "--tune over $tp failed"
    grep -q "^\[0\] # written to $f" "$tmp/out" || fail "$tp: no 'written to' line"
    grep -q WARN "$tmp/err" && fail "$tp: warnings"
    cp "$tmp/out" "$tmp/out.$tp"
  done
  cp "$f" "$tmp/first.rules"
  # A second shm run replaces the shm rules instead of adding to them.
  run 3 shm -- --tune "$f" -c allreduce -b 64 -e 64K -f 32 -n 3 -w 1 || fail "--tune again failed"
  grep -q 'allreduce tcp 5 \* ring   # keep' "$f" || fail "a foreign rule was lost"
  for tp in shm tcp; do
    for c in allreduce broadcast reduce reduce_scatter allgather gather scatter alltoall barrier; do
      grep -q "^# $c, 3 ranks, $tp: fold-bench --tune" "$f" || fail "no $c block for $tp"
      [ "$(grep -c "^# $c, 3 ranks, $tp:" "$f")" -eq 1 ] || fail "$c block for $tp twice"
      awk -v c="$c" -v t="$tp" '$1 == c && $2 == t && $3 == "3"' "$f" | grep -q . || fail "no $c rules for $tp"
    done
    # every size is covered: the first range starts at 0 (or is *), the last is open
    awk -v t="$tp" '$2 == t && $3 == "3" && $4 !~ /^(\*|0-|[0-9]+-$|[0-9]+-[0-9]+$)/' "$f" | grep -q . && fail "odd range"
  done
  # tcp barrier: shm cannot run (N/A), and the one rule names the winner of the measured row
  bar=$(awk '/# tune barrier: 3 ranks, tcp/ {on = 1; next} on && /^\[0\] # *bytes/ {for (i = 4; i < NF; i++) h[i] = $i; next}
             on && /^\[0\] +0 / {for (i = 3; i < NF; i++) if ($i == "N/A") na = na " " h[i + 1]; print $NF, na; exit}' "$tmp/out.tcp")
  [ -n "$bar" ] || fail "no tcp barrier row in the --tune table"
  case " $bar " in *" shm "*) ;; *) fail "tcp barrier: shm was timed over tcp ($bar)" ;; esac
  [ "$(awk '$1 == "barrier" && $2 == "tcp" {print $3, $4, $5}' "$f")" = "3 * ${bar%% *}" ] ||
    fail "tcp barrier: want one rule for every size naming the winner ${bar%% *}"
  [ "$(awk '$1 == "allreduce" && $2 == "shm"' "$f" | wc -l)" -le 3 ] || fail "shm rules were added, not replaced"
  ls "$tmp" | grep -q '\.tmp\.' && fail "a temp file was left"
  # FOLD_RULES accepts the file and its rules choose
  for tp in shm tcp; do
    run 3 "$tp" FOLD_DEBUG=TRACE FOLD_RULES="$f" -- -c all -b 64 -e 64K -f 32 -n 1 -w 0 --check || fail "run with the tuned file"
    grep -q WARN "$tmp/err" && fail "the tuned file was rejected"
    grep -q 'Wrong elements : 0 OK' "$tmp/out" || fail "wrong results with the tuned file"
    grep -q "TRACE: fold_allreduce: 64 B, 3 ranks, $tp: [a-z_]* ($f:[0-9]*)\$" "$tmp/err" || fail "$tp: allreduce not by the tuned file"
    grep -q "TRACE: fold_alltoall: [0-9]* B, 3 ranks, $tp: [a-z_]* ($f:[0-9]*)\$" "$tmp/err" || fail "$tp: alltoall not by the tuned file"
  done
  # bad --tune command lines
  for args in "--tune $f -a ring" "--tune $f --check" "--tune $f -c nosuch" "--tune"; do
    "$B/fold-bench" $args >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 2 ] || fail "fold-bench $args: want exit 2"
    grep -q '^usage: fold-bench' "$tmp/err" || fail "fold-bench $args: no usage"
  done
  # an unwritable destination is an error, not a silent success
  run 3 shm -- --tune "$tmp/no/such/dir/x.rules" -c gather -b 64 -e 64 -n 1 -w 0 && fail "unwritable file: exit 0"
  grep -q "cannot write $tmp/no/such/dir/x.rules" "$tmp/err" || fail "no 'cannot write' message"
  echo "ok: --tune over shm and tcp into one file, accepted by FOLD_RULES"
  ;;
hier)
  # The built-in multihost rule: 4 processes as 2 test hosts x 2 (shm
  # inside, tcp between) pick hier for a 1 MiB allreduce on their own,
  # and the results check (every rank leading its half: a lane allreduce
  # of 512 KiB over tcp); an 8-byte call, one host and a rank per host
  # keep the flat choice.
  # hrun MAP -- fold-bench args: 4 processes, transports as the map says
  hrun() {
    local map=$1
    shift 2
    FOLD_TEST_HOST_MAP=$map FOLD_DEBUG=TRACE timeout -k 5 120 "$B/foldrun" -n 4 --timeout 60 -- "$B/fold-bench" "$@" \
      >"$tmp/out" 2>"$tmp/err"
  }
  hrun 0,0,1,1 -- -c allreduce -b 8 -e 1M -f 131072 -n 2 -w 1 --check || fail "2 x 2 run failed"
  grep -q 'Wrong elements : 0 OK' "$tmp/out" || fail "2 x 2: wrong results"
  for r in 0 1 2 3; do
    want="\[$r\] fold\[rank $r\] TRACE: fold_allreduce"
    grep -q "$want: 1048576 B, 4 ranks, tcp: hier (built-in rule [0-9]*)\$" "$tmp/err" || fail "rank $r: 1 MiB not hier"
    grep -q "$want: 8 B, 4 ranks, tcp: hier" "$tmp/err" && fail "rank $r: hier at 8 B"
    # hosts of one size, 1 MiB: every rank leads its half (a lane of 2 ranks, one per host, over tcp)
    grep -q "\[$r\] fold\[rank [01]\] TRACE: lane allreduce: 524288 B, 2 ranks, tcp: " "$tmp/err" ||
      fail "rank $r: 1 MiB hier did not run its half in a lane"
  done
  for map in 0 0,1,2,3; do
    hrun $map -- -c allreduce -b 1M -e 1M -n 1 -w 0 --check || fail "map $map: run failed"
    grep -q 'Wrong elements : 0 OK' "$tmp/out" || fail "map $map: wrong results"
    grep -q "TRACE: fold_allreduce: 1048576 B, 4 ranks, [a-z]*: [a-z_]* (built-in rule" "$tmp/err" || fail "map $map: no trace"
    grep -q "TRACE: fold_allreduce: 1048576 B, 4 ranks, [a-z]*: hier" "$tmp/err" && fail "map $map: hier picked"
  done
  echo "ok: hier picked on 2 x 2 test hosts for 1 MiB, not at 8 B, on one host or a rank per host"
  ;;
*)
  echo "rules_e2e.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
