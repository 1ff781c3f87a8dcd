"""fold.torch: the torch.distributed backend "fold".

    import fold.torch                      # registers the backend
    import torch.distributed as dist
    dist.init_process_group("fold")        # env:// under torchrun (RANK, WORLD_SIZE, MASTER_ADDR/PORT) or foldrun

Every process group is a fold communicator made at torch's store
(fold_comm_init_store) and driven by one worker thread of its own, so
async_op=True work runs in the background. Supported: all_reduce (SUM, AVG,
PRODUCT, MIN, MAX; BAND/BOR/BXOR on integers), broadcast, all_gather,
all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, reduce, gather,
scatter, all_to_all_single (even and uneven splits), barrier, send/recv
(tags; recv from any source). CPU tensors, contiguous; float16/32/64,
bfloat16, int8, uint8, int32, int64, bool. A failure raises RuntimeError from
work.wait() with fold's message naming the ranks. docs/python.md.
"""
import hashlib
import os

import torch  # noqa: F401  (top-level torch: absolute import)
import torch.distributed as dist

from . import _fold_torch

BACKEND = "fold"


def _foldrun_env():
    """Under foldrun (FOLD_RANK/FOLD_SIZE/FOLD_STORE), give env:// what it reads.

    foldrun serves a fold store, not a torch TCPStore: torch's store then
    lives on the fold store's host (MASTER_ADDR, 127.0.0.1 under foldrun) at
    a port below the kernel's ephemeral range that every rank derives alike
    from the job's token and store (no outgoing connection takes it). Values
    already set win.
    """
    e = os.environ
    if "FOLD_RANK" not in e or "FOLD_SIZE" not in e:
        return
    e.setdefault("RANK", e["FOLD_RANK"])
    e.setdefault("WORLD_SIZE", e["FOLD_SIZE"])
    store = e.get("FOLD_STORE", "")
    host = "127.0.0.1"
    if store.startswith("tcp://") and ":" in store[6:]:
        host = store[6:].rsplit(":", 1)[0].strip("[]")
    e.setdefault("MASTER_ADDR", host)
    if "MASTER_PORT" not in e:
        seed = (e.get("FOLD_JOB_TOKEN", "") + "|" + store).encode()
        e["MASTER_PORT"] = str(20000 + int.from_bytes(hashlib.sha256(seed).digest()[:4], "little") % 10000)


def _create(store, rank, world_size, timeout):
    return _fold_torch.create_process_group(store, rank, world_size, timeout)


_foldrun_env()
if not hasattr(dist.Backend, BACKEND.upper()):
    dist.Backend.register_backend(BACKEND, _create)
