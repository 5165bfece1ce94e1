//go:build fdb

// The metadata version, \xff/metadataVersion, as the real client handles
// it (ReadYourWrites.cpp, NativeAPI.actor.cpp): the one system key a
// transaction reads, bumps and adds a read conflict range on without a
// system-key option. Its value is the embedded engine's metadata version
// (kv.MetadataVersion), which comes with the read version there as on a
// cluster.

package fdbshim

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/kv"
)

var (
	metadataVersionKey = []byte(kv.MetadataVersionKey)
	// metadataVersionParam is metadataVersionRequiredValue
	// (SystemData.cpp): the only operand a bump may have.
	metadataVersionParam = make([]byte, 14)
)

func isMetadataVersionKey(key []byte) bool { return bytes.Equal(key, metadataVersionKey) }

// bumpMetadataVersion is fdb_transaction_atomic_op on the key: RYW's
// atomicOp accepts a SET_VERSIONSTAMPED_VALUE of
// metadataVersionRequiredValue, and refuses anything else with
// client_invalid_operation. The value becomes unreadable until the commit.
func (t *txn) bumpMetadataVersion(param []byte, op int) {
	code := 0
	if op != mutVersionstampVal || !bytes.Equal(param, metadataVersionParam) {
		code = errClientInvalidOperation
	}
	t.mutate(code, int64(len(metadataVersionKey)+len(param)), func(a *attempt) {
		if tx, c := a.tx(); c == 0 {
			kv.BumpMetadataVersion(tx)
			a.bumped = true
		}
	})
}

// getMetadataVersion answers a get of the key: no read of a storage
// server, the value at the read version, a read conflict unless snapshot.
// After a bump the write map holds the key unreadable: the read fails with
// accessed_unreadable (RYWIterator's type()), and, as every read RYW's
// commit waits for, fails the commit with it.
func (a *attempt) getMetadataVersion(f *future, snapshot bool) {
	a.clock.readVersion(f, f.issued)
	if a.bumped {
		if a.readErr == 0 {
			a.readErr = errAccessedUnreadable
		}
		a.finish(f, func() { f.fail(errAccessedUnreadable) })
		return
	}
	tx, code := a.tx()
	if code != 0 {
		a.finish(f, func() { f.fail(code) })
		return
	}
	v, err := kv.MetadataVersion(view(tx, snapshot))
	if err != nil {
		a.finish(f, func() { f.fail(codeOf(err)) })
		return
	}
	a.finish(f, func() { f.bytes(v, v != nil) })
}
