#!/usr/bin/env bash
# kill_resume.sh — KMeans on digits at 4 ranks with a checkpoint every superstep; rank 2 SIGKILLs itself in
# superstep 6; the job is rerun on the same dir and must resume (not start over) and end bit for bit equal to
# an uninterrupted run. Before that, a rerun with max_iter 3 (below the checkpoint's superstep 5) is refused
# naming the file, and leaves the files in place.
set -u
F=$1 R=$2 D=$3
T=$(mktemp -d /tmp/fold-iqkill.XXXXXX)
trap 'rm -rf "$T"' EXIT
timeout 40 "$F" -n 4 --timeout 20 "$R" kmeans "$D" 10 --out "$T/plain" > /dev/null || { echo "uninterrupted run failed"; exit 1; }
timeout 40 "$F" -n 4 --timeout 20 "$R" kmeans "$D" 10 --ckpt "$T/ck" --die 2 6 > "$T/o1" 2> "$T/e1"
st=$?
[ $st -ne 0 ] || { echo "the run with a killed rank succeeded?"; exit 1; }
grep -q "rank 2 killed by signal 9" "$T/e1" || { echo "foldrun did not report rank 2's SIGKILL"; cat "$T/e1"; exit 1; }
ls "$T/ck"
timeout 40 "$F" -n 4 --timeout 20 "$R" kmeans "$D" 10 --ckpt "$T/ck" --max-iter 3 > "$T/o3" 2> "$T/e3" \
  && { echo "a rerun with max_iter 3 resumed a checkpoint of superstep 5"; cat "$T/o3"; exit 1; }
# (foldrun stops the other ranks once one exits: iterq_checkpoint checks that every rank gets the error)
grep -m1 "fold_kmeans failed: .*rank-0.000000005.ckpt holds superstep 5, past this run's max_iter 3" "$T/e3" \
  || { echo "max_iter 3: no rank refused the checkpoint of superstep 5 naming the file"; cat "$T/e3"; exit 1; }
FOLD_DEBUG=INFO timeout 40 "$F" -n 4 --timeout 20 "$R" kmeans "$D" 10 --ckpt "$T/ck" --out "$T/resumed" > "$T/o2" 2> "$T/e2" \
  || { echo "rerun failed"; cat "$T/e2"; exit 1; }
grep -m1 "resuming after superstep" "$T/e2" || { echo "the rerun did not resume from a checkpoint"; exit 1; }
cmp "$T/plain" "$T/resumed" || { echo "resumed result differs from the uninterrupted one"; exit 1; }
echo "kill_resume: resumed and bit for bit equal"
