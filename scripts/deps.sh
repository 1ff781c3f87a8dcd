#!/usr/bin/env bash
# deps.sh — install the Debian packages fold's build, tests and benchmarks need (idempotent).
# Usage: scripts/deps.sh [build|demo|test|bench]
set -euo pipefail
what=${1:-build}
pkgs="build-essential cmake pkg-config libssl-dev"
# python3-sklearn and python3-numpy: the demo's and the ML tests' reference (scikit-learn and its data sets).
# python3-torchvision: bench/kv_resnet50.h (ResNet-50's layer sizes) is checked against it.
# python3-dev: the Python package fold (python/); python3-mpi4py: bench/py_overhead.py compares with it.
# libtorch-dev, pybind11-dev: the torch.distributed backend (python/torch.cmake); python3-torchvision: bench/torch_ddp.py.
# python3-build, python3-venv: the wheel test (tests/consumer/pip_test.sh: python3 -m build --wheel, venvs).
case "$what" in
  demo) pkgs="$pkgs python3-sklearn python3-numpy python3-dev" ;;
  test) pkgs="$pkgs clang libclang-rt-14-dev iproute2 openmpi-bin libopenmpi-dev mpich libmpich-dev gnuplot-nox python3-torch python3-torchvision python3-sklearn python3-numpy python3-dev libtorch-dev pybind11-dev python3-build python3-venv" ;;
  bench) pkgs="$pkgs iproute2 openmpi-bin libopenmpi-dev mpich libmpich-dev gnuplot-nox python3-torch python3-sklearn python3-numpy python3-dev python3-mpi4py libtorch-dev pybind11-dev python3-torchvision" ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
