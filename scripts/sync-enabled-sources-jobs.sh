#!/usr/bin/env bash
# Give every enabled source its recurring job and cancel the jobs of disabled ones, through
# `POST /api/v1/admin/sync-enabled-sources` of a running `harvestman serve` (the production
# reconciliation after a lost source event; see docs/OPERATIONS.md).
#
#   JWT="admin-token" ./scripts/sync-enabled-sources-jobs.sh            # sync
#   JWT="admin-token" ./scripts/sync-enabled-sources-jobs.sh --dry-run  # only show the plan
#
# JWT: an admin bearer token (`harvestman token create --role admin`). HARVESTMAN_API_URL: the API's
# base URL (default http://127.0.0.1:8060). Prints the API's JSON answer; exits non-zero when
# the API refuses (4xx/5xx, with its error body on stderr) or cannot be reached.
set -euo pipefail

dry_run=false
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=true ;;
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "unknown argument: $1 (only --dry-run)" >&2; exit 2 ;;
esac
if [ -z "${JWT:-}" ]; then
  echo "JWT is not set: export an admin token (harvestman token create --role admin)" >&2
  exit 2
fi
base="${HARVESTMAN_API_URL:-http://127.0.0.1:8060}"
body=$(mktemp)
trap 'rm -f "$body"' EXIT
# The token goes through a header file on stdin, not the command line (ps would show it).
status=$(printf 'Authorization: Bearer %s\n' "$JWT" | curl --silent --show-error \
  --max-time 60 --header @- --request POST --output "$body" --write-out '%{http_code}' \
  "${base%/}/api/v1/admin/sync-enabled-sources?dry_run=${dry_run}") || {
  echo "the API at $base cannot be reached" >&2
  exit 1
}
if [ "$status" -ge 400 ]; then
  echo "the API answered $status:" >&2
  cat "$body" >&2
  echo >&2
  exit 1
fi
cat "$body"
echo
