#!/usr/bin/env bash
# iterq_algo.sh — the queue's allreduce steps run `direct` (Alink's) by default and the user's forced algorithm otherwise.
set -u
F=$1 P=$2
T=$(mktemp -d /tmp/fold-iqal.XXXXXX)
trap 'rm -rf "$T"' EXIT
FOLD_DEBUG=TRACE timeout 40 "$F" -n 3 --timeout 20 "$P" basic 2> "$T/auto" || { cat "$T/auto"; exit 1; }
FOLD_DEBUG=TRACE FOLD_ALGO=allreduce=ring timeout 40 "$F" -n 3 --timeout 20 "$P" basic 2> "$T/ring" || { cat "$T/ring"; exit 1; }
fail=0
# 40 B of 5 doubles: the steps' allreduce (the stop exchange of 24 B chooses automatically)
grep -q "allreduce.* 40 B.*direct (forced by the call's options)" "$T/auto" || { echo "default: no direct allreduce of 40 B"; fail=1; }
grep -q "allreduce.* 40 B.*ring (forced by FOLD_ALGO" "$T/ring" || { echo "FOLD_ALGO=allreduce=ring: no ring allreduce of 40 B"; fail=1; }
grep -q "direct" "$T/ring" && { echo "FOLD_ALGO=allreduce=ring: direct was used"; fail=1; }
[ $fail = 0 ] && echo "iterq_algo: direct by default, the forced algorithm when forced"
[ $fail = 0 ] || { grep -m5 "allreduce" "$T/auto" "$T/ring"; exit 1; }
