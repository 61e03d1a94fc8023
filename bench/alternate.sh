#!/bin/bash
# Run one `oasis` command alternately in two checkouts, N rounds, so that both see the same machine load
# (absolute rates drift on a shared machine; compare the two columns of one run of this script).
# usage: bench/alternate.sh N BEFORE AFTER OASIS-ARGS...   e.g.
#   bench/alternate.sh 3 /tmp/before . bench crawl --pages 400 --repeats 2
# Each checkout needs its .venv (./dev setup); -P keeps checkouts of the old layout working too.
set -euo pipefail
n=$1; before=$2; after=$3; shift 3
for i in $(seq 1 "$n"); do
  for side in before after; do
    dir=$before; [ "$side" = after ] && dir=$after
    echo "== round $i: $side ($dir)"
    (cd "$dir" && .venv/bin/python -P -m oasis.cli "$@")
  done
done
