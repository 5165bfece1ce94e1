#!/usr/bin/env bash
# Soak the crash test: a child process pushes and pops through the SQL
# driver on file: and is killed with SIGKILL at random moments, for many
# rounds; after each reopen every acknowledged write must be there.
#   scripts/soak-crash.sh [ROUNDS]   (default 500; CI runs 15)
set -euo pipefail
cd "$(dirname "$0")/.."
FDBQUEUE_CRASH_ROUNDS="${1:-500}" go test -count=1 -timeout 0 -run '^TestCrashRecovery$' -v ./driver/ | grep -E 'round|PASS|FAIL|ok'
