// process_group.cpp — the torch.distributed backend "fold": a c10d::ProcessGroup whose operations run on a fold communicator in one worker thread; its lifecycle and worker.
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
//
// This file: the rendezvous through torch's store, the group's creation and
// destruction, the worker thread and the module. The operations themselves
// are in process_group_ops.cpp; the classes in process_group.h.

#include "process_group.h"

namespace fold_torch {

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

// ---- the group's lifecycle -------------------------------------------------------

const char* op_name(c10d::OpType t) {
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

ProcessGroupFold::ProcessGroupFold(const intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
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
ProcessGroupFold::~ProcessGroupFold() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  fold_comm_destroy(xchg_);
  fold_comm_destroy(comm_);
}

// ---- the worker ------------------------------------------------------------------

intrusive_ptr<c10d::Work> ProcessGroupFold::enqueue(c10d::OpType type, std::vector<Tensor> outputs,
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
std::exception_ptr ProcessGroupFold::failure(fold_comm* c, int rc) {
  const char* msg = fold_comm_last_error(c);
  return std::make_exception_ptr(
      std::runtime_error(std::string("fold: ") + (msg && msg[0] ? msg : fold_strerror(rc))));
}

void ProcessGroupFold::start(const intrusive_ptr<WorkFold>& w) {
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
void ProcessGroupFold::poll() {
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

void ProcessGroupFold::run() {
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

