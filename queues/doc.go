// Package queues implements FoundationDB's queue recipes over a kv
// transaction: a FIFO queue, a priority queue (pop and peek of the minimum
// and the maximum), and a task queue whose pop returns the best task that
// fits a consumer's resources. Every function takes the transaction as a
// parameter, so queue operations compose inside a caller's transaction, and
// every function follows kv's retry contract (no effects outside the
// transaction).
//
// This package is an internal building block of fdbqueue (for package
// exec), exported rather than kept under internal/. It is not supported
// API for Go programs: it has no compatibility promise yet and may change
// in any release. Programs use package driver through database/sql.
//
// # Key layout
//
// A queue lives under a key prefix (a packed tuple), and every key it writes
// is that prefix followed by a packed tuple, so FoundationDB's tuple layer in
// any language can read them. The keys, their values and the invariants the
// code relies on are in one table, in layout.go.
//
// # Order
//
// Min order serves the lowest priority first, Max order the highest. Within
// one priority both serve the oldest first (lowest seq), unlike the recipe's
// pop_max, which takes the newest. Pushes that run concurrently are ordered
// by the seq their snapshot read gave them, then by id.
//
// # The fit index
//
// PopFit(limits) returns the first task in queue order whose every resource
// is at most its limit. It runs in two steps:
//
//  1. It reads the first items in queue order, up to scanBudget (see
//     fit.go) that do not fit, or sedimentBudget when the last pop with
//     the same limits found nothing there, or none when pops with the
//     same limits keep finding nothing there (fitHints). If one fits, it
//     is the answer: when many tasks fit, this is all it takes.
//  2. Otherwise it consults the index. Each task is filed under its cell,
//     the vector of its resources quantised (see cellGrid: exact below 32,
//     or 16 in queues written before 2026-11-27, see WithExactCells; then
//     8 cells per power of two, so a cell spans at most 1/8 of its
//     values), and, when its cell spans more than one vector, under its
//     exact resource vector (shape). Directories list the cells and shapes
//     in use. A skip-scan of the cell directory visits
//     only cells whose lower corner fits; a cell entirely inside the limits
//     contributes its head (its best task in queue order: one read, two in
//     Max order). A cell that straddles a limit is read in queue order, up
//     to straddleBudget entries and only while it can still beat the best
//     head found; past that budget it is resolved through the shape
//     directory, inside the cell, where every fitting shape contributes its
//     head. A straddling cell whose only fitting shape is its lower corner
//     (limits at the cell's lower bound, as round values are) contributes
//     that shape's head at once. The best head wins.
//
// PopFitN pops the first n fitting tasks in one pass, with the same answer
// and the same conflicts as n calls to PopFit: step 1 once, then step 2 as
// a merge, a cursor per fitting cell (or shape) and a heap of their heads
// (see fitmany.go). n calls to PopFit would each search from the head
// again, past the tasks the earlier ones removed.
//
// The cost of step 2 depends on the number of distinct cells (and, at the
// limits' boundary, shapes) that may fit, never on the number of tasks: when
// the only fitting task is the last of millions, a pop is a few dozen small
// range reads. The answer is exact: never a lower-priority task while a
// higher-priority one fits, never a newer one while an older one of the same
// priority fits.
//
// Step 2 issues its reads in rounds, each of reads in flight together
// (kv.GetAsync, kv.GetRangeAsync), so that on FoundationDB it waits a few
// round trips, not one per cell: the cell directory, then every head at
// once, then the task (fitindex.go); a merge opens all its cursors at once
// and reads ahead the batches it may run out of (fitmany.go). Its choices
// and read conflicts are those of reading one cell after another: what a
// round reads ahead of the reads that use it goes through the snapshot, and
// the pick adds what those reads would have covered (known.go).
//
// # Leases and delayed items
//
// Lease takes the items a pop would take but leaves them in the queue,
// invisible until the lease ends, with a token that Ack, Extend and
// Release check; an item pushed with a VisibleAt in the future is
// invisible until then. Invisible items leave the visible indexes and are
// filed by due time, so pops never read them; every pop and lease first
// moves the items due by now back to their original place (lease.go). The
// clock is Options.Clock, the client's wall clock.
//
// # Concurrency
//
// Pops read what they remove serializably, so two concurrent pops never
// return the same item: one of them fails with a conflict and retries.
// Pops in an Attempt of a Claims registry (claims.go) avoid most of those
// conflicts within one process: they pass over the items other pops in
// flight took, as SKIP LOCKED does, and do not conflict over the items
// they read and did not take. Pops
// read the directories and heads serializably too, so a pop that commits
// after a better task was pushed conflicts and retries instead of returning
// the worse one. Pushes read only the id keys serializably, and depend
// on the directory keys they find through the keys' guards (a read
// conflict on a key that only the pops clearing the directory key write:
// see readDir; on the key itself in a queue of legacy cells, which
// earlier versions may pop), and write a directory key only when it is
// absent, without a read conflict: the write puts it there whatever
// happened to it meanwhile, and a pop clears it only with the cell read
// empty, which the push's entry conflicts with. Pushes that create the
// same cell at once do not conflict, nor do a push that found the key and
// one that wrote it again, as it began before the key was made.
package queues
