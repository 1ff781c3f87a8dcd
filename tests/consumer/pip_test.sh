#!/usr/bin/env bash
# pip_test.sh — fold's Python package built and installed offline with Debian's pip, setuptools and build into
# fresh venvs, two ways: a wheel made at the repository root (`python3 -m build --no-isolation --wheel`, what
# `pip install .` runs), installed with pip; and `pip install ./python`. Each builds libfold, fold._fold and
# foldrun (the second reuses the first's CMake directory, FOLD_CMAKE_BUILD_DIR, so it is incremental); in each
# venv the package imports from anywhere without LD_LIBRARY_PATH, loads the libfold beside it, reports one
# version (fold.__version__ = fold_version() = include/fold.h = the pip metadata), and
# `python -m fold.run -n 2 script.py` runs a checked 2-rank allreduce. (docs/python.md "pip")
# Usage: pip_test.sh FOLD_SRC
set -euo pipefail
src=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
unset LD_LIBRARY_PATH PYTHONPATH PYTHONHOME
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "pip_test: $*" >&2; exit 1; }
"$here/copy_tree.sh" "$src" "$T/src"   # the builds write build-pip/, python/build/ and *.egg-info: not into src
hv=$(sed -n 's/^#define FOLD_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$src/include/fold.h" | paste -sd.)
# the torch backend is left out here: its C++ build against torch's headers takes minutes
export CMAKE_BUILD_PARALLEL_LEVEL=2 FOLD_CMAKE_ARGS=-DFOLD_BUILD_TORCH=OFF FOLD_CMAKE_BUILD_DIR=$T/cmake
cat > "$T/ar.py" <<'PY'
import numpy as np, fold
comm = fold.init()
assert comm.size == 2, comm.size
x = np.arange(1000, dtype=np.float64) * (comm.rank + 1)
comm.allreduce(x)
assert (x == np.arange(1000) * 3.0).all(), x[:8]
print("allreduce ok on rank", comm.rank, "of", comm.size)
comm.destroy()
PY

check_venv() { # check_venv VENV WHAT: the installed package is the venv's, and it runs
  local venv=$1 what=$2 py=$1/bin/python out
  (cd "$T" && "$py" - "$hv" "$venv") <<'PY' || fail "$what: the installed package is wrong"
import importlib.metadata, os, sys
import fold
want, venv = sys.argv[1], os.path.realpath(sys.argv[2])
pkg = os.path.dirname(os.path.realpath(fold.__file__))
assert pkg.startswith(venv + os.sep), f"fold imported from {pkg}, not from the venv {venv}"
got = (fold.__version__, fold.library_version(), importlib.metadata.version("fold"))
assert got == (want, want, want), f"versions {got}, include/fold.h says {want}"
libs = {l.split()[-1] for l in open("/proc/self/maps") if "libfold.so" in l}
assert libs == {os.path.join(pkg, "libfold.so.0")}, f"libfold loaded from {libs}, not from {pkg}"
print("pip_test: fold", fold.__version__, "from", pkg)
PY
  out=$(cd "$T" && FOLD_TIMEOUT=60 "$py" -m fold.run -n 2 "$T/ar.py" 2>&1) || { echo "$out" >&2; fail "$what: python -m fold.run failed"; }
  echo "$out"
  [ "$(echo "$out" | grep -c "allreduce ok on rank")" = 2 ] || fail "$what: not both ranks reported"
}

# 1. a wheel from the repository root, installed into a fresh venv
(cd "$T/src" && /usr/bin/python3 -m build --no-isolation --wheel --outdir "$T/dist") >"$T/wheel.log" 2>&1 ||
  { tail -40 "$T/wheel.log" >&2; fail "python3 -m build --wheel failed"; }
whl=$(ls "$T"/dist/fold-"$hv"-*.whl) || fail "no wheel fold-$hv-*.whl in $T/dist"
[ -z "$(ls "$T/src/build" 2>/dev/null)" ] || fail "the root build wrote into build/ (it must use build-pip/)"
/usr/bin/python3 -m venv --system-site-packages "$T/venv-wheel"
"$T/venv-wheel/bin/python" -m pip install --no-index "$whl" >"$T/pip-wheel.log" 2>&1 ||
  { tail -40 "$T/pip-wheel.log" >&2; fail "pip install of the wheel failed"; }
check_venv "$T/venv-wheel" wheel

# 2. pip install ./python into another fresh venv
/usr/bin/python3 -m venv --system-site-packages "$T/venv"
"$T/venv/bin/python" -m pip install --no-build-isolation --no-index "$T/src/python" >"$T/pip.log" 2>&1 ||
  { tail -40 "$T/pip.log" >&2; fail "pip install ./python failed"; }
check_venv "$T/venv" "pip install ./python"
echo "pip_test: good"
