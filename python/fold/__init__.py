"""fold: collective communication for numpy arrays, buffers and torch CPU tensors.

    import fold, numpy as np
    comm = fold.init()                 # the world, from foldrun/torchrun/mpirun's environment
    x = np.full(4, comm.rank, np.float32)
    comm.allreduce(x)                  # in place: x = sum over ranks
    comm.allreduce(x, out=y, op="max")

Every call raises a fold.Error subclass carrying fold's message (it names the
ranks); blocking calls release the GIL and honour Ctrl-C. docs/python.md.
"""
from . import _fold
from ._fold import (  # noqa: F401
    ANY_SOURCE,
    ANY_TAG,
    UNDEFINED,
    Aborted,
    AsyncReduce,
    AuthError,
    Comm,
    Error,
    InternalError,
    InvalidArgument,
    IterQueue,
    KV_SERVER,
    KV_WORKER,
    KVStore,
    Mismatch,
    OutOfMemory,
    PeerLost,
    Request,
    Sim,
    Status,
    SystemError,
    Timeout,
    areduce_tree,
    config,
    library_version,
)

__version__ = library_version()

_world = None


def init():
    """The world communicator from the environment (fold_init): foldrun, torchrun, mpirun, srun, or a world of
    one when started by hand. Blocks until every rank joined. Called again while that world is alive (not
    destroyed), it returns the same Comm: libraries of one program share the world instead of each
    starting a rendezvous the other ranks would not join."""
    global _world
    if _world is None or _world.destroyed:
        _world = _fold.init()
    return _world


def _register_torch_backend():
    """torch.distributed's backend "fold" lives in fold.torch, which imports torch (seconds): so `import fold`
    registers it only when the program imported torch.distributed already, which is the order of
    `import torch.distributed as dist; import fold; dist.init_process_group("fold")`. Otherwise
    `import fold.torch` registers it (torch's own "Invalid backend" error cannot be changed from here)."""
    import sys
    if "torch.distributed" not in sys.modules:
        return
    try:
        from . import torch as _torch  # noqa: F401
    except ImportError:  # built without the backend (no libtorch-dev): nothing to register
        pass


_register_torch_backend()


def __getattr__(name):
    # fold.KMeans and fold.LogisticRegression need numpy: loaded on first use
    if name in ("KMeans", "LogisticRegression"):
        from . import ml
        return getattr(ml, name)
    raise AttributeError(f"module 'fold' has no attribute '{name}'")
