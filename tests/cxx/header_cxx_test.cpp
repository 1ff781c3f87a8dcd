// header_cxx_test.cpp — fold.h used from C++: it compiles as C++ and its
// extern "C" block links against the C library (two ranks on threads).
#include <fold.h>

#include <cstdio>
#include <thread>

int main() {
  fold_comm *c[2];
  if (fold_comm_init_threads(2, c) != FOLD_OK) {
    std::fprintf(stderr, "init: %s\n", fold_comm_last_error(nullptr));
    return 1;
  }
  int rc[2] = {-1, -1};
  double v[2] = {1.5, 2.25};
  std::thread t([&] { rc[1] = fold_allreduce(&v[1], &v[1], 1, FOLD_FLOAT64, FOLD_SUM, c[1]); });
  rc[0] = fold_allreduce(&v[0], &v[0], 1, FOLD_FLOAT64, FOLD_SUM, c[0]);
  t.join();
  int bad = 0;
  for (int r = 0; r < 2; r++)
    if (rc[r] != FOLD_OK || v[r] != 3.75) {
      std::fprintf(stderr, "rank %d: %s, %g (want 3.75)\n", r, fold_strerror(rc[r]), v[r]);
      bad++;
    }
  fold_comm_destroy(c[0]);
  fold_comm_destroy(c[1]);
  std::printf("C++: allreduce %s\n", bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}
