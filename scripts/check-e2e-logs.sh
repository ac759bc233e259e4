#!/usr/bin/env bash
# Fails when any Worker log of the last end-to-end run (target/e2e-logs/, kept
# by tests/harness/worker.rs) holds a secret the harness configured: no secret
# may leave in a log line. `make test` runs it after the end-to-end tests.
set -euo pipefail

dir=${1:-target/e2e-logs}
secrets="$dir/configured-secrets.txt"
if [[ ! -s "$secrets" ]]; then
    echo "check-e2e-logs: no configured secrets listed in $dir (run the end-to-end tests first)" >&2
    exit 1
fi
shopt -s nullglob
logs=("$dir"/*.log)
if (( ${#logs[@]} == 0 )); then
    echo "check-e2e-logs: no Worker logs in $dir" >&2
    exit 1
fi
# An empty pattern would match every line: only non-empty secrets are looked for.
if grep --fixed-strings --line-number --file=<(grep -v '^$' "$secrets" | sort -u) -- "${logs[@]}"; then
    echo "check-e2e-logs: the lines above carry a configured secret" >&2
    exit 1
fi
echo "check-e2e-logs: ${#logs[@]} Worker logs, $(grep -v '^$' "$secrets" | sort -u | wc -l) secrets, no leak"
