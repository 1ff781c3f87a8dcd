"""run_test.py — python3 -m fold.run: foldrun's options pass through, the program runs under this interpreter
(a script, -m module, or --no-python as given), and 2 ranks of a script run a checked allreduce from the build
tree (PYTHONPATH=<build>/python, foldrun found at <build>/foldrun)."""
import os
import subprocess
import sys
import tempfile

from fold import run

py = sys.executable
cases = [
    (["-n", "4", "s.py", "-n", "x"], ["-n", "4"], [py, "s.py", "-n", "x"]),
    (["-np", "2", "--transport", "tcp", "--timeout=5", "s.py"], ["-np", "2", "--transport", "tcp", "--timeout=5"],
     [py, "s.py"]),
    (["-n4", "-bind", "none", "--", "s.py", "--bind"], ["-n4", "-bind", "none"], [py, "s.py", "--bind"]),
    (["-n", "2", "-m", "pkg.mod", "-n", "3"], ["-n", "2"], [py, "-m", "pkg.mod", "-n", "3"]),
    (["-n", "2", "--no-python", "./a.out", "x"], ["-n", "2"], ["./a.out", "x"]),
    (["--version"], ["--version"], []),
    (["--print-config", "--transport", "shm"], ["--print-config", "--transport", "shm"], []),
]
for argv, opts, cmd in cases:
    got = run.split_args(argv)
    assert got == (opts, cmd), f"split_args({argv}) = {got}, want {(opts, cmd)}"
for bad in (["-n"], ["-n", "2", "-m"]):
    try:
        run.split_args(bad)
    except SystemExit as e:
        assert "wants" in str(e), e
    else:
        raise AssertionError(f"split_args({bad}) accepted")

fr = run.foldrun_path()
assert fr and os.access(fr, os.X_OK), f"no foldrun found: {fr}"
with tempfile.TemporaryDirectory() as d:
    script = os.path.join(d, "ar.py")
    with open(script, "w") as f:
        f.write("import sys, fold\n"
                "comm = fold.init()\n"
                "assert comm.size == 2 and sys.executable == %r, (comm.size, sys.executable)\n"
                "x = bytearray([comm.rank + 1] * 8)\n"
                "comm.allreduce(memoryview(x).cast('B'))\n"
                "assert bytes(x) == bytes([3] * 8), bytes(x)\n"
                "print('allreduce ok on rank', comm.rank)\n" % py)
    p = subprocess.run([py, "-m", "fold.run", "-n", "2", script], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, FOLD_TIMEOUT="60"))
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert sorted(l for l in p.stdout.splitlines() if "allreduce ok" in l) == \
        ["[0] allreduce ok on rank 0", "[1] allreduce ok on rank 1"], p.stdout
    v = subprocess.run([py, "-m", "fold.run", "--version"], capture_output=True, text=True, timeout=60)
    import fold
    assert v.returncode == 0 and v.stdout.strip() == "foldrun (fold) " + fold.__version__, (v.stdout, v.stderr)
print("run_test: good, foldrun", fr)
