"""harness.py — what the Python tests share: checks that name the rank, and waiting for ranks a test started."""
import subprocess
import sys
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
