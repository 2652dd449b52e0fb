#!/bin/sh
# The README's two commands: find a Python 3.11 or newer and hand over to scripts/dev.py.
set -eu
for candidate in python3.11 python3 python; do
  if command -v "$candidate" >/dev/null 2>&1 &&
    "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    exec "$candidate" "$(dirname "$0")/dev.py" "$@"
  fi
done
echo "[dynatask] ERROR: Python 3.11 or newer is needed (python3.11 or python3 on PATH)" >&2
exit 1
