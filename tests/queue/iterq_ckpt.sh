#!/usr/bin/env bash
# iterq_ckpt.sh — checkpoints at 3 ranks (resume, torn file, refusals), then the same dir at 2 ranks: refused;
# then fold_kmeans and fold_logreg checkpoints refused for other parameters or a smaller max_iter.
set -u
F=$1 P=$2
T=$(mktemp -d /tmp/fold-iqck.XXXXXX)
trap 'rm -rf "$T"' EXIT
timeout 40 "$F" -n 3 --timeout 20 "$P" ckpt "$T/ck" || { echo "iterq_ckpt: 3-rank part FAILED"; exit 1; }
ls "$T/ck"
grep -q "^ranks 3$" "$T/ck/manifest" || { echo "iterq_ckpt: manifest lacks the rank count"; exit 1; }
timeout 40 "$F" -n 2 --timeout 20 "$P" ckpt-ranks "$T/ck" || { echo "iterq_ckpt: 2-rank refusal FAILED"; exit 1; }
timeout 60 "$F" -n 3 --timeout 20 "$P" ml-ckpt "$T" || { echo "iterq_ckpt: ML checkpoint identity FAILED"; exit 1; }
echo "iterq_ckpt: passed"
