"""harness.py — what the Python tests share: checks that name the rank, starting and waiting for ranks without a
launcher, and a thread that shows the GIL is free."""
import os
import subprocess
import sys
import tempfile
import threading
import time


class Checks:
    """check(cond, what): a false cond prints "rank R: FAILED: what" (no rank for rank=None) to stderr and
    keeps what in check.failed; returns cond."""

    def __init__(self, rank=None):
        self.rank = rank
        self.failed = []

    def __call__(self, cond, what):
        if not cond:
            self.failed.append(what)
            who = "" if self.rank is None else f"rank {self.rank}: "
            print(f"{who}FAILED: {what}", file=sys.stderr, flush=True)
        return cond


def start_ranks(script, args, n, tag, ranks=None, **env):
    """Start ranks `ranks` (default all n) of `python3 script *args tmp` without a launcher, so that a killed or
    interrupted rank does not stop the job: they meet at a file store in tmp, a fresh directory also given to
    them as the last argument. env sets more variables (None removes one). Returns (tmp, procs)."""
    tmp = tempfile.mkdtemp(prefix=f"fold-{tag}.")
    os.mkdir(tmp + "/store")
    base = dict(os.environ, FOLD_SIZE=str(n), FOLD_STORE="file://" + tmp + "/store",
                FOLD_JOB_TOKEN=f"{tag}-{os.getpid()}")
    for k, v in env.items():
        if v is None:
            base.pop(k, None)
        else:
            base[k] = v
    procs = [subprocess.Popen([sys.executable, script, *args, tmp], env=dict(base, FOLD_RANK=str(k)))
             for k in (range(n) if ranks is None else ranks)]
    return tmp, procs


class Spinner:
    """A Python thread that counts (every `pause` seconds, or as fast as it can with pause 0) until stop(): the
    count rising while a call blocks shows the call left the GIL free."""

    def __init__(self, pause=0.0):
        self.count = 0
        self._pause = pause
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run, daemon=True)
        self._th.start()

    def _run(self):
        while not self._stop.is_set():
            self.count += 1
            if self._pause:
                time.sleep(self._pause)

    def stop(self):
        self._stop.set()
        self._th.join()


def busy_watcher(comm, then, limit=20):
    """A thread (not started) that calls then() once this process's other thread is inside a blocking call on
    comm's family, which a call from a second thread then sees: iprobe (local, safe to poll) raises
    fold.InvalidArgument. Gives up waiting after limit seconds and calls then() anyway."""
    import fold  # the ranks' import path: not every caller of this module has it

    def run():
        end = time.monotonic() + limit
        while time.monotonic() < end:
            try:
                comm.iprobe()
                time.sleep(0.005)
            except fold.InvalidArgument:
                break
        then()

    return threading.Thread(target=run)


def wait_procs(procs, limit=60):
    """Exit codes of procs, all waited for within limit seconds together; one still running then is killed and
    reported as "hung"."""
    deadline = time.monotonic() + limit
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append("hung")
    return codes
