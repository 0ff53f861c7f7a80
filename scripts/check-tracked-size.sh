#!/usr/bin/env bash
# Fails when a tracked file is over 1 MiB (issue 23.6): build outputs and
# binaries are ignored, never committed; data a test needs is made by it.
# Run by make test and make vet (their vet phase).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
big=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue # deleted in the work tree, not yet committed
  size=$(stat -c %s "$f" 2>/dev/null || stat -f %z "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over 1 MiB: $f ($size bytes)" >&2
    big=1
  fi
done < <(git ls-files -z)
exit "$big"
