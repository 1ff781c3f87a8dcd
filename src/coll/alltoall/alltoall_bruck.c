/* alltoall_bruck.c — Bruck alltoall: ceil(log2 n) rounds for any n, each moving the blocks whose index has bit k set. */
#include "coll/coll.h"
#include "patterns/exchange.h"
#include "patterns/patterns.h"

/* B = count * esize bytes per block. recvbuf is the working array A; tmp
 * holds a packed send area P and a packed receive area Q of M blocks each,
 * M = the most indices in [0, n) that share one bit. Rounds
 * (L = ceil(log2 n)):
 *   0            rotate: A[i] = sendbuf block (r+i) mod n, the block bound for
 *                rank r+i, i.e. i ranks further on. Pack bit 0 into P.
 *   1 .. L       round 1+j, d = 2^j: send P (the m = count of indices with
 *                bit j set, fold__bruck_bit_count) to r+d, receive m blocks
 *                from r-d into Q; unpack Q to the same indices of A, then
 *                pack the indices with bit j+1 into P for the next round.
 *                A block at index i moves by 2^j for each set bit j of i:
 *                i ranks in all, to its destination; indices never change,
 *                so at the end A[i] on rank r came from rank r-i.
 *
 *     indices with bit j set, n = 6:   j = 0: 1 3 5    j = 1: 2 3    j = 2: 4 5
 *     (runs of 2^j, so packing takes about n / 2^(j+1) copies)
 *
 *   L+1          inverse rotation: recvbuf block (r-i) mod n = A[i]. The map
 *                i -> r-i is its own inverse, so it runs in place as swaps
 *                of pairs {i, r-i} through one block of P.
 * Scratch: 2M <= n blocks (a bit's indices are at most half of them).
 * Cost: ceil(log2 n) alpha + (sum_{j<L} m_j) B beta, m_j the count of
 * indices with bit j set; for n a power of two log2(n) alpha + log2(n)/2 S
 * beta, S = n*B the bytes each rank sends. Locally about 2 S of copies plus
 * two copies of every block sent. */

static int bruck_init(fold__coll *co) {
  int n = co->size, L = fold__ceil_log2(n), M = 0;
  for (int j = 0; j < L; j++) {
    int m = fold__bruck_bit_count(n, j);
    if (m > M) M = m;
  }
  co->v[0] = L;
  co->v[1] = M;
  co->tmp_bytes = 2 * (size_t)M * co->count * co->esize;
  return FOLD_OK;
}

/* Copy the indices with bit j set between A (recvbuf) and a packed area of
 * tmp at `area`: to_area = 1 packs A -> area, 0 unpacks area -> A. */
static void pack(fold__coll *co, int j, size_t area, int to_area) {
  int n = co->size, d = 1 << j;
  size_t B = co->count * co->esize, pos = area;
  for (int start = d; start < n; start += 2 * d) {
    size_t len = (size_t)(d < n - start ? d : n - start) * B;
    if (to_area) fold__co_copy(co, FOLD__B_TMP, pos, FOLD__B_RECV, (size_t)start * B, len);
    else fold__co_copy(co, FOLD__B_RECV, (size_t)start * B, FOLD__B_TMP, pos, len);
    pos += len;
  }
}

static int bruck_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, L = co->v[0];
  size_t B = co->count * co->esize, P = 0, Q = (size_t)co->v[1] * B;
  if (k == 0) { /* rotate up by r, then pack for round 1 */
    fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, (size_t)r * B, (size_t)(n - r) * B);
    fold__co_copy(co, FOLD__B_RECV, (size_t)(n - r) * B, FOLD__B_SEND, 0, (size_t)r * B);
    if (L > 0) pack(co, 0, P, 1);
    return 1;
  }
  if (k <= L) {
    int j = k - 1, d = 1 << j;
    size_t bytes = (size_t)fold__bruck_bit_count(n, j) * B;
    fold__co_send(co, fold__mod(r + d, n), FOLD__B_TMP, P, bytes);
    fold__co_recv(co, fold__mod(r - d, n), FOLD__B_TMP, Q, bytes);
    pack(co, j, Q, 0);
    if (j + 1 < L) pack(co, j + 1, P, 1);
    return 1;
  }
  if (k == L + 1) { /* inverse rotation: swap A[i] and A[r-i] */
    for (int i = 0; i < n; i++) {
      int q = fold__mod(r - i, n);
      if (i >= q) continue;
      fold__co_copy(co, FOLD__B_TMP, P, FOLD__B_RECV, (size_t)i * B, B);
      fold__co_copy(co, FOLD__B_RECV, (size_t)i * B, FOLD__B_RECV, (size_t)q * B, B);
      fold__co_copy(co, FOLD__B_RECV, (size_t)q * B, FOLD__B_TMP, P, B);
    }
    return 1;
  }
  return 0;
}

const fold__algo fold__alltoall_bruck = {"bruck", bruck_init, bruck_round, 1};
