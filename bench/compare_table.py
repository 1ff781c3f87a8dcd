# compare_table.py — bench/compare's last step: joins the per-run rows of a results dir into tables (text, markdown), the bandwidth bound and the plots.
#
# Usage: compare_table.py RESULTS_DIR   (bench/compare calls it; rerunnable on an old dir)
# Reads RESULTS_DIR/runs.tsv (setting, collective, n, library, status, detail
# per run), raw/<setting>-<coll>-n<n>-<lib>.rows ("size count iters time_us
# p99_us" lines), membw.txt and meta.txt. Writes table.txt (also printed),
# table.md, plot/*.dat and compare-<setting>.png (gnuplot).
import os
import subprocess
import sys

LIBS = ["fold-shm", "fold-tcp", "fold-hier", "ompi-shm", "ompi-tcp", "ompi-han", "mpich", "gloo"]
MPIS = ["ompi-shm", "ompi-tcp", "ompi-han", "mpich"]
# Each peer is compared with the fold of its own transport class: shared
# memory with fold-shm, sockets with fold-tcp (in netns everything is tcp).
# (fold-hier and ompi-han, the netns setting's hierarchical runs, are fold-tcp and ompi-tcp's class.)
PAIR = {"ompi-shm": "fold-shm", "mpich": "fold-shm", "ompi-tcp": "fold-tcp", "ompi-han": "fold-tcp", "gloo": "fold-tcp"}
BOUND_TRAFFIC = 1.0  # memcpy-equivalents of S per rank that must reach DRAM (docs/performance.md, "The bandwidth bound")


def label(b):
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit and b % unit == 0:
            return "%d %s" % (b // unit, name)
    return "%d B" % b


def fmt_time(t):
    return "%.2f" % t if t < 1e5 else "%.0f" % t


def read_rows(path):
    rows = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 5 and p[0].isdigit():
                    rows[int(p[0])] = (float(p[3]), float(p[4]))
    except OSError:
        pass
    return rows


def read_kv(path):
    kv = {}
    try:
        with open(path) as f:
            for line in f:
                for part in [line.strip()] if not line.startswith("threads=") else []:
                    k, _, v = part.partition("=")
                    kv[k] = v
    except OSError:
        pass
    return kv


def read_membw(path):
    bw = {}
    try:
        with open(path) as f:
            for line in f:
                f_ = dict(x.split("=") for x in line.split())
                t, v = int(f_["threads"]), float(f_["memcpy_GBps"])
                bw[t] = max(bw.get(t, 0.0), v)  # best of the measurements: load only lowers it
    except (OSError, ValueError, KeyError):
        pass
    return bw


def ratio(peer, fold):
    if peer is None or fold is None or fold <= 0:
        return None
    return peer / fold


def main():
    out = sys.argv[1]
    runs = []  # (setting, coll, n, lib, status, detail)
    with open(os.path.join(out, "runs.tsv")) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) == 6:
                runs.append((p[0], p[1], int(p[2]), p[3], p[4], p[5]))
    meta = read_kv(os.path.join(out, "meta.txt"))
    membw = read_membw(os.path.join(out, "membw.txt"))
    cpus = os.cpu_count() or 1
    text, md = [], []
    head = "fold vs Open MPI, MPICH, Gloo — %s, commit %s" % (meta.get("date", "?"), meta.get("commit", "?"))
    text.append(head)
    md.append("Measured %s at commit %s on %s.\n" % (meta.get("date", "?"), meta.get("commit", "?"), meta.get("host", "?")))
    text.append("time: median over iterations of the slowest rank's time, us (float32 sum, root 0).")
    text.append("r(X) = X's time / fold's time (>1: fold faster); X is paired with fold of its transport")
    text.append("class (ompi-shm, mpich: fold-shm; ompi-tcp, gloo: fold-tcp). best MPI = fastest MPI column")
    text.append("over fastest fold column. '-': no number (run failed or size missing; notes below).")
    md.append("Times in us (median of the per-iteration slowest rank). r(X) = X time / fold time, "
              "> 1 means fold is faster; shared-memory peers (ompi-shm, mpich) are divided by fold-shm, "
              "socket peers (ompi-tcp, gloo) by fold-tcp; *best MPI* = fastest MPI / fastest fold.\n")

    panels = []  # (setting, coll, n, libs, sizes, times)
    seen = []
    for r in runs:
        if (r[0], r[1], r[2]) not in seen:
            seen.append((r[0], r[1], r[2]))
    for setting, coll, n in seen:
        these = {r[3]: r for r in runs if (r[0], r[1], r[2]) == (setting, coll, n)}
        libs = [l for l in LIBS if l in these]
        times = {l: read_rows(os.path.join(out, "raw", "%s-%s-n%d-%s.rows" % (setting, coll, n, l))) for l in libs}
        sizes = sorted(set(s for l in libs for s in times[l]))
        folds = [l for l in libs if l.startswith("fold-")]
        peers = [l for l in libs if not l.startswith("fold-")]
        mpis = [l for l in libs if l in MPIS]
        rcols = ["r(%s)" % p for p in peers] + (["best MPI"] if folds and mpis else [])

        def cell(l, s):
            if these[l][4] == "n/a":
                return "n/a"
            t = times[l].get(s)
            return fmt_time(t[0]) if t else "-"

        def ratios(s):
            vals = []
            for p in peers:
                f = PAIR.get(p) if PAIR.get(p) in folds else (folds[0] if folds else None)
                pt, ft = times[p].get(s), times[f].get(s) if f else None
                vals.append(ratio(pt and pt[0], ft and ft[0]))
            if folds and mpis:
                m = [times[l][s][0] for l in mpis if s in times[l]]
                fo = [times[l][s][0] for l in folds if s in times[l]]
                vals.append(ratio(min(m) if m else None, min(fo) if fo else None))
            return ["-" if v is None else "%.2f" % v for v in vals]

        title = "%s: %s, n=%d" % (setting, coll, n)
        if n > cpus:
            title += " (%d ranks on %d cores)" % (n, cpus)
        cols = ["size"] + libs + rcols
        widths = [8] + [max(9, len(l)) for l in libs] + [max(6, len(c)) for c in rcols]
        text.append("")
        text.append("== " + title)
        text.append("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
        md.append("\n#### %s\n" % title)
        md.append("| " + " | ".join(cols) + " |")
        md.append("|" + "|".join("---:" for _ in cols) + "|")
        for s in sizes:
            vals = [label(s)] + [cell(l, s) for l in libs] + ratios(s)
            text.append("  ".join(v.rjust(w) for v, w in zip(vals, widths)))
            md.append("| " + " | ".join(vals) + " |")
        notes = ["%s: %s%s" % (l, these[l][4], ": " + these[l][5] if these[l][5] else "")
                 for l in libs if these[l][4] != "ok"]
        for note in notes:
            text.append("   note: " + note)
        if notes:
            md.append("")
            md.extend("- " + note for note in notes)
        panels.append((setting, coll, n, libs, sizes, times))

    # ---- the bandwidth bound of a shared-memory allreduce -------------------
    bound = []
    for setting, coll, n, libs, sizes, times in panels:
        if setting != "host" or coll != "allreduce" or "fold-shm" not in libs:
            continue
        k = min(n, cpus)
        bw = membw.get(k) or membw.get(max(membw) if membw else 0)
        if not bw:
            continue
        for s in sizes:
            if s < (1 << 20) or s not in times["fold-shm"]:
                continue
            b_us = n * BOUND_TRAFFIC * s / (bw * 1e9) * 1e6
            eff = {l: b_us / times[l][s][0] for l in ("fold-shm", "ompi-shm", "mpich") if l in libs and s in times[l]}
            bound.append((n, k, bw, s, b_us, eff))
    if bound:
        model = ["", "== bandwidth bound, host allreduce (float32 sum), sizes >= 1 MiB",
                 "model: whatever the algorithm, each rank must read its S-byte input from memory and write",
                 "its S-byte output to memory once: %.0f memcpy-equivalent of S per rank reaches DRAM (traffic" % BOUND_TRAFFIC,
                 "through a shared segment that stays in cache is not counted); n ranks share min(n, cores) cores, so",
                 "bound_time = n * %.1f * S / memcpy_bw(min(n, cores) threads); efficiency = bound / time." % BOUND_TRAFFIC,
                 "memcpy bandwidth (membw, this run): " + ", ".join("%d thread%s %.2f GB/s" % (t, "s" if t > 1 else "", v)
                                                                 for t, v in sorted(membw.items()))]
        hdr = "%3s  %8s  %10s  %10s  %8s  %8s  %8s" % ("n", "size", "bound us", "fold-shm", "eff fold", "eff ompi", "eff mpich")
        text.extend(model + [hdr])
        md.append("\n#### Bandwidth bound (host allreduce)\n")
        md.append("memcpy bandwidth: " + ", ".join("%d thread%s %.2f GB/s" % (t, "s" if t > 1 else "", v)
                                                   for t, v in sorted(membw.items())) +
                  ". bound = n x %.1f x S / memcpy_bw(min(n, cores)); efficiency = bound / time.\n" % BOUND_TRAFFIC)
        md.append("| n | size | bound (us) | fold-shm (us) | eff. fold-shm | eff. ompi-shm | eff. mpich |")
        md.append("|---:|---:|---:|---:|---:|---:|---:|")
        for n, k, bw, s, b_us, eff in bound:
            ft = b_us / eff["fold-shm"]
            e = ["%.2f" % eff[l] if l in eff else "-" for l in ("fold-shm", "ompi-shm", "mpich")]
            text.append("%3d  %8s  %10s  %10s  %8s  %8s  %8s" % (n, label(s), fmt_time(b_us), fmt_time(ft), *e))
            md.append("| %d | %s | %s | %s | %s |" % (n, label(s), fmt_time(b_us), fmt_time(ft), " | ".join(e)))

    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write("\n".join(text) + "\n")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(text))
    sys.stdout.flush()
    return plot(out, panels, meta)


def plot(out, panels, meta):
    """One PNG per setting: one log-log panel (time vs size) per collective and n, one line per library."""
    os.makedirs(os.path.join(out, "plot"), exist_ok=True)
    try:
        terms = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        print("compare_table: no gnuplot: no plot", file=sys.stderr)
        return 1
    # pngcairo draws nicer; gnuplot-nox may have only libgd's png
    term = "pngcairo size %d,%d font ',10' noenhanced" if "pngcairo" in terms else "png size %d,%d noenhanced"
    status = 0
    for setting in sorted(set(p[0] for p in panels)):
        mine = [p for p in panels if p[0] == setting and p[4]]
        if not mine:
            continue
        cols = 3 if len(mine) > 2 else len(mine)
        rows = (len(mine) + cols - 1) // cols
        g = ["set terminal " + term % (520 * cols, 420 * rows),
             "set output '%s'" % os.path.join(out, "compare-%s.png" % setting),
             "set datafile missing '-'", "set logscale xy 10", "set grid", "set key top left opaque box",
             "set format x '%.0s%cB'", "set xlabel 'size (bytes)'", "set ylabel 'time (us)'",
             "set multiplot layout %d,%d title 'fold vs peers, %s setting (%s, commit %s)'"
             % (rows, cols, setting, meta.get("date", "?"), meta.get("commit", "?"))]
        for _, coll, n, libs, sizes, times in mine:
            dat = os.path.join(out, "plot", "%s-%s-n%d.dat" % (setting, coll, n))
            with open(dat, "w") as f:
                f.write("# size " + " ".join(libs) + "\n")
                for s in sizes:
                    f.write("%d %s\n" % (s, " ".join("%.3f" % times[l][s][0] if s in times[l] else "-" for l in libs)))
            # only libraries with points: gnuplot stops on an empty series
            series = ["'%s' using 1:%d with linespoints title '%s'" % (dat, i + 2, l)
                      for i, l in enumerate(libs) if times[l]]
            g.append("set title '%s, n=%d'" % (coll, n))
            g.append("plot " + ", ".join(series) if series else "plot 1/0 notitle")
        g.append("unset multiplot")
        r = subprocess.run(["gnuplot"], input="\n".join(g) + "\n", capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            print("compare_table: gnuplot failed for %s: %s" % (setting, r.stderr.strip()[-300:]), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
