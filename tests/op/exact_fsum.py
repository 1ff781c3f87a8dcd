#!/usr/bin/env python3
# exact_fsum.py — run the FOLD_SUM_EXACT test and check every printed result against
# math.fsum (float64) or the exact rational sum rounded to float32 (float32).
import math, subprocess, sys
from fractions import Fraction

def round_f32(q):
    """The float32 nearest the rational q (ties to even), as a float."""
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, -126)                      # below: the subnormal spacing 2^-149
    scale = Fraction(2) ** (e - 23)       # one ulp at this binade
    m, rem = divmod(q / scale, 1)
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m % 2 == 1):
        m += 1
    v = float(m * scale)
    if v >= 2.0**128:                     # rounded past the largest float32
        v = math.inf
    return sign * v

out = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(out.stderr)
if out.returncode != 0:
    print("exact_fsum: the test program failed", out.returncode)
    sys.exit(1)
bad = checked = 0
for line in out.stdout.splitlines():
    if line.startswith("["):  # foldrun's "[rank] " prefix
        line = line.split("] ", 1)[-1]
    if not (line.startswith("f32 ") or line.startswith("f64 ")):
        continue
    kind, rest = line.split(" ", 1)
    xs_s, got_s = rest.split(" = ")
    xs = [float.fromhex(t) for t in xs_s.split()]
    got = float.fromhex(got_s)
    if kind == "f64":
        want = math.fsum(xs)
    else:
        want = round_f32(sum(Fraction(x) for x in xs))
    if want == 0:  # fsum gives +0 for an exact zero; IEEE (and fold) give -0 when every term is -0
        want = -0.0 if all(x == 0 and math.copysign(1, x) < 0 for x in xs) else 0.0
    checked += 1
    if got != want or math.copysign(1, got) != math.copysign(1, want):
        bad += 1
        print(f"MISMATCH {kind}: inputs {xs_s}: got {got.hex()}, want {want.hex()}")
print(f"exact_fsum: {checked} sums checked, {bad} wrong")
sys.exit(1 if bad or checked == 0 else 0)
