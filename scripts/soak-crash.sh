#!/usr/bin/env bash
# Soak the crash tests on file:, for many rounds, with SIGKILL at random
# moments:
# - TestCrashRecovery: a child process pushes and pops through the SQL
#   driver; after each reopen every acknowledged write must be there.
# - TestLeaseCrashRecovery: worker processes lease tasks, work and ack them
#   (also killed mid task); in the end every task is acked exactly once, and
#   the tasks abandoned at a kill were leased again.
# - TestProcessesSurviveKills: four processes share a file: database
#   (pushers, and movers that pop into another table in a transaction);
#   random ones are killed, the serving one included, and replaced; no
#   acknowledged push is lost and none is moved twice.
# - TestSchedulesFireOnceAcrossProcesses: three processes fire a schedule
#   due every second while they are killed in turn (a kill each 0.7 s);
#   no occurrence is inserted twice.
#   scripts/soak-crash.sh [ROUNDS]   (default 500; CI runs 15, 4, 12 and 3)
set -euo pipefail
cd "$(dirname "$0")/.."
FDBQUEUE_CRASH_ROUNDS="${1:-500}" go test -count=1 -timeout 0 -run '^(TestCrashRecovery|TestLeaseCrashRecovery|TestProcessesSurviveKills|TestSchedulesFireOnceAcrossProcesses)$' -v ./driver/ |
	grep -E 'round|tasks, .* kills|kills:|occurrences|PASS|FAIL|ok'
