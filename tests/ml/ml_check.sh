#!/usr/bin/env bash
# ml_check.sh — scikit-learn's answer once, then fold's at 1, 2, 3 and 4 ranks under foldrun, compared by ml_run.
# Usage: ml_check.sh FOLDRUN ML_RUN ML_REF kmeans FILE K | ... logreg FILE
set -u
F=$1 R=$2 REF=$3; shift 3
T=$(mktemp -d /tmp/fold-ml.XXXXXX)
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 "$REF" "$@" > "$T/ref" || { echo "ml_check: the scikit-learn reference failed"; exit 1; }
fails=0
for n in 1 2 3 4; do
  timeout 60 "$F" -n "$n" --timeout 30 "$R" "$@" --ref "$T/ref" || { echo "ml_check: FAILED at $n ranks"; fails=$((fails + 1)); }
done
[ $fails -eq 0 ] && echo "ml_check $1 $(basename "$2"): equal to scikit-learn at 1..4 ranks"
[ $fails -eq 0 ]
