#!/usr/bin/env bash
# install_test.sh — `cmake --install` puts the Python package where the interpreter's layout says, and the
# installed extension finds the installed libfold by its RUNPATH (no LD_LIBRARY_PATH), from a copy of the
# prefix moved elsewhere too. Usage: install_test.sh BUILD_DIR PYDIR (PYDIR: FOLD_PYTHON_INSTALL_DIR)
set -euo pipefail
B=$1 PYDIR=$2
unset LD_LIBRARY_PATH PYTHONPATH
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cmake --install "$B" --prefix "$T/prefix" >/dev/null
ext=$(find "$T/prefix/$PYDIR/fold" -name '_fold*.so' -print -quit)
[ -n "$ext" ] && [ -e "$T/prefix/$PYDIR/fold/__init__.py" ] && [ -e "$T/prefix/$PYDIR/fold/ml.py" ] ||
  { echo "the package is not in $T/prefix/$PYDIR/fold" >&2; find "$T/prefix" >&2; exit 1; }
readelf -d "$ext" | grep -q 'RUNPATH.*\$ORIGIN' || { echo "no \$ORIGIN RUNPATH in $ext" >&2; readelf -d "$ext" >&2; exit 1; }
check() {
  PYTHONPATH="$1" /usr/bin/python3 -c "
import fold, numpy as np
assert fold.__file__.startswith('$1'), fold.__file__
c = fold.init(); x = np.ones(3); c.allreduce(x); assert c.size == 1 and (x == 1).all()
import os; maps = open('/proc/self/maps').read()
lib = [l.split()[-1] for l in maps.splitlines() if 'libfold.so' in l][0]
assert lib.startswith('$2'), 'loaded ' + lib
print('python package ok from', fold.__file__, 'with', lib)
"
}
check "$T/prefix/$PYDIR" "$T/prefix"
mv "$T/prefix" "$T/moved"
check "$T/moved/$PYDIR" "$T/moved"
