// process_group_ops.cpp — the torch.distributed backend's operations: tensors checked and turned into fold buffers, each call queued for the worker.

#include "process_group.h"

namespace fold_torch {

// ---- tensors as fold buffers -------------------------------------------------

static fold_dtype dtype_of(const Tensor& t, const char* op) {
  switch (t.scalar_type()) {
  case at::kFloat: return FOLD_FLOAT32;
  case at::kDouble: return FOLD_FLOAT64;
  case at::kHalf: return FOLD_FLOAT16;
  case at::kBFloat16: return FOLD_BFLOAT16;
  case at::kChar: return FOLD_INT8;
  case at::kByte: return FOLD_UINT8;
  case at::kBool: return FOLD_UINT8; // one byte; reductions on it are refused in op_of
  case at::kInt: return FOLD_INT32;
  case at::kLong: return FOLD_INT64;
  default:
    TORCH_CHECK(false, "fold: ", op, ": dtype ", t.scalar_type(),
                " is not supported (float16/32/64, bfloat16, int8, uint8, int32, int64, bool)");
  }
}

static fold_op op_of(const c10d::ReduceOp& r, const Tensor& t, const char* op) {
  bool is_bool = t.scalar_type() == at::kBool;
  switch (r.op_) {
  case c10d::ReduceOp::SUM: if (!is_bool) return FOLD_SUM; break;
  case c10d::ReduceOp::AVG: if (!is_bool) return FOLD_AVG; break;
  case c10d::ReduceOp::PRODUCT: if (!is_bool) return FOLD_PROD; break;
  case c10d::ReduceOp::MIN: return FOLD_MIN; // on 0/1 bytes: logical and
  case c10d::ReduceOp::MAX: return FOLD_MAX; // logical or
  case c10d::ReduceOp::BAND: if (!t.is_floating_point()) return FOLD_BAND; break;
  case c10d::ReduceOp::BOR: if (!t.is_floating_point()) return FOLD_BOR; break;
  case c10d::ReduceOp::BXOR: if (!t.is_floating_point()) return FOLD_BXOR; break;
  default: break;
  }
  TORCH_CHECK(false, "fold: ", op, ": reduce op ", (int)r.op_, " is not supported on ", t.scalar_type(),
              " (SUM, AVG, PRODUCT, MIN, MAX on numbers; BAND, BOR, BXOR on integers; MIN, MAX on bool)");
}

// One dense CPU tensor per call, as fold takes one buffer.
static const Tensor& one(const std::vector<Tensor>& v, const char* op) {
  TORCH_CHECK(v.size() == 1, "fold: ", op, ": takes exactly one tensor per process, got ", v.size());
  const Tensor& t = v[0];
  TORCH_CHECK(t.device().is_cpu(), "fold: ", op, ": tensors must be on the CPU, got ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "fold: ", op, ": sparse tensors are not supported");
  TORCH_CHECK(t.is_contiguous(), "fold: ", op, ": tensors must be contiguous (call .contiguous())");
  return t;
}

static void same_kind(const Tensor& a, const Tensor& b, int64_t numel, const char* op, const char* what) {
  TORCH_CHECK(b.scalar_type() == a.scalar_type(), "fold: ", op, ": ", what, " has dtype ", b.scalar_type(),
              ", the input ", a.scalar_type());
  TORCH_CHECK(b.numel() == numel, "fold: ", op, ": ", what, " has ", b.numel(), " elements, wanted ", numel);
  TORCH_CHECK(b.device().is_cpu(), "fold: ", op, ": ", what, " must be on the CPU");
}

// A collective's c10d options timeout as fold's per-call timeout: unset
// (kUnsetTimeout, -1 ms) or not positive leaves the communicator's
// FOLD_TIMEOUT (the group's timeout, see the constructor).
static fold_coll_opts call_opts(std::chrono::milliseconds timeout) {
  fold_coll_opts o = FOLD_COLL_OPTS_INIT;
  if (timeout.count() > 0) o.timeout = (double)timeout.count() / 1000.0;
  return o;
}

// ---- the operations --------------------------------------------------------------

void ProcessGroupFold::check_root(int64_t root, const char* op) const {
  TORCH_CHECK(root >= 0 && root < getSize(), "fold: ", op, ": rank ", getRank(), ": root ", root,
              " is not in [0, ", getSize(), ")");
}
void ProcessGroupFold::check_peer(int peer, const char* op, int tag) const {
  TORCH_CHECK(peer >= 0 && peer < getSize(), "fold: ", op, ": rank ", getRank(), ": peer ", peer,
              " is not in [0, ", getSize(), ")");
  TORCH_CHECK(tag >= 0, "fold: ", op, ": rank ", getRank(), ": tag ", tag, " is negative");
}

intrusive_ptr<c10d::Work> ProcessGroupFold::broadcast(std::vector<Tensor>& tensors, const c10d::BroadcastOptions& o) {
  Tensor t = one(tensors, "broadcast");
  fold_dtype dt = dtype_of(t, "broadcast");
  check_root(o.rootRank, "broadcast");
  TORCH_CHECK(o.rootTensor == 0, "fold: broadcast: rootTensor must be 0");
  int root = (int)o.rootRank;
  fold_coll_opts fo = call_opts(o.timeout);
  return enqueue(c10d::OpType::BROADCAST, {t}, [=](WorkFold&) {
    return fold_broadcast_opts(t.data_ptr(), (size_t)t.numel(), dt, root, comm_, &fo);
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::allreduce(std::vector<Tensor>& tensors, const c10d::AllreduceOptions& o) {
  Tensor t = one(tensors, "allreduce");
  fold_dtype dt = dtype_of(t, "allreduce");
  fold_op op = op_of(o.reduceOp, t, "allreduce");
  fold_coll_opts fo = call_opts(o.timeout);
  return enqueue(c10d::OpType::ALLREDUCE, {t}, [=](WorkFold&) {
    return fold_allreduce_opts(t.data_ptr(), t.data_ptr(), (size_t)t.numel(), dt, op, comm_, &fo);
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::reduce(std::vector<Tensor>& tensors, const c10d::ReduceOptions& o) {
  Tensor t = one(tensors, "reduce");
  fold_dtype dt = dtype_of(t, "reduce");
  fold_op op = op_of(o.reduceOp, t, "reduce");
  check_root(o.rootRank, "reduce");
  int root = (int)o.rootRank;
  fold_coll_opts fo = call_opts(o.timeout);
  return enqueue(c10d::OpType::REDUCE, {t}, [=](WorkFold&) {
    return fold_reduce_opts(t.data_ptr(), t.data_ptr(), (size_t)t.numel(), dt, op, root, comm_, &fo);
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::allgather(std::vector<std::vector<Tensor>>& outs, std::vector<Tensor>& ins,
                                                      const c10d::AllgatherOptions& ao) {
  Tensor in = one(ins, "allgather");
  fold_dtype dt = dtype_of(in, "allgather");
  TORCH_CHECK(outs.size() == 1 && (int)outs[0].size() == getSize(), "fold: allgather: wants one list of ",
              getSize(), " output tensors");
  for (auto& o : outs[0])
    same_kind(in, o, in.numel(), "allgather", "an output tensor");
  std::vector<Tensor> out = outs[0];
  int64_t n = in.numel();
  fold_coll_opts fo = call_opts(ao.timeout);
  return enqueue(c10d::OpType::ALLGATHER, out, [=](WorkFold&) {
    Tensor flat = at::empty({n * (int64_t)out.size()}, in.options());
    int rc = fold_allgather_opts(in.data_ptr(), flat.data_ptr(), (size_t)n, dt, comm_, &fo);
    if (rc == FOLD_OK)
      for (size_t i = 0; i < out.size(); i++)
        out[i].view({-1}).copy_(flat.narrow(0, (int64_t)i * n, n));
    return rc;
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::_allgather_base(Tensor& out, Tensor& in, const c10d::AllgatherOptions& ao) {
  Tensor i = one({in}, "all_gather_into_tensor"), o = one({out}, "all_gather_into_tensor");
  fold_dtype dt = dtype_of(i, "all_gather_into_tensor");
  same_kind(i, o, i.numel() * getSize(), "all_gather_into_tensor", "the output");
  fold_coll_opts fo = call_opts(ao.timeout);
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {o}, [=](WorkFold&) {
    return fold_allgather_opts(i.data_ptr(), o.data_ptr(), (size_t)i.numel(), dt, comm_, &fo);
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::_reduce_scatter_base(Tensor& out, Tensor& in,
                                                                 const c10d::ReduceScatterOptions& opts) {
  Tensor i = one({in}, "reduce_scatter_tensor"), o = one({out}, "reduce_scatter_tensor");
  fold_dtype dt = dtype_of(i, "reduce_scatter_tensor");
  fold_op op = op_of(opts.reduceOp, i, "reduce_scatter_tensor");
  same_kind(i, o, i.numel() / getSize(), "reduce_scatter_tensor", "the output");
  TORCH_CHECK(i.numel() == o.numel() * getSize(), "fold: reduce_scatter_tensor: the input has ", i.numel(),
              " elements, wanted ", o.numel() * getSize(), " (the output's times the group size)");
  fold_coll_opts fo = call_opts(opts.timeout);
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {o}, [=](WorkFold&) {
    return fold_reduce_scatter_opts(i.data_ptr(), o.data_ptr(), (size_t)o.numel(), dt, op, comm_, &fo);
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::reduce_scatter(std::vector<Tensor>& outs, std::vector<std::vector<Tensor>>& ins,
                                                           const c10d::ReduceScatterOptions& opts) {
  Tensor o = one(outs, "reduce_scatter");
  fold_dtype dt = dtype_of(o, "reduce_scatter");
  fold_op op = op_of(opts.reduceOp, o, "reduce_scatter");
  TORCH_CHECK(ins.size() == 1 && (int)ins[0].size() == getSize(), "fold: reduce_scatter: wants one list of ",
              getSize(), " input tensors");
  for (auto& t : ins[0])
    same_kind(o, t, o.numel(), "reduce_scatter", "an input tensor");
  std::vector<Tensor> in = ins[0];
  fold_coll_opts fo = call_opts(opts.timeout);
  return enqueue(c10d::OpType::REDUCE_SCATTER, {o}, [=](WorkFold&) {
    Tensor flat = at::cat(in).contiguous();
    return fold_reduce_scatter_opts(flat.data_ptr(), o.data_ptr(), (size_t)o.numel(), dt, op, comm_, &fo);
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::gather(std::vector<std::vector<Tensor>>& outs, std::vector<Tensor>& ins,
                                                   const c10d::GatherOptions& opts) {
  Tensor in = one(ins, "gather");
  fold_dtype dt = dtype_of(in, "gather");
  check_root(opts.rootRank, "gather");
  int root = (int)opts.rootRank;
  std::vector<Tensor> out;
  if (getRank() == root) {
    TORCH_CHECK(outs.size() == 1 && (int)outs[0].size() == getSize(), "fold: gather: the root wants one list of ",
                getSize(), " output tensors");
    for (auto& o : outs[0])
      same_kind(in, o, in.numel(), "gather", "an output tensor");
    out = outs[0];
  } else {
    TORCH_CHECK(outs.empty() || (outs.size() == 1 && outs[0].empty()),
                "fold: gather: only the root passes output tensors");
  }
  int64_t n = in.numel();
  fold_coll_opts fo = call_opts(opts.timeout);
  return enqueue(c10d::OpType::GATHER, out, [=](WorkFold&) {
    Tensor flat = out.empty() ? Tensor() : at::empty({n * (int64_t)out.size()}, in.options());
    int rc = fold_gather_opts(in.data_ptr(), out.empty() ? nullptr : flat.data_ptr(), (size_t)n, dt, root, comm_,
                              &fo);
    if (rc == FOLD_OK)
      for (size_t i = 0; i < out.size(); i++)
        out[i].view({-1}).copy_(flat.narrow(0, (int64_t)i * n, n));
    return rc;
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::scatter(std::vector<Tensor>& outs, std::vector<std::vector<Tensor>>& ins,
                                                    const c10d::ScatterOptions& opts) {
  Tensor o = one(outs, "scatter");
  fold_dtype dt = dtype_of(o, "scatter");
  check_root(opts.rootRank, "scatter");
  int root = (int)opts.rootRank;
  std::vector<Tensor> in;
  if (getRank() == root) {
    TORCH_CHECK(ins.size() == 1 && (int)ins[0].size() == getSize(), "fold: scatter: the root wants one list of ",
                getSize(), " input tensors");
    for (auto& t : ins[0])
      same_kind(o, t, o.numel(), "scatter", "an input tensor");
    in = ins[0];
  } else {
    TORCH_CHECK(ins.empty() || (ins.size() == 1 && ins[0].empty()),
                "fold: scatter: only the root passes input tensors");
  }
  fold_coll_opts fo = call_opts(opts.timeout);
  return enqueue(c10d::OpType::SCATTER, {o}, [=](WorkFold&) {
    Tensor flat = in.empty() ? Tensor() : at::cat(in).contiguous();
    return fold_scatter_opts(in.empty() ? nullptr : flat.data_ptr(), o.data_ptr(), (size_t)o.numel(), dt, root,
                             comm_, &fo);
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::barrier(const c10d::BarrierOptions& bo) {
  fold_coll_opts fo = call_opts(bo.timeout);
  return enqueue(c10d::OpType::BARRIER, {}, [=](WorkFold&) { return fold_barrier_opts(comm_, &fo); });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::send(std::vector<Tensor>& tensors, int dst, int tag) {
  Tensor t = one(tensors, "send");
  fold_dtype dt = dtype_of(t, "send");
  check_peer(dst, "send", tag);
  return enqueue(c10d::OpType::SEND, {t}, [=](WorkFold& w) {
    w.reqs_.push_back(nullptr);
    return fold_isend(t.data_ptr(), (size_t)t.numel(), dt, dst, tag, comm_, &w.reqs_.back());
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::recv(std::vector<Tensor>& tensors, int src, int tag) {
  Tensor t = one(tensors, "recv");
  fold_dtype dt = dtype_of(t, "recv");
  check_peer(src, "recv", tag);
  return enqueue(c10d::OpType::RECV, {t}, [=](WorkFold& w) {
    w.reqs_.push_back(nullptr);
    return fold_irecv(t.data_ptr(), (size_t)t.numel(), dt, src, tag, comm_, &w.reqs_.back());
  });
}

intrusive_ptr<c10d::Work> ProcessGroupFold::recvAnysource(std::vector<Tensor>& tensors, int tag) {
  Tensor t = one(tensors, "recv");
  fold_dtype dt = dtype_of(t, "recv");
  TORCH_CHECK(tag >= 0, "fold: recv: tag ", tag, " is negative");
  return enqueue(c10d::OpType::RECVANYSOURCE, {t}, [=](WorkFold& w) {
    w.reqs_.push_back(nullptr);
    return fold_irecv(t.data_ptr(), (size_t)t.numel(), dt, FOLD_ANY_SOURCE, tag, comm_, &w.reqs_.back());
  });
}

// all_to_all_single: equal splits go to fold_alltoall; uneven ones become
// one isend/irecv per peer on the private communicator (blocks of different
// sizes; tag 0 is enough, as per-pair order is kept and every call is one
// exchange).
intrusive_ptr<c10d::Work> ProcessGroupFold::alltoall_base(Tensor& out, Tensor& in, std::vector<int64_t>& out_splits,
                                                          std::vector<int64_t>& in_splits,
                                                          const c10d::AllToAllOptions& ao) {
  Tensor i = one({in}, "all_to_all_single"), o = one({out}, "all_to_all_single");
  fold_dtype dt = dtype_of(i, "all_to_all_single");
  TORCH_CHECK(o.scalar_type() == i.scalar_type(), "fold: all_to_all_single: output dtype ", o.scalar_type(),
              " differs from the input's ", i.scalar_type());
  int n = getSize();
  int64_t irow = i.dim() ? i.numel() / std::max<int64_t>(1, i.size(0)) : 1;
  int64_t orow = o.dim() ? o.numel() / std::max<int64_t>(1, o.size(0)) : 1;
  if (out_splits.empty() && in_splits.empty()) {
    TORCH_CHECK(i.numel() == o.numel() && i.numel() % n == 0, "fold: all_to_all_single: input (", i.numel(),
                ") and output (", o.numel(), ") must have the same number of elements, divisible by ", n);
    TORCH_CHECK(i.data_ptr() != o.data_ptr() || i.numel() == 0, "fold: all_to_all_single: in place is not supported");
    fold_coll_opts fo = call_opts(ao.timeout);
    return enqueue(c10d::OpType::ALLTOALL_BASE, {o}, [=](WorkFold&) {
      return fold_alltoall_opts(i.data_ptr(), o.data_ptr(), (size_t)(i.numel() / n), dt, comm_, &fo);
    });
  }
  // Splits count rows (the first dimension); an empty list means equal.
  auto counts = [n](const std::vector<int64_t>& s, const Tensor& t, int64_t row, const char* what) {
    std::vector<int64_t> c(n);
    int64_t rows = t.dim() ? t.size(0) : 1;
    if (s.empty()) {
      TORCH_CHECK(rows % n == 0, "fold: all_to_all_single: ", what, " has ", rows, " rows, not divisible by ", n);
      std::fill(c.begin(), c.end(), rows / n * row);
      return c;
    }
    TORCH_CHECK((int)s.size() == n, "fold: all_to_all_single: ", what, " splits have ", s.size(), " entries, wanted ",
                n);
    int64_t sum = 0;
    for (int p = 0; p < n; p++) {
      TORCH_CHECK(s[p] >= 0, "fold: all_to_all_single: negative split");
      c[p] = s[p] * row;
      sum += s[p];
    }
    TORCH_CHECK(sum == rows, "fold: all_to_all_single: ", what, " splits sum to ", sum, ", the tensor has ", rows,
                " rows");
    return c;
  };
  std::vector<int64_t> sc = counts(in_splits, i, irow, "input"), rc = counts(out_splits, o, orow, "output");
  size_t es = i.element_size();
  return enqueue(c10d::OpType::ALLTOALL_BASE, {o}, [=](WorkFold& w) {
    auto* src = static_cast<const char*>(i.data_ptr());
    auto* dst = static_cast<char*>(o.data_ptr());
    int64_t soff = 0, roff = 0;
    for (int p = 0; p < n; p++) {
      w.reqs_.push_back(nullptr);
      int r = fold_irecv(dst + roff * es, (size_t)rc[p], dt, p, 0, xchg_, &w.reqs_.back());
      if (r != FOLD_OK) {
        w.reqs_.pop_back();
        return r;
      }
      roff += rc[p];
    }
    for (int p = 0; p < n; p++) {
      w.reqs_.push_back(nullptr);
      int r = fold_isend(src + soff * es, (size_t)sc[p], dt, p, 0, xchg_, &w.reqs_.back());
      if (r != FOLD_OK) {
        w.reqs_.pop_back();
        return r;
      }
      soff += sc[p];
    }
    return FOLD_OK;
  });
}


} // namespace fold_torch
