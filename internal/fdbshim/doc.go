//go:build fdb

// Package fdbshim is a test double of FoundationDB's client library: the C
// API that the official Go bindings call (libfdb_c, API version 730),
// implemented over the embedded engine (kv/embedded), so that the
// FoundationDB engine (kv/fdb) runs end to end through the bindings and cgo
// inside a test binary, on machines where FoundationDB cannot be installed.
//
// It is NOT a FoundationDB cluster, and not a substitute for the real-cluster
// CI job (.github/workflows/fdb.yml): it reproduces the client library's
// contract (futures and callbacks, error codes and texts, on_error's retry
// rules and backoff, transaction timeouts, retry limits, cancellation,
// used_during_commit, deferred errors, range-read batching and its conflict
// ranges, the read-your-writes cache of point reads, watches, the metadata
// version key) over a store with FoundationDB's transaction semantics.
// docs/foundationdb.md lists where it knowingly differs from a real
// cluster.
//
// # How it is wired
//
// One Go runtime per process rules out a Go c-shared library. Instead,
// libfdb_c/fdb_c.c is a small C library, built by build.sh into a
// directory of the caller's choosing, named libfdb_c.so so that the
// bindings' -lfdb_c finds it. Its fdb_* functions forward through a table of
// function pointers that this package (cgo) registers at init: futures are
// plain C (futures.c), everything else is exported Go. With the real client
// library the registration finds nothing (dlsym), and this package stays
// idle: Available reports false.
//
//	dir=$(mktemp -d) && internal/fdbshim/build.sh "$dir"
//	CGO_CFLAGS="-I$PWD/kv/fdb/testdata/include" CGO_LDFLAGS="-L$dir -Wl,-rpath,$dir" \
//		go test -tags fdb ./kv/fdb/ ./conformance/ ./driver/
//
// Tests get a cluster with NewCluster, whose ClusterFile goes wherever a
// FoundationDB cluster file goes (fdb.Config.ClusterFile, an fdb: DSN). Its
// Config injects the embedded engine's faults into every commit. The test
// double runs on little-endian 64-bit Linux.
//
// Only tests import this package (it is behind the fdb build tag, and refuses
// to load outside a test binary).
package fdbshim
