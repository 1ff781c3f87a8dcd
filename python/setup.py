"""setup.py — `pip install ./python` (and, through the repository root's setup.py, `pip install .` and
`python3 -m build --wheel`): builds libfold, the extension fold._fold (and fold._fold_torch where
libtorch-dev is found) and foldrun with CMake from the repository around this folder, and puts them into the
package directory beside the .py modules: the extensions find libfold there through their RUNPATH ($ORIGIN),
`python3 -m fold.run` finds foldrun there. docs/python.md "pip".

Environment: FOLD_CMAKE_ARGS (more -D options for the configure, split on spaces, e.g.
"-DFOLD_BUILD_TORCH=OFF"), CMAKE_BUILD_PARALLEL_LEVEL (jobs; default: the CPU count), FOLD_CMAKE_BUILD_DIR
(the CMake build directory, kept between builds so that a second build is incremental; default: one under
setuptools' build directory).
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def header_version():
    """The one version (include/fold.h's FOLD_VERSION_*), which fold_version() and fold.__version__ report."""
    with open(os.path.join(ROOT, "include", "fold.h")) as f:
        text = f.read()
    parts = [re.search(r"^#define FOLD_VERSION_%s +([0-9]+)" % k, text, re.M) for k in ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        raise SystemExit("setup.py: FOLD_VERSION_MAJOR/MINOR/PATCH not found in include/fold.h")
    return ".".join(m.group(1) for m in parts)


class CMakeExtension(Extension):
    """An extension CMake builds (python/CMakeLists.txt), not setuptools."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def run(self):
        if self.inplace:  # pip install -e: the built files would land in python/fold, inside the source tree
            raise SystemExit("setup.py: editable installs are not offered; for a package that follows the source, "
                             "build with CMake and use PYTHONPATH=<build>/python (docs/python.md)")
        build = os.path.abspath(os.environ.get("FOLD_CMAKE_BUILD_DIR") or os.path.join(self.build_temp, "cmake"))
        os.makedirs(build, exist_ok=True)
        cfg = [
            "cmake", "-S", ROOT, "-B", build,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DPython3_EXECUTABLE=" + sys.executable,
            "-DFOLD_BUILD_PYTHON=ON", "-DFOLD_PYTHON_WHEEL=ON",
            "-DFOLD_BUILD_TESTS=OFF", "-DFOLD_BUILD_TOOLS=ON",  # for foldrun; only the targets below are built
            "-DFOLD_WERROR=OFF",  # a user's compiler may warn where ours did not (CI=true would turn it on)
        ] + os.environ.get("FOLD_CMAKE_ARGS", "").split()
        subprocess.run(cfg, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build, "--target", "fold_python_package", "-j", jobs], check=True)
        pkg = os.path.join(build, "python", "fold")
        if not any(f.startswith("_fold.") and f.endswith(".so") for f in os.listdir(pkg)):
            raise SystemExit("setup.py: CMake built no extension fold._fold (are Python's development files, "
                             "python3-dev, installed? see the configure output above)")
        out = os.path.dirname(self.get_ext_fullpath("fold._fold"))
        os.makedirs(out, exist_ok=True)
        # the extensions (fold._fold_torch too when it was built), libfold under its SONAME, foldrun
        for f in os.listdir(pkg):
            if f.endswith(".so") and f.startswith("_fold"):
                self.copy_file(os.path.join(pkg, f), os.path.join(out, f))
        # libfold.so.<major>: the SONAME (CMake's SOVERSION), the name the extensions ask the loader for
        so = "libfold.so." + header_version().split(".")[0]
        if not os.path.exists(os.path.join(build, so)):
            raise SystemExit("setup.py: CMake built no %s in %s" % (so, build))
        self.copy_file(os.path.realpath(os.path.join(build, so)), os.path.join(out, so))
        self.copy_file(os.path.join(build, "foldrun"), os.path.join(out, "_foldrun"))

    def get_source_files(self):
        return []


if shutil.which("cmake") is None:
    raise SystemExit("setup.py: cmake not found (Debian: apt-get install cmake)")


def fold_setup(**extra):
    """The package's setup(); the repository root's setup.py passes its own build directory."""
    # package_dir is relative to the directory setup() runs in: python/ here, the root for `pip install .`
    pkg_dir = os.path.relpath(os.path.join(HERE, "fold"), os.getcwd())
    setup(
        name="fold",
        version=header_version(),
        description="fold: collective communication and distributed reduction for numpy arrays and torch tensors",
        python_requires=">=3.8",
        packages=["fold"],
        package_dir={"fold": pkg_dir},
        ext_modules=[CMakeExtension("fold._fold")],
        cmdclass={"build_ext": CMakeBuild},
        zip_safe=False,
        **extra,
    )


if __name__ == "__main__":
    fold_setup()
