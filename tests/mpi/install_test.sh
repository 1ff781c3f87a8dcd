#!/usr/bin/env bash
# install_test.sh — the MPI layer as installed: mpi.h only under include/fold/mpi (never include/mpi.h, which
# would shadow a system MPI), libfoldmpi next to libfold, fold-mpicc (relative to its own place, -show) and
# fold-mpiexec; a 2-rank MPI program built with the installed wrapper runs without LD_LIBRARY_PATH.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
B=$1
unset LD_LIBRARY_PATH
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cmake --install "$B" --prefix "$T/prefix" >/dev/null
P=$T/prefix
for h in mpi.h mpi_rma.h; do [ -f "$P/include/fold/mpi/$h" ] || { echo "missing include/fold/mpi/$h" >&2; exit 1; }; done
[ ! -e "$P/include/mpi.h" ] || { echo "include/mpi.h is installed: it would shadow a system MPI" >&2; exit 1; }
[ -x "$P/bin/fold-mpicc" ] && [ -x "$P/bin/fold-mpiexec" ] || { echo "missing fold-mpicc or fold-mpiexec" >&2; exit 1; }
[ -n "$(find "$P" -name 'libfoldmpi.so*' -print -quit)" ] || { echo "missing libfoldmpi.so" >&2; exit 1; }
"$P/bin/fold-mpicc" -show x.c | grep -q -- "$P/bin/../include/fold/mpi" ||
  { echo "fold-mpicc -show does not name the installed include directory:" >&2; "$P/bin/fold-mpicc" -show x.c >&2; exit 1; }
cat > "$T/hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int rank, size, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d of %d: sum %d\n", rank, size, sum);
  MPI_Finalize();
  return sum == size * (size - 1) / 2 ? 0 : 1;
}
C
(cd "$T" && "$P/bin/fold-mpicc" -O2 hello.c -o hello)
# libfoldmpi exports the MPI names and nothing of fold's (those stay in libfold)
if nm -D --defined-only "$(find "$P" -name 'libfoldmpi.so' -print -quit)" | awk '{print $3}' | grep -v '^MPI_' | grep -v '^_'; then
  echo "libfoldmpi.so exports symbols outside the MPI_ namespace" >&2; exit 1
fi
out=$("$P/bin/fold-mpiexec" -n 2 --timeout 30 "$T/hello")
echo "$out"
echo "$out" | grep -q "rank 1 of 2: sum 1"
echo "mpi install test: header, wrapper, launcher and library all good"
