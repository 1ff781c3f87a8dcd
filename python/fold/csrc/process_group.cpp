// process_group.cpp — the torch.distributed backend "fold": a c10d::ProcessGroup whose operations run on a fold communicator in one worker thread.
//
// Why a worker thread: a fold communicator is used by one thread at a time,
// and torch wants async_op=True work to run in the background (DDP starts
// the allreduce of a gradient bucket from the autograd thread and waits for
// it at the end of backward). So every operation is queued, as Gloo does,
// and one thread per process group runs the queue in order: every rank
// enqueues the same collectives in the same order, so they run in the same
// order on every rank. Point-to-point operations are started nonblocking
// and polled, so that an isend waiting for its receiver (a rendezvous over
// tcp) cannot keep this rank's matching irecv queued behind it.
//
// Failures: a fold error finishes the Work with a std::runtime_error
// carrying fold's message (it names the ranks); torch turns it into a
// Python RuntimeError from work.wait(). fold's communicator is fail-stop,
// so every later operation fails at once with the same cause.
#include <torch/extension.h>

#include <pybind11/chrono.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fold.h"

namespace fold_torch {

using at::Tensor;
using c10::intrusive_ptr;

// ---- the rendezvous through torch's store ---------------------------------

// The c10d::Store as fold_store_callbacks; the last exception's text is kept
// so that a failed rendezvous can say what the store said.
struct StoreCtx {
  intrusive_ptr<c10d::Store> store;
  std::string last_error;
};

static int store_fail(StoreCtx* s, const char* what, const char* key, const std::exception& e) {
  s->last_error = std::string(what) + "(\"" + key + "\"): " + e.what();
  return FOLD_ESYS;
}

static int cb_set(void* ctx, const char* key, const void* value, size_t len) {
  auto* s = static_cast<StoreCtx*>(ctx);
  try {
    const auto* p = static_cast<const uint8_t*>(value);
    s->store->set(key, std::vector<uint8_t>(p, p + len));
    return 0;
  } catch (const std::exception& e) {
    return store_fail(s, "set", key, e);
  }
}

static int cb_get(void* ctx, const char* key, void* buf, size_t cap, size_t* len, double timeout_s) {
  auto* s = static_cast<StoreCtx*>(ctx);
  try {
    // c10d's wait() treats a zero timeout as "the store's default": look
    // with check() instead, and wait only for a positive time.
    if (!s->store->check({key})) {
      if (timeout_s <= 0)
        return FOLD_ETIMEDOUT;
      auto ms = std::chrono::milliseconds(std::max<int64_t>(1, (int64_t)(timeout_s * 1000.0)));
      try {
        s->store->wait({key}, ms);
      } catch (const std::exception&) {
        if (!s->store->check({key})) // the wait ran out (or the store went: check throws then)
          return FOLD_ETIMEDOUT;
      }
    }
    std::vector<uint8_t> v = s->store->get(key);
    *len = v.size();
    std::copy_n(v.begin(), std::min(cap, v.size()), static_cast<uint8_t*>(buf));
    return 0;
  } catch (const std::exception& e) {
    return store_fail(s, "get", key, e);
  }
}

static int cb_add(void* ctx, const char* key, int64_t delta, int64_t* total) {
  auto* s = static_cast<StoreCtx*>(ctx);
  try {
    *total = s->store->add(key, delta);
    return 0;
  } catch (const std::exception& e) {
    return store_fail(s, "add", key, e);
  }
}

static int cb_del(void* ctx, const char* key) {
  auto* s = static_cast<StoreCtx*>(ctx);
  try {
    s->store->deleteKey(key);
    return 0;
  } catch (const std::exception& e) { // FileStore cannot delete: keys stay, harmless
    return store_fail(s, "del", key, e);
  }
}

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

// ---- work --------------------------------------------------------------------

// The torch.distributed call an operation type comes from, for messages.
static const char* op_name(c10d::OpType t) {
  switch (t) {
    case c10d::OpType::BROADCAST: return "broadcast";
    case c10d::OpType::ALLREDUCE: return "all_reduce";
    case c10d::OpType::REDUCE: return "reduce";
    case c10d::OpType::ALLGATHER: return "all_gather";
    case c10d::OpType::_ALLGATHER_BASE: return "all_gather_into_tensor";
    case c10d::OpType::GATHER: return "gather";
    case c10d::OpType::SCATTER: return "scatter";
    case c10d::OpType::REDUCE_SCATTER: return "reduce_scatter";
    case c10d::OpType::_REDUCE_SCATTER_BASE: return "reduce_scatter_tensor";
    case c10d::OpType::ALLTOALL_BASE: return "all_to_all_single";
    case c10d::OpType::SEND: return "send";
    case c10d::OpType::RECV: return "recv";
    case c10d::OpType::RECVANYSOURCE: return "recv (any source)";
    case c10d::OpType::BARRIER: return "barrier";
    default: return "operation";
  }
}

class ProcessGroupFold;

// One queued operation. start() runs in the worker: it either completes the
// operation (a blocking collective) or leaves fold requests in reqs_ that
// the worker polls (point-to-point).
class WorkFold : public c10d::Work {
 public:
  WorkFold(int rank, c10d::OpType type, std::vector<Tensor> outputs, std::function<int(WorkFold&)> start)
      : c10d::Work(rank, type), outputs_(std::move(outputs)), start_(std::move(start)),
        future_(c10::make_intrusive<at::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

  std::vector<Tensor> result() override { return outputs_; }

  // work.wait(timeout): torch passes kNoTimeout (0 ms) unless the caller
  // gives one. A work not complete within it raises, naming the operation
  // and the timeout; the operation itself goes on (the worker owns it: a
  // fold call cannot be withdrawn halfway without failing the group), so a
  // later wait() can still complete it, as with Gloo.
  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout != kNoTimeout) {
      std::unique_lock<std::mutex> lk(mutex_);
      if (!cv_.wait_for(lk, timeout, [this] { return completed_; }))
        TORCH_CHECK(false, "fold: rank ", rank_, ": ", op_name(opType_), " not complete within ", timeout.count(),
                    " ms (work.wait(timeout)); the operation goes on: wait() again to complete it");
    }
    return c10d::Work::wait(kNoTimeout);
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  int sourceRank() const override { return source_; }

  // Run in the worker only.
  void complete(std::exception_ptr e) {
    if (e)
      future_->setError(e);
    else
      future_->markCompleted(c10::IValue(outputs_));
    finish(e);
  }

  std::vector<Tensor> outputs_;
  std::function<int(WorkFold&)> start_;
  std::vector<fold_request*> reqs_; // pending point-to-point requests
  std::function<void()> after_;    // copy-out once reqs_ are done (may be empty)
  int source_ = -1;                // recvAnysource: the sender, once known
  fold_status status_{};

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A collective's c10d options timeout as fold's per-call timeout: unset
// (kUnsetTimeout, -1 ms) or not positive leaves the communicator's
// FOLD_TIMEOUT (the group's timeout, see the constructor).
static fold_coll_opts call_opts(std::chrono::milliseconds timeout) {
  fold_coll_opts o = FOLD_COLL_OPTS_INIT;
  if (timeout.count() > 0) o.timeout = (double)timeout.count() / 1000.0;
  return o;
}

// ---- the process group ---------------------------------------------------------

class ProcessGroupFold : public c10d::ProcessGroup {
 public:
  ProcessGroupFold(const intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout)
      : c10d::ProcessGroup(rank, size) {
    // torch's timeout bounds fold's waits unless FOLD_TIMEOUT says otherwise
    // (read when the communicator is made; setenv does not replace a value).
    char set[64];
    if (fold_config_get("FOLD_TIMEOUT", set, sizeof set) == 0 && timeout.count() > 0)
      setenv("FOLD_TIMEOUT", std::to_string(std::max<int64_t>(1, timeout.count() / 1000)).c_str(), 0);
    StoreCtx ctx{store, ""};
    fold_store_callbacks cb = {cb_set, cb_get, cb_add, cb_del};
    int rc = fold_comm_init_store(&comm_, rank, size, &cb, &ctx);
    if (rc != FOLD_OK) {
      std::string msg = fold_comm_last_error(nullptr);
      if (!ctx.last_error.empty())
        msg += " (torch store: " + ctx.last_error + ")";
      throw std::runtime_error("fold: " + msg);
    }
    // A private channel for the block exchanges built from point-to-point
    // (all_to_all_single with uneven splits), so their tags never meet the
    // user's send/recv tags.
    rc = fold_comm_dup(comm_, &xchg_);
    if (rc != FOLD_OK) {
      std::string msg = fold_comm_last_error(comm_);
      fold_comm_destroy(comm_);
      throw std::runtime_error("fold: " + msg);
    }
    worker_ = std::thread([this] { run(); });
    init(); // c10d's per-group setup (logging), as its own backends do
  }

  // Runs the queue to its end first: work already queued completes or
  // fails (a failed communicator fails it at once; a peer that is merely
  // absent is waited for up to FOLD_TIMEOUT, as Gloo waits too).
  ~ProcessGroupFold() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
    fold_comm_destroy(xchg_);
    fold_comm_destroy(comm_);
  }

  const std::string getBackendName() const override { return "fold"; }

  intrusive_ptr<c10d::Work> broadcast(std::vector<Tensor>& tensors, const c10d::BroadcastOptions& o) override {
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

  intrusive_ptr<c10d::Work> allreduce(std::vector<Tensor>& tensors, const c10d::AllreduceOptions& o) override {
    Tensor t = one(tensors, "allreduce");
    fold_dtype dt = dtype_of(t, "allreduce");
    fold_op op = op_of(o.reduceOp, t, "allreduce");
    fold_coll_opts fo = call_opts(o.timeout);
    return enqueue(c10d::OpType::ALLREDUCE, {t}, [=](WorkFold&) {
      return fold_allreduce_opts(t.data_ptr(), t.data_ptr(), (size_t)t.numel(), dt, op, comm_, &fo);
    });
  }

  intrusive_ptr<c10d::Work> reduce(std::vector<Tensor>& tensors, const c10d::ReduceOptions& o) override {
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

  intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<Tensor>>& outs, std::vector<Tensor>& ins,
                                      const c10d::AllgatherOptions& ao) override {
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

  intrusive_ptr<c10d::Work> _allgather_base(Tensor& out, Tensor& in, const c10d::AllgatherOptions& ao) override {
    Tensor i = one({in}, "all_gather_into_tensor"), o = one({out}, "all_gather_into_tensor");
    fold_dtype dt = dtype_of(i, "all_gather_into_tensor");
    same_kind(i, o, i.numel() * getSize(), "all_gather_into_tensor", "the output");
    fold_coll_opts fo = call_opts(ao.timeout);
    return enqueue(c10d::OpType::_ALLGATHER_BASE, {o}, [=](WorkFold&) {
      return fold_allgather_opts(i.data_ptr(), o.data_ptr(), (size_t)i.numel(), dt, comm_, &fo);
    });
  }

  intrusive_ptr<c10d::Work> _reduce_scatter_base(Tensor& out, Tensor& in,
                                                 const c10d::ReduceScatterOptions& opts) override {
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

  intrusive_ptr<c10d::Work> reduce_scatter(std::vector<Tensor>& outs, std::vector<std::vector<Tensor>>& ins,
                                           const c10d::ReduceScatterOptions& opts) override {
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

  intrusive_ptr<c10d::Work> gather(std::vector<std::vector<Tensor>>& outs, std::vector<Tensor>& ins,
                                   const c10d::GatherOptions& opts) override {
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

  intrusive_ptr<c10d::Work> scatter(std::vector<Tensor>& outs, std::vector<std::vector<Tensor>>& ins,
                                    const c10d::ScatterOptions& opts) override {
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

  intrusive_ptr<c10d::Work> alltoall_base(Tensor& out, Tensor& in, std::vector<int64_t>& out_splits,
                                          std::vector<int64_t>& in_splits, const c10d::AllToAllOptions&) override;

  intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& bo) override {
    fold_coll_opts fo = call_opts(bo.timeout);
    return enqueue(c10d::OpType::BARRIER, {}, [=](WorkFold&) { return fold_barrier_opts(comm_, &fo); });
  }

  intrusive_ptr<c10d::Work> send(std::vector<Tensor>& tensors, int dst, int tag) override {
    Tensor t = one(tensors, "send");
    fold_dtype dt = dtype_of(t, "send");
    check_peer(dst, "send", tag);
    return enqueue(c10d::OpType::SEND, {t}, [=](WorkFold& w) {
      w.reqs_.push_back(nullptr);
      return fold_isend(t.data_ptr(), (size_t)t.numel(), dt, dst, tag, comm_, &w.reqs_.back());
    });
  }

  intrusive_ptr<c10d::Work> recv(std::vector<Tensor>& tensors, int src, int tag) override {
    Tensor t = one(tensors, "recv");
    fold_dtype dt = dtype_of(t, "recv");
    check_peer(src, "recv", tag);
    return enqueue(c10d::OpType::RECV, {t}, [=](WorkFold& w) {
      w.reqs_.push_back(nullptr);
      return fold_irecv(t.data_ptr(), (size_t)t.numel(), dt, src, tag, comm_, &w.reqs_.back());
    });
  }

  intrusive_ptr<c10d::Work> recvAnysource(std::vector<Tensor>& tensors, int tag) override {
    Tensor t = one(tensors, "recv");
    fold_dtype dt = dtype_of(t, "recv");
    TORCH_CHECK(tag >= 0, "fold: recv: tag ", tag, " is negative");
    return enqueue(c10d::OpType::RECVANYSOURCE, {t}, [=](WorkFold& w) {
      w.reqs_.push_back(nullptr);
      return fold_irecv(t.data_ptr(), (size_t)t.numel(), dt, FOLD_ANY_SOURCE, tag, comm_, &w.reqs_.back());
    });
  }

 private:
  void check_root(int64_t root, const char* op) const {
    TORCH_CHECK(root >= 0 && root < getSize(), "fold: ", op, ": rank ", getRank(), ": root ", root,
                " is not in [0, ", getSize(), ")");
  }
  void check_peer(int peer, const char* op, int tag) const {
    TORCH_CHECK(peer >= 0 && peer < getSize(), "fold: ", op, ": rank ", getRank(), ": peer ", peer,
                " is not in [0, ", getSize(), ")");
    TORCH_CHECK(tag >= 0, "fold: ", op, ": rank ", getRank(), ": tag ", tag, " is negative");
  }

  intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<Tensor> outputs,
                                    std::function<int(WorkFold&)> start) {
    auto w = c10::make_intrusive<WorkFold>(getRank(), type, std::move(outputs), std::move(start));
    {
      std::lock_guard<std::mutex> g(mu_);
      queue_.push_back(w);
    }
    cv_.notify_one();
    return w;
  }

  // A fold failure as the exception work.wait() raises.
  std::exception_ptr failure(fold_comm* c, int rc) {
    const char* msg = fold_comm_last_error(c);
    return std::make_exception_ptr(
        std::runtime_error(std::string("fold: ") + (msg && msg[0] ? msg : fold_strerror(rc))));
  }

  void start(const intrusive_ptr<WorkFold>& w) {
    try {
      int rc = w->start_(*w);
      if (rc != FOLD_OK) {
        for (fold_request* r : w->reqs_) // started before the failing one: drain
          if (r)
            fold_wait(r);
        w->reqs_.clear();
        w->complete(failure(comm_, rc));
      } else if (w->reqs_.empty()) {
        w->complete(nullptr);
      } else {
        pending_.push_back(w);
      }
    } catch (...) {
      w->complete(std::current_exception());
    }
  }

  // Test the pending point-to-point works once; finish those that are done.
  void poll() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      WorkFold& w = **it;
      int rc = FOLD_OK;
      for (auto r = w.reqs_.begin(); r != w.reqs_.end();) {
        int done = 0;
        int s = fold_test_status(*r, &done, &w.status_);
        if (done) {
          if (s != FOLD_OK && rc == FOLD_OK)
            rc = s;
          if (w.status_.source >= 0)
            w.source_ = w.status_.source;
          r = w.reqs_.erase(r);
        } else {
          ++r;
        }
      }
      if (!w.reqs_.empty()) {
        ++it;
        continue;
      }
      std::exception_ptr e = rc == FOLD_OK ? nullptr : failure(comm_, rc);
      if (!e && w.after_) {
        try {
          w.after_();
        } catch (...) {
          e = std::current_exception();
        }
      }
      (*it)->complete(e);
      it = pending_.erase(it);
    }
  }

  void run() {
    std::unique_lock<std::mutex> lk(mu_);
    auto nap = std::chrono::microseconds(20);
    for (;;) {
      if (queue_.empty() && pending_.empty()) {
        if (stop_)
          return;
        cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
        continue;
      }
      if (!queue_.empty()) {
        auto w = queue_.front();
        queue_.pop_front();
        lk.unlock();
        start(w);
        poll();
        lk.lock();
        nap = std::chrono::microseconds(20);
        continue;
      }
      // Only point-to-point is pending: poll, napping longer while nothing
      // moves (up to 1 ms), and wake at once when new work is queued.
      lk.unlock();
      size_t before = pending_.size();
      poll();
      lk.lock();
      if (pending_.size() == before && queue_.empty()) {
        if (stop_) { // destroyed with requests still pending: the comm goes anyway
          lk.unlock();
          for (auto& w : pending_)
            w->complete(std::make_exception_ptr(std::runtime_error("fold: process group destroyed")));
          pending_.clear();
          return;
        }
        cv_.wait_for(lk, nap);
        nap = std::min(nap * 2, std::chrono::microseconds(1000));
      } else {
        nap = std::chrono::microseconds(20);
      }
    }
  }

  fold_comm* comm_ = nullptr;
  fold_comm* xchg_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<intrusive_ptr<WorkFold>> queue_;
  std::deque<intrusive_ptr<WorkFold>> pending_; // the worker's only
  bool stop_ = false;
  std::thread worker_;
};

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

static intrusive_ptr<c10d::ProcessGroup> create(const intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                std::chrono::milliseconds timeout) {
  return c10::make_intrusive<ProcessGroupFold>(store, rank, size, timeout);
}

} // namespace fold_torch

PYBIND11_MODULE(_fold_torch, m) {
  m.doc() = "fold's torch.distributed backend (use: import fold.torch)";
  py::class_<fold_torch::ProcessGroupFold, c10d::ProcessGroup, c10::intrusive_ptr<fold_torch::ProcessGroupFold>>(
      m, "ProcessGroupFold");
  // Rendezvous blocks: let other Python threads run meanwhile.
  m.def("create_process_group", &fold_torch::create, py::arg("store"), py::arg("rank"), py::arg("size"),
        py::arg("timeout"), py::call_guard<py::gil_scoped_release>());
  m.def("version", [] { return std::string(fold_version()); });
}
