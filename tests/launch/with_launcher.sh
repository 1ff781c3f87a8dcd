#!/usr/bin/env bash
# with_launcher.sh — start N ranks of a program with one of the launchers fold_init understands.
# Usage: with_launcher.sh LAUNCHER N BUILD_DIR prog [args]
#   LAUNCHER: foldrun-shm | foldrun-tcp | foldrun-auto | openmpi | mpich | torchrun | torchrun-static |
#             torchrun-env | slurm-env | netns
#   torchrun is Debian's real one (torch 1.13), a single-node c10d rendezvous on a free port: on Python 3.11 it crashes in Std.from_str unless
#   --redirects and --tee are given ("0" maps to no member of the IntFlag there), so they are; prog runs as is
#   (--no_python). torchrun-static: its static rendezvous (--master_port, no --standalone), where torchrun's own
#   TCPStore holds MASTER_PORT; FOLD_STORE=auto then becomes tcp://127.0.0.1:<another free port>.
set -euo pipefail
L=$1 N=$2 B=$3; shift 3
. "$(dirname "$0")/../free_port.sh"
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
  torchrun | torchrun-static)
    /usr/bin/python3 -c "import torch.distributed.run" 2>/dev/null || { echo "torch.distributed.run missing (python3-torch)" >&2; exit 1; }
    # What --standalone does, but on a free port: --standalone takes 29400, so two such jobs at once (ctest -j)
    # met in one rendezvous.
    rp=$(free_port)
    rdzv=(--nnodes 1 --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$rp" --rdzv_id "fold-$$-$RANDOM")
    if [ "$L" = torchrun-static ]; then
      mp=$(free_port)
      while [ "$mp" = "$rp" ]; do mp=$(free_port); done
      rdzv=(--master_addr 127.0.0.1 --master_port "$mp")
      if [ "${FOLD_STORE:-}" = auto ]; then
        fp=$(free_port)
        while [ "$fp" = "$mp" ]; do fp=$(free_port); done
        export FOLD_STORE="tcp://127.0.0.1:$fp"
      fi
    fi
    exec timeout -k 5 120 /usr/bin/python3 -m torch.distributed.run "${rdzv[@]}" --nproc_per_node "$N" \
      --redirects 1 --tee 1 --no_python "$@" ;;
  torchrun-env) by_hand RANK WORLD_SIZE "$@" ;;
  slurm-env) by_hand SLURM_PROCID SLURM_NTASKS "$@" ;;
  netns) exec "$(dirname "$0")/../netns/netns_run.sh" -k "$N" -t 120 -- "$@" ;;
  *) echo "unknown launcher $L" >&2; exit 2 ;;
esac
