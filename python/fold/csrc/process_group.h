// process_group.h — the torch.distributed backend's classes: WorkFold (one queued operation) and ProcessGroupFold.
//
// The group's lifecycle, rendezvous and worker thread are in process_group.cpp;
// its operations (every collective and point-to-point call, tensors checked
// and turned into fold buffers) in process_group_ops.cpp.
#pragma once

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

// The torch.distributed call an operation type comes from, for messages.
const char* op_name(c10d::OpType t);

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


// ---- the process group ---------------------------------------------------------

class ProcessGroupFold : public c10d::ProcessGroup {
 public:
  // Rendezvous through torch's store, then a private duplicate for block
  // exchanges, then the worker thread (process_group.cpp).
  ProcessGroupFold(const intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  ~ProcessGroupFold() override;

  const std::string getBackendName() const override { return "fold"; }

  // The operations (process_group_ops.cpp): each checks its tensors on the
  // caller's thread and queues a WorkFold that the worker runs.
  intrusive_ptr<c10d::Work> broadcast(std::vector<Tensor>& tensors, const c10d::BroadcastOptions& o) override;
  intrusive_ptr<c10d::Work> allreduce(std::vector<Tensor>& tensors, const c10d::AllreduceOptions& o) override;
  intrusive_ptr<c10d::Work> reduce(std::vector<Tensor>& tensors, const c10d::ReduceOptions& o) override;
  intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<Tensor>>& outs, std::vector<Tensor>& ins,
                                      const c10d::AllgatherOptions& ao) override;
  intrusive_ptr<c10d::Work> _allgather_base(Tensor& out, Tensor& in, const c10d::AllgatherOptions& ao) override;
  intrusive_ptr<c10d::Work> _reduce_scatter_base(Tensor& out, Tensor& in,
                                                 const c10d::ReduceScatterOptions& opts) override;
  intrusive_ptr<c10d::Work> reduce_scatter(std::vector<Tensor>& outs, std::vector<std::vector<Tensor>>& ins,
                                           const c10d::ReduceScatterOptions& opts) override;
  intrusive_ptr<c10d::Work> gather(std::vector<std::vector<Tensor>>& outs, std::vector<Tensor>& ins,
                                   const c10d::GatherOptions& opts) override;
  intrusive_ptr<c10d::Work> scatter(std::vector<Tensor>& outs, std::vector<std::vector<Tensor>>& ins,
                                    const c10d::ScatterOptions& opts) override;
  intrusive_ptr<c10d::Work> alltoall_base(Tensor& out, Tensor& in, std::vector<int64_t>& out_splits,
                                          std::vector<int64_t>& in_splits, const c10d::AllToAllOptions&) override;
  intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& bo) override;
  intrusive_ptr<c10d::Work> send(std::vector<Tensor>& tensors, int dst, int tag) override;
  intrusive_ptr<c10d::Work> recv(std::vector<Tensor>& tensors, int src, int tag) override;
  intrusive_ptr<c10d::Work> recvAnysource(std::vector<Tensor>& tensors, int tag) override;

 private:
  void check_root(int64_t root, const char* op) const;
  void check_peer(int peer, const char* op, int tag) const;

  // Queue an operation for the worker (process_group.cpp); start runs there.
  intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<Tensor> outputs,
                                    std::function<int(WorkFold&)> start);
  // The worker (process_group.cpp).
  std::exception_ptr failure(fold_comm* c, int rc);
  void start(const intrusive_ptr<WorkFold>& w);
  void poll();
  void run();

  fold_comm* comm_ = nullptr;
  fold_comm* xchg_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<intrusive_ptr<WorkFold>> queue_;
  std::deque<intrusive_ptr<WorkFold>> pending_; // the worker's only
  bool stop_ = false;
  std::thread worker_;
};

} // namespace fold_torch
