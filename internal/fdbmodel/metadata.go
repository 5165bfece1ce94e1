package fdbmodel

import "github.com/fdbqueue/fdbqueue/kv"

// The metadata version (kv.MetadataVersion) comes with the read version on
// FoundationDB (kv/fdb's metadata.go): reading it is a wait for the read
// version if no request asked for it yet, and no read. The wrapped engine
// answers, and says whether it has one (kv.ErrNoMetadataVersion if not).

// MetadataVersion waits for the read version, if it is not in yet.
func (t *txn) MetadataVersion() ([]byte, error) { return t.metadataVersion(false) }

// MetadataVersion is kv.MetadataVersion through the snapshot view: the
// same wait.
func (s *snapshot) MetadataVersion() ([]byte, error) { return s.t.metadataVersion(true) }

func (t *txn) metadataVersion(snapshot bool) ([]byte, error) {
	a := t.a
	if a.bumped {
		// kv/fdb refuses it before it asks anything.
		return kv.MetadataVersion(t.view(snapshot))
	}
	a.used = true
	a.askGRV()
	a.await(a.grvReady, waitGRV)
	return kv.MetadataVersion(t.view(snapshot))
}

// BumpMetadataVersion is a write: the commit goes to the cluster.
func (t *txn) BumpMetadataVersion() {
	if kv.BumpMetadataVersion(t.in) {
		t.a.bumped = true
		t.a.write("", "")
	}
}
