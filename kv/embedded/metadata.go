// The metadata version (kv.MetadataVersion), as FoundationDB keeps it: the
// versionstamp of the last commit that bumped it, handed to a transaction
// with its read version.

package embedded

import (
	"encoding/binary"

	"github.com/fdbqueue/fdbqueue/kv"
)

// mdvKey is the metadata version's key in conflict checks: the one
// FoundationDB gives it. No user key is in the system key space, so only
// bumps write it and only reads of the metadata version read it.
var mdvKey = []byte(kv.MetadataVersionKey)

// stamp is the metadata version of a bump at version v: a versionstamp,
// FoundationDB's 10 bytes (the commit version, big-endian, then the
// commit's 2-byte order in its batch, 0 here: every commit has a version of
// its own), so that later bumps are greater in byte order. v 0 (never
// bumped) is nil.
func stamp(v uint64) []byte {
	if v == 0 {
		return nil
	}
	b := make([]byte, 10)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// MetadataVersion is kv.MetadataVersion: the version came with the read
// version (acquireReadVersion), so reading it costs nothing, not even an
// allocation (the caller must not modify what a read returns).
func (t *txn) MetadataVersion() ([]byte, error) { return t.metadataVersion(false) }

// MetadataVersion is kv.MetadataVersion through the snapshot view: no read
// conflict.
func (s *snapshot) MetadataVersion() ([]byte, error) { return s.t.metadataVersion(true) }

func (t *txn) metadataVersion(snapshot bool) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.bumped {
		return nil, kv.Errorf(kv.CodeAccessedUnreadable, "the transaction bumped the metadata version, which is its commit's versionstamp")
	}
	if !snapshot {
		t.addRead(span{begin: mdvKey})
	}
	return t.mdv, nil
}

// BumpMetadataVersion is kv.BumpMetadataVersion: a write of mdvKey, which
// the commit publishes with its version (publishLocked).
func (t *txn) BumpMetadataVersion() {
	if t.state != kv.TxnActive || t.bumped {
		return
	}
	t.bumped = true
	s := span{begin: mdvKey}
	t.wconf = append(t.wconf, s)
	t.size += s.size()
}
