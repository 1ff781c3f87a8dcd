#!/usr/bin/env bash
# foldrun_test.sh — foldrun: usage errors, environment, output prefixes, exit status, failure lines, kill grace, signal forwarding, a rank that spews.
# Usage: foldrun_test.sh FOLDRUN CASE
set -u
F=$1 CASE=$2
T=$(mktemp -d /tmp/foldrun-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
check() { # check DESCRIPTION COMMAND...: count a failure when COMMAND fails
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what" >&2; fails=$((fails + 1)); fi
}
now() { date +%s.%N; }
# took T0 T1 LO HI: print T1 - T0 in seconds, succeed if LO <= it < HI. Bounds
# count from the event (a rank's exit, a signal), not from the launch: on a
# loaded host foldrun's start alone can take 3 s.
took() {
  awk -v a="$1" -v b="$2" -v lo="$3" -v hi="$4" 'BEGIN { d = b - a; printf "%.2f s", d; exit !(d >= lo && d < hi) }'
}

case "$CASE" in
usage)
  "$F" > "$T/o" 2> "$T/e"; check "no arguments -> 2" test $? -eq 2
  check "usage printed" grep -q "usage: foldrun -n N" "$T/e"
  "$F" -n 0 true 2> "$T/e"; check "-n 0 -> 2" test $? -eq 2
  "$F" -n x true 2> "$T/e"; check "-n x -> 2" test $? -eq 2
  "$F" -n 2 2> "$T/e"; check "no program -> 2" test $? -eq 2
  "$F" -n 2 --transport bogus true 2> "$T/e"; check "bad transport -> 2" test $? -eq 2
  "$F" -n 2 --timeout -1 true 2> "$T/e"; check "bad timeout -> 2" test $? -eq 2
  "$F" -n 2 --bogus true 2> "$T/e"; check "unknown option -> 2" test $? -eq 2
  "$F" -n 2 --bind socket true 2> "$T/e"; check "bad --bind -> 2" test $? -eq 2
  check "bad --bind named" grep -q 'bind wants core or none' "$T/e"
  "$F" --help > "$T/o"; check "--help -> 0" test $? -eq 0
  "$F" -n 2 /nonexistent/prog 2> "$T/e"; check "missing program -> 127" test $? -eq 127
  # MPI's spelling -np N is -n N; -n4 still parses as the short option
  "$F" -np 3 sh -c 'echo "$FOLD_RANK/$FOLD_SIZE"' > "$T/o"; check "-np 3 -> 0" test $? -eq 0
  check "-np 3 starts 3 ranks" test "$(sort "$T/o" | tr '\n' ' ')" = "[0] 0/3 [1] 1/3 [2] 2/3 "
  "$F" -n2 sh -c 'echo "$FOLD_SIZE"' > "$T/o"; check "-n2 -> 2 ranks" test "$(grep -c '] 2$' "$T/o")" -eq 2
  "$F" -np x true 2> "$T/e"; check "-np x -> 2" test $? -eq 2
  "$F" --version > "$T/o"; check "--version -> 0" test $? -eq 0
  check "--version prints the version of fold.h" grep -Eqx 'foldrun \(fold\) [0-9]+\.[0-9]+\.[0-9]+' "$T/o"
  ;;
bind)
  # The CPUs foldrun may use, in order; rank r must land on the (r mod count)-th.
  mine=$(grep Cpus_allowed_list /proc/self/status | tr -d '\t' | cut -d: -f2)
  cpus=$(python3 -c 'import os,sys; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
  set -- $cpus; ncpu=$#
  show='grep Cpus_allowed_list /proc/self/status | tr -d "\t" | cut -d: -f2'
  "$F" -n 3 --bind core -- sh -c "$show" > "$T/o"; check "--bind core -> 0" test $? -eq 0
  for r in 0 1 2; do
    want=$(echo $cpus | cut -d' ' -f$(( r % ncpu + 1 )))
    check "rank $r on cpu $want" grep -qx "\[$r\] $want" "$T/o"
  done
  "$F" -n 2 --bind none -- sh -c "$show" > "$T/o"
  check "--bind none keeps the whole set" test "$(sort -u < "$T/o" | sed 's/^\[[0-9]*\] //' | sort -u)" = "$mine"
  # default: bound when the ranks fit the CPUs, not when they do not
  "$F" -n "$ncpu" -- sh -c "$show" > "$T/o"
  check "default with N = CPUs: bound" test "$(sed 's/^\[[0-9]*\] //' "$T/o" | sort -u | wc -l)" -eq "$ncpu"
  check "default with N = CPUs: one CPU each" sh -c "! grep -q '[-,]' '$T/o'"
  "$F" -n $((ncpu + 1)) -- sh -c "$show" > "$T/o"
  check "default with N > CPUs: unbound" test "$(sed 's/^\[[0-9]*\] //' "$T/o" | sort -u)" = "$mine"
  ;;
env)
  # options after the program belong to the program ('+' in getopt)
  "$F" -n 3 --transport tcp --timeout 7 -- sh -c 'echo "$FOLD_RANK $FOLD_SIZE $FOLD_STORE $FOLD_TRANSPORT $FOLD_TIMEOUT ${#FOLD_JOB_TOKEN} $0 $1"' arg0 -n > "$T/o"
  check "exit 0" test $? -eq 0
  for r in 0 1 2; do
    check "rank $r env" grep -Eq "^\[$r\] $r 3 tcp://127\.0\.0\.1:[0-9]+ tcp 7 64 arg0 -n$" "$T/o"
  done
  check "one token for all" test "$(cut -d' ' -f4 "$T/o" | sort -u | wc -l)" -eq 1
  FOLD_RANK=9 FOLD_TRANSPORT=shm "$F" -n 1 sh -c 'echo "$FOLD_RANK ${FOLD_TRANSPORT:-unset}"' > "$T/o"
  check "inherited FOLD_RANK replaced, FOLD_TRANSPORT kept without --transport" grep -qx "\[0\] 0 shm" "$T/o"
  ;;
prefix)
  "$F" -n 3 sh -c 'echo "out $FOLD_RANK"; echo "err $FOLD_RANK" >&2; printf "a b"; sleep 0.1; printf " c\nno newline $FOLD_RANK"' > "$T/o" 2> "$T/e"
  check "exit 0" test $? -eq 0
  for r in 0 1 2; do
    check "stdout rank $r" grep -qx "\[$r\] out $r" "$T/o"
    check "stderr rank $r" grep -qx "\[$r\] err $r" "$T/e"
    check "line split across writes joined, rank $r" grep -qx "\[$r\] a b c" "$T/o"
    check "partial last line flushed, rank $r" grep -qx "\[$r\] no newline $r" "$T/o"
  done
  check "stdout has only stdout" test "$(grep -c err "$T/o")" -eq 0
  check "every line prefixed" test "$(grep -cv '^\[[0-2]\] ' "$T/o")" -eq 0
  # many lines from many ranks: none lost, none mixed
  "$F" -n 4 sh -c 'i=0; while [ $i -lt 500 ]; do echo "line $FOLD_RANK $i"; i=$((i+1)); done' > "$T/o"
  check "2000 lines" test "$(wc -l < "$T/o")" -eq 2000
  check "no mixed lines" test "$(grep -Evc '^\[([0-3])\] line \1 [0-9]+$' "$T/o")" -eq 0
  ;;
exitcode)
  "$F" -n 3 sh -c 'if [ "$FOLD_RANK" = 2 ]; then sleep 0.2; date +%s.%N > "$0"; exit 3; fi; exec sleep 30' "$T/t2" \
    2> "$T/e"
  st=$?
  t1=$(now)
  check "exit status of the failed rank (3), got $st" test $st -eq 3
  check "failure line" test "$(tail -n 1 "$T/e")" = "foldrun: rank 2 exited with status 3"
  check "exactly one foldrun line" test "$(grep -c '^foldrun:' "$T/e")" -eq 1
  d=$(took "$(cat "$T/t2")" "$t1" 0 3); rc=$?
  check "others stopped within 3 s of rank 2's exit ($d)" test $rc -eq 0
  "$F" -n 4 true; check "all succeed -> 0" test $? -eq 0
  ;;
sigkill)
  "$F" -n 3 sh -c 'if [ "$FOLD_RANK" = 1 ]; then kill -9 $$; fi; exec sleep 30' 2> "$T/e"
  st=$?
  check "non-zero exit ($st)" test $st -ne 0
  check "failure line names the signal" test "$(tail -n 1 "$T/e")" = "foldrun: rank 1 killed by signal 9 (SIGKILL)"
  check "exactly one foldrun line" test "$(grep -c '^foldrun:' "$T/e")" -eq 1
  ;;
firstdeath)
  # Rank 2 is SIGKILLed, then the others exit 3 (as survivors of a real job
  # fail on a lost peer), all while foldrun is stopped: it then finds every
  # exit at once, and must still name the rank that died first, with its own
  # status. (waitpid(-1) returns them in start order: rank 0 first.) Five
  # rounds, each bounded: every wait loop by count, foldrun by timeout.
  zombie() { [ "$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null)" = Z ]; }
  for round in 1 2 3 4 5; do
    rm -f "$T"/pid.* "$T/go"
    "$F" -n 4 sh -c 'echo $$ > "$0/pid.tmp.$FOLD_RANK"; mv "$0/pid.tmp.$FOLD_RANK" "$0/pid.$FOLD_RANK"
      [ "$FOLD_RANK" = 2 ] && exec sleep 30
      i=0; while [ ! -e "$0/go" ] && [ $i -lt 1000 ]; do i=$((i+1)); sleep 0.01; done
      exit 3' "$T" 2> "$T/e" &
    frun=$!
    for _ in $(seq 400); do [ "$(ls "$T" | grep -c '^pid\.[0-9]$')" = 4 ] && break; sleep 0.01; done
    kill -STOP $frun
    kill -KILL "$(cat "$T/pid.2")"
    for _ in $(seq 400); do zombie "$(cat "$T/pid.2")" && break; sleep 0.01; done
    touch "$T/go"
    for r in 0 1 3; do for _ in $(seq 400); do zombie "$(cat "$T/pid.$r")" && break; sleep 0.01; done; done
    kill -CONT $frun
    timeout 15 tail --pid=$frun -f /dev/null # bounded: a hung foldrun is killed
    kill -KILL $frun 2>/dev/null
    wait $frun
    st=$?
    check "round $round: exit 137 of the killed rank, got $st" test $st -eq 137
    check "round $round: names rank 2" test "$(grep '^foldrun:' "$T/e")" = "foldrun: rank 2 killed by signal 9 (SIGKILL)"
    [ $fails -eq 0 ] || { cat "$T/e"; break; }
  done
  ;;
grace)
  # rank 1 ignores SIGTERM: it is killed after the 3 s grace
  "$F" -n 2 sh -c 'if [ "$FOLD_RANK" = 0 ]; then sleep 0.3; date +%s.%N > "$0"; exit 1; fi; trap "" TERM; exec sleep 30' \
    "$T/t0" 2> "$T/e"
  check "non-zero exit" test $? -ne 0
  t1=$(now)
  d=$(took "$(cat "$T/t0")" "$t1" 2.9 6); rc=$?
  check "SIGKILL ~3 s after rank 0's exit ($d)" test $rc -eq 0
  check "failure line names rank 0" test "$(tail -n 1 "$T/e")" = "foldrun: rank 0 exited with status 1"
  ;;
forward)
  # a background job of a script starts with SIGINT ignored: give foldrun the default
  for sig in TERM INT HUP; do
    rm -f "$T/o" "$T/e" # the previous round's "ready" lines must not count
    env --default-signal=INT,TERM,HUP "$F" -n 2 sh -c 'trap "echo got $0; kill \$! 2>/dev/null; exit 0" '$sig'; echo ready; sleep 30 & wait' $sig > "$T/o" 2> "$T/e" &
    pid=$!
    for _ in $(seq 100); do [ "$(grep -c ready "$T/o" 2>/dev/null)" = 2 ] && break; sleep 0.05; done
    kill -$sig $pid
    wait $pid
    st=$?
    check "SIG$sig: ranks exit 0 -> foldrun 0 (got $st)" test $st -eq 0
    check "SIG$sig forwarded to rank 0" grep -qx "\[0\] got $sig" "$T/o"
    check "SIG$sig forwarded to rank 1" grep -qx "\[1\] got $sig" "$T/o"
    [ $fails -eq 0 ] || { echo "--- stdout:"; cat "$T/o"; echo "--- stderr:"; cat "$T/e"; }
  done
  # default action: ranks die of the forwarded signal, foldrun reports it
  rm -f "$T/o" "$T/e"
  env --default-signal=TERM "$F" -n 2 sh -c 'echo ready; exec sleep 30' > "$T/o" 2> "$T/e" &
  pid=$!
  for _ in $(seq 100); do [ "$(grep -c ready "$T/o" 2>/dev/null)" = 2 ] && break; sleep 0.05; done
  kill -TERM $pid
  wait $pid
  check "killed ranks -> non-zero" test $? -ne 0
  check "report names SIGTERM" grep -Eq "^foldrun: rank [01] killed by signal 15 \(SIGTERM\)$" "$T/e"
  ;;
spew)
  # A rank writing faster than foldrun re-emits keeps its pipe full; foldrun
  # must still notice another rank's failure and signals between reads.
  # Every wait is bounded: a hung foldrun is SIGKILLed after 15 s.
  wait_bounded() { # wait_bounded PID: wait at most 15 s for PID, then kill it; status in $st
    timeout 15 tail --pid="$1" -s 0.1 -f /dev/null
    kill -KILL "$1" 2>/dev/null
    wait "$1"; st=$?
  }
  "$F" -n 2 sh -c 'if [ "$FOLD_RANK" = 0 ]; then exec yes; fi; sleep 0.5; date +%s.%N > "$0"; exit 3' "$T/t1" \
    > /dev/null 2> "$T/e" &
  wait_bounded $!
  t1=$(now)
  check "failed rank's status (3) while rank 0 spews, got $st" test $st -eq 3
  check "failure line names rank 1" test "$(tail -n 1 "$T/e")" = "foldrun: rank 1 exited with status 3"
  d=$(took "$(cat "$T/t1")" "$t1" 0 2.5); rc=$?
  check "failure noticed within 2.5 s of rank 1's exit ($d)" test $rc -eq 0
  # The ranks start only once foldrun takes its signals through its signalfd:
  # a SIGTERM sent before both run could kill foldrun itself, unreported.
  env --default-signal=TERM "$F" -n 2 sh -c 'touch "$0.$FOLD_RANK"; exec yes' "$T/up" > /dev/null 2> "$T/e" &
  pid=$!
  for _ in $(seq 300); do [ -e "$T/up.0" ] && [ -e "$T/up.1" ] && break; sleep 0.05; done
  sleep 0.5 # let the pipes fill
  t0=$(now)
  kill -TERM $pid
  wait_bounded $pid
  t1=$(now)
  check "SIGTERM while ranks spew -> non-zero ($st)" test $st -ne 0
  check "report names SIGTERM" grep -Eq "^foldrun: rank [01] killed by signal 15 \(SIGTERM\)$" "$T/e"
  d=$(took "$t0" "$t1" 0 3); rc=$?
  check "exit within 3 s of SIGTERM ($d)" test $rc -eq 0
  ;;
*)
  echo "unknown case $CASE" >&2; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "foldrun_test $CASE: all checks passed"
[ $fails -eq 0 ]
