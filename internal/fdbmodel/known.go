package fdbmodel

import "sort"

// known is what a FoundationDB client's read-your-writes cache knows about
// the database within one transaction attempt: the key spans it has read
// (its snapshot cache) and those the attempt wrote or cleared (its write
// map). A read inside them is answered in the client, with no request:
// ReadYourWrites.actor.cpp returns at once from a point read of a key that
// is_kv() or is_empty_range(), and a range read asks the cluster only for
// the segments it does not know.
//
// The spans are half-open [b, e), kept sorted, disjoint, and merged when
// they touch, so that a known stretch of keys is always one span.
type known struct {
	spans []span
}

// span is the key span [b, e). Strings: they are compared often and never
// change.
type span struct{ b, e string }

// at returns the index of the last span starting at or before key, or -1.
func (k *known) at(key string) int {
	return sort.Search(len(k.spans), func(i int) bool { return k.spans[i].b > key }) - 1
}

// has reports whether key is known.
func (k *known) has(key string) bool {
	i := k.at(key)
	return i >= 0 && key < k.spans[i].e
}

// covers reports whether every key of [b, e) is known; an empty span is.
func (k *known) covers(b, e string) bool {
	if b >= e {
		return true
	}
	i := k.at(b)
	return i >= 0 && e <= k.spans[i].e
}

// keyAfter is the first key after key.
func keyAfter(key string) string { return key + "\x00" }

// add makes [b, e) known.
func (k *known) add(b, e string) {
	if b >= e {
		return
	}
	// The spans that touch [b, e) are spans[lo:hi]: merged into one.
	lo := sort.Search(len(k.spans), func(i int) bool { return k.spans[i].e >= b })
	hi := lo
	for hi < len(k.spans) && k.spans[hi].b <= e {
		b, e = min(b, k.spans[hi].b), max(e, k.spans[hi].e)
		hi++
	}
	if lo == hi {
		k.spans = append(k.spans, span{})
		copy(k.spans[lo+1:], k.spans[lo:])
	} else {
		k.spans = append(k.spans[:lo+1], k.spans[hi:]...)
	}
	k.spans[lo] = span{b, e}
}

// Known is what a transaction attempt's read-your-writes cache knows, for
// the test double of libfdb_c (internal/fdbshim), which counts its waits by
// this package's rules: a read of keys it knows asks the cluster nothing.
type Known struct{ k known }

// Covers reports whether every key of [b, e) is known.
func (k *Known) Covers(b, e []byte) bool { return k.k.covers(string(b), string(e)) }

// Add makes [b, e) known.
func (k *Known) Add(b, e []byte) { k.k.add(string(b), string(e)) }
