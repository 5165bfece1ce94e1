//go:build fdb

package fdbshim

import (
	"bytes"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// readCache is the part of the real client's read-your-writes cache that
// point reads see: a key the transaction has read, set or cleared is
// answered locally, without asking the cluster, so a repeated read of a key
// succeeds even after the 5-second limit (only the commit then fails with
// transaction_too_old). Range reads are not cached (the real client caches
// them too), and after maxClears clear ranges the cache gives up for the
// rest of the attempt: both only send more reads to the engine, which is
// always right, but may fail with transaction_too_old where the real client
// would answer from its cache.
type readCache struct {
	keys     map[string]*cached // nil value: unknown (an atomic operation pending)
	clears   []kv.Range         // cleared by the transaction: absent unless in keys
	disabled bool
}

type cached struct {
	val        []byte
	present    bool
	fromDB     bool // read from the database, not written by the transaction
	conflicted bool // a serializable read recorded its read conflict
}

const maxClears = 64

func (c *readCache) init() { c.keys = map[string]*cached{} }

// get reads key through the cache, and returns the read conflict ranges a
// cached answer still owes the commit.
func (c *readCache) get(tx kv.Transaction, key []byte, snapshot bool) (v []byte, present bool, conflicts []kv.Range, err error) {
	if !c.disabled {
		e, known := c.keys[string(key)]
		if known && e != nil {
			if !snapshot && e.fromDB && !e.conflicted {
				// A serializable read of a value first read by a
				// snapshot read still conflicts.
				conflicts = append(conflicts, kv.Range{Begin: bytes.Clone(key), End: kv.KeyAfter(key)})
				e.conflicted = true
			}
			return e.val, e.present, conflicts, nil
		}
		if !known && c.inClears(key) {
			return nil, false, nil, nil
		}
	}
	v, err = view(tx, snapshot).Get(key)
	if err != nil {
		return nil, false, nil, err
	}
	if !c.disabled {
		c.keys[string(key)] = &cached{val: v, present: v != nil, fromDB: true, conflicted: !snapshot}
	}
	return v, v != nil, nil, nil
}

func (c *readCache) inClears(key []byte) bool {
	for _, r := range c.clears {
		if r.Contains(key) {
			return true
		}
	}
	return false
}

// wrote records a set (present) or a clear of key.
func (c *readCache) wrote(key, value []byte, present bool) {
	if c.disabled {
		return
	}
	var v []byte
	if present {
		v = append([]byte{}, value...)
	}
	c.keys[string(key)] = &cached{val: v, present: present}
}

// cleared records a clear range: what the transaction wrote in it before is
// gone, and keys in it are absent until written again.
func (c *readCache) cleared(begin, end []byte) {
	if c.disabled {
		return
	}
	if len(c.clears) == maxClears {
		c.disabled = true
		c.keys, c.clears = nil, nil
		return
	}
	for k := range c.keys {
		if bytes.Compare([]byte(k), begin) >= 0 && bytes.Compare([]byte(k), end) < 0 {
			delete(c.keys, k)
		}
	}
	c.clears = append(c.clears, kv.Range{Begin: slices.Clone(begin), End: slices.Clone(end)})
}

// unknown records an atomic operation on key: its value is the engine's to
// compute.
func (c *readCache) unknown(key []byte) {
	if !c.disabled {
		c.keys[string(key)] = nil
	}
}
