"""setup.py — `pip install .` and `python3 -m build --wheel` from the repository root: the package that
`pip install ./python` makes (python/setup.py does the work), built under build-pip/ so that it never
writes into the CMake build directories (build/, build-demo/). docs/python.md "pip".
"""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("fold_python_setup", os.path.join(HERE, "python", "setup.py"))
fold_python_setup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fold_python_setup)
fold_python_setup.fold_setup(options={"build": {"build_base": "build-pip"}})
