"""config.py — fold.config() lists every FOLD_* variable as the library reads it: a set value, a default, a rejected one explained."""
import os
import sys

import fold

os.environ["FOLD_TIMEOUT"] = "7"
os.environ["FOLD_KV_SERVERS"] = "4294967298"
os.environ.pop("FOLD_DEBUG", None)
text = fold.config()
lines = text.splitlines()
fails = []
if "FOLD_TIMEOUT            7" not in lines:
    fails.append("FOLD_TIMEOUT=7 not listed")
if "FOLD_DEBUG              WARN (default)" not in lines:
    fails.append("FOLD_DEBUG's default not listed")
if 'FOLD_KV_SERVERS         1 (default: "4294967298" is not an integer in [1, 2^30])' not in lines:
    fails.append("the rejected FOLD_KV_SERVERS not explained")
os.environ["FOLD_TIMEOUT"] = "8"  # read again: the new value
if "FOLD_TIMEOUT            8" not in fold.config().splitlines():
    fails.append("a changed FOLD_TIMEOUT not seen")
if fails:
    print("FAIL: " + "; ".join(fails) + "\n" + text, file=sys.stderr)
    sys.exit(1)
print("ok: fold.config()")
