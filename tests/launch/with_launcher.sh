#!/usr/bin/env bash
# with_launcher.sh — start N ranks of a program with one of the launchers fold_init understands.
# Usage: with_launcher.sh LAUNCHER N BUILD_DIR prog [args]
#   LAUNCHER: foldrun-shm | foldrun-tcp | foldrun-auto | openmpi | mpich | torchrun-env | slurm-env | netns
set -euo pipefail
L=$1 N=$2 B=$3; shift 3
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
by_hand() { # by_hand RANKVAR SIZEVAR prog...: start N processes with rank/size variables, rank 0 serves the store
  local rv=$1 sv=$2; shift 2
  local port; port=$(free_port)
  local pids=() st=0
  for r in $(seq 0 $((N - 1))); do
    env "$rv=$r" "$sv=$N" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" FOLD_JOB_TOKEN=handmade-token \
      timeout -k 5 120 "$@" > >(sed "s/^/[$r] /") 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || st=1; done
  return $st
}
case "$L" in
  foldrun-shm) exec "$B/foldrun" -n "$N" --transport shm -- "$@" ;;
  foldrun-tcp) exec "$B/foldrun" -n "$N" --transport tcp -- "$@" ;;
  foldrun-auto) exec "$B/foldrun" -n "$N" -- "$@" ;;
  openmpi)
    command -v mpirun.openmpi >/dev/null || { echo "mpirun.openmpi missing" >&2; exit 1; }
    # No FOLD_STORE: fold_init finds Open MPI's rank, size and job id by itself.
    exec timeout -k 5 120 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$N" "$@" ;;
  mpich)
    command -v mpiexec.mpich >/dev/null || { echo "mpiexec.mpich missing" >&2; exit 1; }
    exec timeout -k 5 120 mpiexec.mpich -n "$N" "$@" ;;
  torchrun-env) by_hand RANK WORLD_SIZE "$@" ;;
  slurm-env) by_hand SLURM_PROCID SLURM_NTASKS "$@" ;;
  netns) exec "$(dirname "$0")/../netns/netns_run.sh" -k "$N" -t 120 -- "$@" ;;
  *) echo "unknown launcher $L" >&2; exit 2 ;;
esac
