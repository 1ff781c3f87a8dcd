"""fold: collective communication for numpy arrays, buffers and torch CPU tensors.

    import fold, numpy as np
    comm = fold.init()                 # the world, from foldrun/torchrun/mpirun's environment
    x = np.full(4, comm.rank, np.float32)
    comm.allreduce(x)                  # in place: x = sum over ranks
    comm.allreduce(x, out=y, op="max")

Every call raises a fold.Error subclass carrying fold's message (it names the
ranks); blocking calls release the GIL and honour Ctrl-C. docs/python.md.
"""
from ._fold import (  # noqa: F401
    ANY_SOURCE,
    ANY_TAG,
    UNDEFINED,
    Aborted,
    AuthError,
    Comm,
    Error,
    InternalError,
    InvalidArgument,
    Mismatch,
    OutOfMemory,
    PeerLost,
    SystemError,
    Timeout,
    init,
    library_version,
)

__version__ = library_version()
