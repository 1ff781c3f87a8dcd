#!/usr/bin/env bash
# omb_test.sh — the OSU Micro-Benchmarks, unmodified, built with fold-mpicc and run under fold-mpiexec at n = 2
# with small iteration counts: osu_allreduce, osu_bcast, osu_barrier, osu_latency, osu_allgatherv and
# osu_alltoallv, osu_iallgatherv run and print every size; osu_ialltoallw, which needs MPI_Ialltoallw, fails
# naming it with MPI_ERR_UNSUPPORTED_OPERATION. OMB 5.7 has
# no validation option (-c came in later versions): the check is that each runs to the end with sane rows.
# Usage: omb_test.sh OMB_DIR BUILD_DIR. Exit 77 (ctest: skipped) when OMB_DIR is not there.
set -euo pipefail
O=$1 B=$2
if [ ! -f "$O/mpi/collective/osu_allreduce.c" ]; then
  echo "omb_test: the OSU Micro-Benchmarks sources are not at $O: skipped (they are optional)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
mpicc="$B/fold-mpicc" mpiexec="$B/fold-mpiexec"
# the command fold-mpicc runs names fold's mpi.h directory and libraries
"$mpicc" -show -c x.c | grep -q -- "-I" || { echo "fold-mpicc -show printed no include path" >&2; exit 1; }
"$mpicc" -show x.c | grep -q -- "-lfoldmpi" || { echo "fold-mpicc -show printed no -lfoldmpi" >&2; exit 1; }
"$mpicc" -O2 -I"$O/util" -c "$O/util/osu_util.c" "$O/util/osu_util_mpi.c"
for b in collective/osu_allreduce collective/osu_bcast collective/osu_barrier pt2pt/osu_latency collective/osu_allgatherv \
    collective/osu_alltoallv collective/osu_iallgatherv collective/osu_ialltoallw; do
  "$mpicc" -O2 -I"$O/util" "$O/mpi/$b.c" osu_util.o osu_util_mpi.o -o "$(basename $b)" -lm
done
# run NAME ARGS...: 2 ranks, output in NAME.out; fails the test on a nonzero exit
run() {
  local name=$1; shift
  if ! timeout 60 "$mpiexec" -n 2 --timeout 20 "./$name" "$@" >"$name.out" 2>&1; then
    echo "omb_test: $name failed:" >&2; cat "$name.out" >&2; exit 1
  fi
  cat "$name.out"
}
# rows "size latency": every size from min to max, each with a positive number
rows() {
  local name=$1 want=$2 got
  got=$(awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ && $3 + 0 > 0 { n++ } END { print n + 0 }' "$name.out")
  [ "$got" = "$want" ] || { echo "omb_test: $name printed $got size rows, want $want" >&2; exit 1; }
}
run osu_allreduce -m 4:16384 -i 50 -x 5; rows osu_allreduce 13
run osu_bcast -m 1:16384 -i 50 -x 5; rows osu_bcast 15
run osu_latency -m 0:16384 -i 50 -x 5; rows osu_latency 16
run osu_allgatherv -m 1:4096 -i 20 -x 2; rows osu_allgatherv 13
run osu_alltoallv -m 1:4096 -i 20 -x 2; rows osu_alltoallv 13
run osu_iallgatherv -m 1:1024 -i 10 -x 2; rows osu_iallgatherv 11
run osu_barrier -i 50 -x 5
awk '$1 == "[0]" && $2 + 0 > 0 { ok = 1 } END { exit !ok }' osu_barrier.out || { echo "omb_test: osu_barrier printed no latency" >&2; exit 1; }
# a benchmark that needs an unsupported call ends with a message naming it
if timeout 60 "$mpiexec" -n 2 --timeout 20 ./osu_ialltoallw -m 1:16 -i 5 >osu_ialltoallw.out 2>&1; then
  echo "omb_test: osu_ialltoallw succeeded, but MPI_Ialltoallw is not supported" >&2; exit 1
fi
grep -q "MPI_Ialltoallw.*MPI_ERR_UNSUPPORTED_OPERATION" osu_ialltoallw.out ||
  { echo "omb_test: osu_ialltoallw did not fail naming MPI_Ialltoallw:" >&2; cat osu_ialltoallw.out >&2; exit 1; }
echo "omb_test: osu_allreduce, osu_bcast, osu_barrier, osu_latency, osu_allgatherv, osu_alltoallv," \
  "osu_iallgatherv ran on fold; osu_ialltoallw named MPI_Ialltoallw as unsupported"
