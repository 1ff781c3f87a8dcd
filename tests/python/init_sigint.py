"""init_sigint.py — Ctrl-C in fold.init(): rank 0 of a world of 2 whose rank 1 never comes gets SIGINT inside
fold.init() and raises KeyboardInterrupt within 1 s, while a Python thread runs (the GIL is free). A
fold.init() while the interrupted rendezvous still waits is refused with fold.InvalidArgument saying so; once
that rendezvous timed out (FOLD_TIMEOUT = 2 s), fold.init() works again (here: a world of one).

Runs the rank itself (no launcher) and sends the signal. Usage: init_sigint.py PYTHONPATH"""
import os
import signal
import subprocess
import sys
import time

import harness

if sys.argv[1] != "rank":
    tmp, (p,) = harness.start_ranks(os.path.abspath(__file__), ["rank"], 2, "pyinitsig", ranks=[0],
                                    PYTHONPATH=sys.argv[1], FOLD_TIMEOUT="2", FOLD_TRANSPORT=None)
    marker = os.path.join(tmp, "in-init")
    end = time.monotonic() + 30
    while not os.path.exists(marker) and p.poll() is None and time.monotonic() < end:
        time.sleep(0.01)
    if not os.path.exists(marker):
        print("FAIL: the rank never reached fold.init()")
        p.kill()
        sys.exit(1)
    time.sleep(0.3)  # inside fold_init by now
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        print("FAIL: the rank hangs after SIGINT")
        p.kill()
        sys.exit(1)
    caught = os.path.join(tmp, "caught")
    if rc != 0 or not os.path.exists(caught):
        print("FAIL: rank exited %d" % rc)
        sys.exit(1)
    dt = float(open(caught).read()) - sent
    print("init_sigint: KeyboardInterrupt %.3f s after SIGINT" % dt)
    if not 0 <= dt < 1.0:
        print("FAIL: KeyboardInterrupt came %.3f s after SIGINT (the bound is 1 s)" % dt)
        sys.exit(1)
    print("init_sigint: ok")
    sys.exit(0)

tmp = sys.argv[2]

import fold  # noqa: E402

spinner = harness.Spinner(0.005)
open(os.path.join(tmp, "in-init"), "w").write("1")
before = spinner.count
try:
    fold.init()
    print("FAIL: fold.init() returned in a world whose rank 1 never comes")
    sys.exit(1)
except KeyboardInterrupt:
    open(os.path.join(tmp, "caught"), "w").write(repr(time.monotonic()))
if spinner.count - before < 10:
    print("FAIL: the other Python thread did not run during fold.init() (%d ticks)" % (spinner.count - before))
    sys.exit(1)
try:
    fold.init()
    print("FAIL: a second fold.init() started while the first still waits")
    sys.exit(1)
except fold.InvalidArgument as e:
    if "still waiting" not in str(e):
        print("FAIL: unexpected message: %s" % e)
        sys.exit(1)
# the abandoned rendezvous times out after FOLD_TIMEOUT = 2 s; then init works again
end = time.monotonic() + 15
while True:
    os.environ["FOLD_SIZE"] = "1"
    try:
        w = fold.init()
        break
    except fold.InvalidArgument as e:
        if "still waiting" not in str(e) or time.monotonic() > end:
            print("FAIL: fold.init() still refused: %s" % e)
            sys.exit(1)
        time.sleep(0.1)
if w.size != 1:
    print("FAIL: a world of %d, not 1" % w.size)
    sys.exit(1)
spinner.stop()
w.destroy()
