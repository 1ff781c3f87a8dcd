#!/usr/bin/env bash
# copy_tree.sh — copy fold's tree as it is now (tracked files and new ones git does not ignore; without git:
# everything but build*/) to DEST, so that a test builds what a clone would hold, outside the source tree.
# Usage: copy_tree.sh SRC DEST
set -euo pipefail
src=$1
mkdir -p "$2"
dest=$(realpath "$2")
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
    xargs -0 cp --parents -t "$dest")
else
  tar -C "$src" --exclude='./build*' -cf - . | tar -C "$dest" -xf -
fi
