//go:build fdb

package fdb

import (
	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The metadata version (kv.MetadataVersion): FoundationDB's
// \xff/metadataVersion, outside the root prefix (one key for the cluster,
// which every tenant shares: NativeAPI reads it without the tenant, and
// applyTenantPrefix leaves its mutations and conflict ranges unprefixed).
// Neither its read nor its bump needs a system-key option: ReadYourWrites'
// get, atomicOp and addReadConflictRange let this key through.

var (
	metadataVersionKey = fdb.Key(kv.MetadataVersionKey)
	// metadataVersionParam is the one value a bump may write
	// (metadataVersionRequiredValue, SystemData.cpp): a 10-byte
	// versionstamp to fill in, at offset 0 (4 bytes, little-endian).
	metadataVersionParam = make([]byte, 14)
)

// MetadataVersion is kv.MetadataVersion: a Get of the key, which the
// client answers from the read version's reply (Transaction::get of
// metadataVersionKey, NativeAPI.actor.cpp), with no request to a storage
// server. In an attempt that bumped it, it is refused here: the client
// would fail the read with accessed_unreadable, and then the commit with
// it too (ReadYourWrites' commit waits for every read, failed ones
// included).
func (t *txn) MetadataVersion() ([]byte, error) { return t.metadataVersion(false) }

// MetadataVersion is kv.MetadataVersion through the snapshot view.
func (s *snapshot) MetadataVersion() ([]byte, error) { return s.t.metadataVersion(true) }

func (t *txn) metadataVersion(snapshot bool) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.bumped {
		return nil, kv.Errorf(kv.CodeAccessedUnreadable, "the transaction bumped the metadata version, which is its commit's versionstamp")
	}
	var f fdb.FutureByteSlice
	if snapshot {
		f = t.tr.Snapshot().Get(metadataVersionKey)
	} else {
		f = t.tr.Get(metadataVersionKey)
	}
	v, err := f.Get()
	if err != nil {
		return nil, t.mapErr(err)
	}
	return v, nil
}

// BumpMetadataVersion is kv.BumpMetadataVersion: the versionstamped write
// FoundationDB allows on the key.
func (t *txn) BumpMetadataVersion() {
	if t.writable() {
		t.bumped = true
		t.tr.SetVersionstampedValue(metadataVersionKey, metadataVersionParam)
	}
}
