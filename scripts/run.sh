#!/usr/bin/env bash
# `make run`: crawl $URL, or the bundled demo site served on 127.0.0.1 for the occasion.
set -euo pipefail
BIN=${BIN:-.venv/bin}
if [ -n "${URL:-}" ]; then
  exec "$BIN/harvestman" crawl "$URL" --output pages.jsonl
fi
# 8089, or a free port when something else holds it (PORT=N to choose).
port=${PORT:-$("$BIN/python" -c "
import socket
s = socket.socket()
try:
    s.bind(('127.0.0.1', 8089))
except OSError:
    s.bind(('127.0.0.1', 0))
print(s.getsockname()[1])")}
# Wait for the site to say it is listening: whatever else holds the port is never crawled.
said=$(mktemp)
"$BIN/python" -u tests/testsite.py --port "$port" --slow-seconds 2 > "$said" &
site=$!
trap 'kill $site 2>/dev/null || true; rm -f "$said"' EXIT
for _ in $(seq 100); do
  grep -q "test site on" "$said" && break
  if ! kill -0 "$site" 2>/dev/null; then
    echo "the demo site could not start on 127.0.0.1:$port (is the port taken? PORT=N make run)" >&2
    exit 1
  fi
  sleep 0.1
done
if ! grep -q "test site on" "$said"; then
  echo "the demo site did not start on 127.0.0.1:$port within 10 s" >&2
  exit 1
fi
echo "crawling the demo site at http://127.0.0.1:$port/ (pass URL=... to crawl elsewhere)"
HARVESTMAN_FETCH_MAX_PAGE_SIZE=1048576 "$BIN/harvestman" crawl "http://127.0.0.1:$port/" \
  --output pages.jsonl --delay 0.05 --timeout 1
echo
"$BIN/harvestman" stats
echo "pages written to pages.jsonl; try: $BIN/harvestman export --format csv"
