#!/usr/bin/env bash
# `make run`: crawl $URL, or the bundled demo site served on 127.0.0.1 for the occasion.
set -euo pipefail
BIN=${BIN:-.venv/bin}
if [ -n "${URL:-}" ]; then
  exec "$BIN/harvestman" crawl "$URL" --output pages.jsonl
fi
port=${PORT:-8089}
"$BIN/python" tests/testsite.py --port "$port" --slow-seconds 2 &
site=$!
trap 'kill $site 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  "$BIN/python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
  sleep 0.1
done
echo "crawling the demo site at http://127.0.0.1:$port/ (pass URL=... to crawl elsewhere)"
HARVESTMAN_FETCH_MAX_PAGE_SIZE=1048576 "$BIN/harvestman" crawl "http://127.0.0.1:$port/" \
  --output pages.jsonl --delay 0.05 --timeout 1
echo
"$BIN/harvestman" stats
echo "pages written to pages.jsonl; try: $BIN/harvestman export --format csv"
