#!/usr/bin/env bash
# Soak the crash tests on file:, for many rounds, with SIGKILL at random
# moments:
# - TestCrashRecovery: a child process pushes and pops through the SQL
#   driver; after each reopen every acknowledged write must be there.
# - TestLeaseCrashRecovery: worker processes lease tasks, work and ack them
#   (also killed mid task); in the end every task is acked exactly once, and
#   the tasks abandoned at a kill were leased again.
#   scripts/soak-crash.sh [ROUNDS]   (default 500; CI runs 15 and 4)
set -euo pipefail
cd "$(dirname "$0")/.."
FDBQUEUE_CRASH_ROUNDS="${1:-500}" go test -count=1 -timeout 0 -run '^(TestCrashRecovery|TestLeaseCrashRecovery)$' -v ./driver/ |
	grep -E 'round|tasks, .* kills|PASS|FAIL|ok'
