#!/bin/sh
# table.sh — skip_bench.sh's CSV as a markdown table: medians in ms, ring_skip's saving over ring and the share of the straggler's cost it recovers.
# usage: table.sh FILE.csv...   (recovered = (ring,slow - skip,slow) / (ring,slow - ring,no delay), the measure)
cat "$@" | awk -F, '
  $1 == "transport" || NF < 6 { next }
  { k = $1 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; order[++m] = k; tp[k] = $1; sz[k] = $3; d[k] = $4 }
    t[k, $5] = $6 / 1000; if ($4 == 0 && $5 == "ring") base[$1 " " $3] = $6 / 1000 }
  END {
    print "| transport | size | delay (ms) | ring | ring_skip | default | saving | recovered |"
    print "|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= m; i++) {
      k = order[i]; r = t[k, "ring"]; s = t[k, "ring_skip"]; b = base[tp[k] " " sz[k]]
      rec = (d[k] > 0 && r > b) ? sprintf("%.0f%%", 100 * (r - s) / (r - b)) : "-"
      printf "| %s | %s | %s | %.2f | %.2f | %s | %+.0f%% | %s |\n", tp[k], sz[k], d[k], r, s,
             ((k, "default") in t) ? sprintf("%.2f", t[k, "default"]) : "-", 100 * (r - s) / r, rec
    }
  }'
