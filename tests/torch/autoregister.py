"""autoregister.py — `import fold` after `import torch.distributed` registers the backend "fold"; `import fold` alone
does not import torch.

Run by foldrun at n = 2. Without the registration, init_process_group("fold") fails with torch's bare
"Invalid backend: 'fold'" (the program never imported fold.torch).
"""
import subprocess
import sys

# a program that uses only fold pays no torch import
out = subprocess.run([sys.executable, "-c", "import sys, fold; print('torch' in sys.modules)"],
                     capture_output=True, text=True, timeout=60)
if out.returncode != 0 or out.stdout.strip() != "False":
    print(f"FAIL: `import fold` alone: {out.stdout!r} {out.stderr!r}")
    sys.exit(1)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import fold  # noqa: E402,F401  (no fold.torch: `import fold` registers the backend, torch being imported)

if not hasattr(dist.Backend, "FOLD"):
    print("FAIL: import fold after torch.distributed did not register the backend")
    sys.exit(1)
dist.init_process_group("fold")
r, n = dist.get_rank(), dist.get_world_size()
t = torch.full((3,), float(r + 1))
dist.all_reduce(t)
want = float(n * (n + 1) // 2)
if t.tolist() != [want] * 3:
    print(f"FAIL: rank {r}: all_reduce gave {t.tolist()}, want {want}")
    sys.exit(1)
dist.destroy_process_group()
print(f"rank {r}: backend registered by `import fold`: ok")
