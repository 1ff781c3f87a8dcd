"""python3 -m fold.run: start ranks of a Python program on this host, as foldrun does (it runs foldrun).

    python3 -m fold.run -n 4 script.py [args...]          # 4 ranks of `python3 script.py`
    python3 -m fold.run -n 2 --transport tcp -m pkg.mod   # 2 ranks of `python3 -m pkg.mod`
    python3 -m fold.run -n 2 --no-python ./a.out          # any program, as foldrun -n 2 ./a.out

foldrun's options (-n/-np, --transport, --timeout, --bind, --print-config, --version, --help) come first and
are passed on; the script runs under this interpreter (sys.executable). The foldrun used is the one
installed with the package (pip), or the build tree's, or the prefix's (cmake --install), or the PATH's.
docs/python.md "Launchers".
"""
import os
import shutil
import sys

# foldrun's options that take a value (getopt_long_only: -np 4, --np=4, -n4, -transport shm all parse)
_WITH_VALUE = ("n", "np", "transport", "timeout", "bind")


def foldrun_path():
    """The foldrun this package goes with: beside it (a pip install), the build tree's (build/python/fold ->
    build/foldrun), the install prefix's (<prefix>/lib/python3.X/*-packages/fold -> <prefix>/bin), then PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.path.join(here, "_foldrun"),
              os.path.join(here, "..", "..", "foldrun"),
              os.path.join(here, "..", "..", "..", "..", "bin", "foldrun")):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.normpath(p)
    return shutil.which("foldrun")


def split_args(argv):
    """(foldrun's options, the command to run): the command is `sys.executable script args...`, or
    `sys.executable -m module args...`, or with --no-python the arguments as given."""
    opts, i, python, module = [], 0, True, None
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a == "--no-python" or a == "--no_python":
            python = False
            i += 1
            continue
        if a == "-m":
            if i + 1 >= len(argv):
                raise SystemExit("fold.run: -m wants a module name")
            module = argv[i + 1]
            i += 2
            break
        if not a.startswith("-") or a == "-":
            break
        name = a.lstrip("-")
        opts.append(a)
        if "=" not in name and name in _WITH_VALUE:
            if i + 1 >= len(argv):
                raise SystemExit(f"fold.run: {a} wants a value")
            opts.append(argv[i + 1])
            i += 2
        else:
            i += 1
    rest = argv[i:]
    if module is not None:
        return opts, [sys.executable, "-m", module] + rest
    if not rest:
        return opts, []
    return opts, ([sys.executable] + rest) if python else rest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    foldrun = foldrun_path()
    if foldrun is None:
        raise SystemExit("fold.run: foldrun not found (beside the package, in the build tree, in the prefix's bin "
                         "or on PATH)")
    opts, cmd = split_args(argv)
    args = [foldrun] + opts + (["--"] + cmd if cmd else [])
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(foldrun, args)


if __name__ == "__main__":
    main()
