#!/usr/bin/env bash
# netns_run.sh — run one program as K ranks on K "hosts": network namespaces joined by a bridge.
#
# Usage: netns_run.sh [-k K] [-r RATE] [-t SECONDS] -- prog [args]
#   -k K        number of hosts/ranks (default 4)
#   -r RATE     shape every host's link with tbf to RATE (e.g. 1gbit); default unshaped
#   -t SECONDS  kill everything after this long (default 300)
# Each rank i runs in namespace <prefix>-h<i> with address 10.231.<id>.<i+1>/24
# (a subnet that exists only inside the namespaces this script creates); the
# bridge lives in its own namespace <prefix>-br, so the host's networking is
# never touched. Rank 0 serves the store. Exit status: non-zero if any rank
# fails. Namespaces are removed on exit, whatever happens.
set -euo pipefail
K=4 RATE="" LIMIT=300
while [ $# -gt 0 ]; do
  case "$1" in
    -k) K=$2; shift 2 ;;
    -r) RATE=$2; shift 2 ;;
    -t) LIMIT=$2; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [-k K] [-r RATE] [-t S] -- prog [args]" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then echo "netns_run.sh: needs root (ip netns)" >&2; exit 2; fi
command -v ip >/dev/null || { echo "netns_run.sh: iproute2 (ip) is missing" >&2; exit 2; }

ID=$(( ($$ % 200) + 20 ))           # third octet: distinct per concurrent run
P="fold$$"
BR="$P-br"
cleanup() {
  for i in $(seq 0 $((K - 1))); do ip netns del "$P-h$i" 2>/dev/null || true; done
  ip netns del "$BR" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$BR"
ip -n "$BR" link add br0 type bridge
ip -n "$BR" link set br0 up
ip -n "$BR" link set lo up
for i in $(seq 0 $((K - 1))); do
  ns="$P-h$i"
  ip netns add "$ns"
  ip link add "h$i" netns "$ns" type veth peer name "p$i" netns "$BR"
  ip -n "$BR" link set "p$i" master br0 up
  ip -n "$ns" addr add "10.231.$ID.$((i + 1))/24" dev "h$i"
  ip -n "$ns" link set "h$i" up
  ip -n "$ns" link set lo up
  if [ -n "$RATE" ]; then
    # shape both directions of the host's link: egress of h$i and of p$i
    ip netns exec "$ns" tc qdisc add dev "h$i" root tbf rate "$RATE" burst 256kb latency 50ms
    ip netns exec "$BR" tc qdisc add dev "p$i" root tbf rate "$RATE" burst 256kb latency 50ms
  fi
done

PORT=$(( 20000 + ($$ % 20000) ))
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
STORE="tcp://10.231.$ID.1:$PORT"
pids=()
for i in $(seq 0 $((K - 1))); do
  ip netns exec "$P-h$i" env FOLD_RANK="$i" FOLD_SIZE="$K" FOLD_STORE="$STORE" FOLD_JOB_TOKEN="$TOKEN" \
    FOLD_TRANSPORT="${FOLD_TRANSPORT:-auto}" timeout -k 5 "$LIMIT" "$@" > >(sed "s/^/[h$i] /") 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then echo "netns_run.sh: rank $i failed" >&2; status=1; fi
done
exit $status
