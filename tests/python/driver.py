"""driver.py — start N ranks of signals.py without a launcher (so that a killed or interrupted rank does not
stop the job) and send them their signals. Usage: driver.py kill|sigint N TRANSPORT PYTHONPATH"""
import os
import signal
import subprocess
import sys
import time

import harness

mode, n, transport, pypath = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
here = os.path.dirname(os.path.abspath(__file__))
tmp, procs = harness.start_ranks(os.path.join(here, "signals.py"), [mode], n, "pysig", PYTHONPATH=pypath,
                                 FOLD_TRANSPORT=transport, FOLD_TIMEOUT="20")


def wait_file(name, limit=30):
    end = time.monotonic() + limit
    while not os.path.exists(os.path.join(tmp, name)):
        if time.monotonic() > end or procs[0].poll() is not None:
            return False
        time.sleep(0.01)
    return True


ok = True
if mode == "sigint":
    for step in range(4):
        if not wait_file(f"ready{step}"):
            print(f"driver: rank 0 never got ready for step {step}")
            ok = False
            break
        time.sleep(0.2)  # inside its wait (signals.py says so): let it fall past the spin into the sleeps
        with open(os.path.join(tmp, f"sent{step}.tmp"), "w") as f:
            f.write(repr(time.monotonic()))
        os.rename(os.path.join(tmp, f"sent{step}.tmp"), os.path.join(tmp, f"sent{step}"))
        procs[0].send_signal(signal.SIGINT)
codes = harness.wait_procs(procs, 60)
want = [0] * n
if mode == "kill":
    want[n - 1] = -signal.SIGKILL
print(f"driver: {mode} n={n} {transport}: exit codes {codes}, want {want}")
subprocess.run(["rm", "-rf", tmp])
sys.exit(0 if ok and codes == want else 1)
