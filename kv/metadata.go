package kv

import "errors"

// The metadata version: FoundationDB's \xff/metadataVersion key, which a
// layer bumps in every transaction that changes its metadata (fdbqueue's
// catalog), so that clients may cache the metadata and check it against
// the version at no cost (FoundationDB's design/metadata-version.md; the
// Record Layer's MetaDataVersionStampStoreStateCache caches its stores'
// headers this way).
//
// On FoundationDB the key's value comes with the read version: the GRV
// proxy sends it in every read version's reply (GetReadVersionReply's
// metadataVersion), and NativeAPI's Transaction::get answers a read of the
// key from it, so reading it costs no request to a storage server, only
// the wait for the read version, which a transaction's first read pays
// anyway. It is written only by a SET_VERSIONSTAMPED_VALUE of 14 zero
// bytes, which stores the committing transaction's 10-byte versionstamp
// (ReadYourWrites.cpp's atomicOp refuses anything else with
// client_invalid_operation), and needs no system-key option to read or
// write. All of a cluster's tenants share the one key.

// MetadataVersionKey is FoundationDB's metadata version key. It is not a
// key of the kv contract: the engines read and bump it through
// MetadataVersion and BumpMetadataVersion only.
const MetadataVersionKey = "\xff/metadataVersion"

// ErrNoMetadataVersion is returned by MetadataVersion when the
// transaction's engine has no metadata version: the caller reads its
// metadata without a cache.
var ErrNoMetadataVersion = errors.New("fdbqueue: the engine has no metadata version")

// metadataVersioner is implemented by the transactions (and their
// snapshot views) of an engine with a metadata version, as MetadataVersion
// says.
type metadataVersioner interface {
	MetadataVersion() ([]byte, error)
}

// metadataBumper is implemented by the transactions of an engine with a
// metadata version, as BumpMetadataVersion says.
type metadataBumper interface {
	BumpMetadataVersion()
}

// MetadataVersion returns the database's metadata version as of tr's read
// version: nil if no transaction ever bumped it, else the versionstamp of
// the last commit that did (10 bytes). A later bump's version is greater
// in byte order, and no two bumps have the same one: the same value at two
// read versions means that no transaction bumped it in between.
//
// It costs no read: on FoundationDB it comes with the read version, which
// it waits for if no read did yet. Read through tr, it conflicts with a
// transaction that bumps the metadata version and commits after tr's read
// version, as a Get of a key conflicts with its writes; read through
// tr.Snapshot(), it conflicts with nothing.
//
// In a transaction that bumped it, it fails with ErrAccessedUnreadable,
// and the transaction is left as it was (on FoundationDB such a read would
// fail the commit too: kv/fdb refuses it without asking). On an engine
// without a metadata version it fails with ErrNoMetadataVersion.
func MetadataVersion(tr ReadTransaction) ([]byte, error) {
	if m, ok := tr.(metadataVersioner); ok {
		return m.MetadataVersion()
	}
	return nil, ErrNoMetadataVersion
}

// BumpMetadataVersion makes tr's commit change the metadata version to the
// commit's versionstamp, and reports whether the engine has a metadata
// version (if not, it does nothing). It is a write: tr's commit is then
// not read-only, and a transaction that read the metadata version through
// itself (not its snapshot view) and commits later conflicts with it. It
// reads nothing, so it conflicts with no other bump.
func BumpMetadataVersion(tr Transaction) bool {
	b, ok := tr.(metadataBumper)
	if ok {
		b.BumpMetadataVersion()
	}
	return ok
}
