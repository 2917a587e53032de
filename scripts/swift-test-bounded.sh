#!/usr/bin/env bash
# Runs `swift test ARGS...` with a bound on its whole run, so a test that hangs fails the run
# (naming the tests still running) instead of holding CI until CI's own limit.
#   TEST_TIME_LIMIT=SECONDS scripts/swift-test-bounded.sh [swift test arguments...]
# Default bound 1500 s (the suite takes ~3 min on 2 cores). Swift Testing's time limits do not
# end a test stuck in a wait that ignores cancellation, and `timeout swift test` would end
# swift-test but leave its test process running: this ends everything the run started.
set -uo pipefail
cd "$(dirname "$0")/.."

limit="${TEST_TIME_LIMIT:-1500}"
[[ "$limit" =~ ^[0-9]+$ ]] && [ "$limit" -ge 1 ] && [ "$limit" -le 86400 ] || {
    echo "swift-test-bounded: TEST_TIME_LIMIT must be a whole number from 1 to 86400, got '$limit'" >&2
    exit 2
}
SWIFT="${SWIFT:-swift}"
log="$(mktemp /tmp/swift-test-XXXXXX.log)"
trap 'rm -f "$log"' EXIT

# setsid: swift-test, its test process and what the tests start share a session of their own,
# to end together; stdbuf: lines reach the log as they are written, so the report is current.
setsid stdbuf -oL -eL "$SWIFT" test "$@" > >(tee "$log") 2>&1 &
runner=$!
deadline=$((SECONDS + limit))
while kill -0 "$runner" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 1; done
if kill -0 "$runner" 2>/dev/null; then
    echo "swift-test-bounded: no result after ${limit} s; tests started and not finished:" >&2
    started="$(sed -n -E 's/.*(◇) Test ([^ ]+\(.*\)) started\.$/\2/p' "$log" | sort -u)"
    ended="$(sed -n -E 's/.*(✔|✘).* Test ([^ ]+) .*(passed|failed) after.*/\2/p' "$log" | sort -u)"
    comm -23 <(echo "$started") <(echo "$ended") | head -50 | sed 's/^/  /' >&2
    pkill -TERM -s "$runner"
    sleep 10
    pkill -KILL -s "$runner"
    wait "$runner" 2>/dev/null
    exit 124
fi
wait "$runner"
