package parser

// The parse cache: statements parsed once, by their text.

import (
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
)

// CacheSize is how many parsed statements the cache keeps.
const CacheSize = 4096

// MaxCachedLen is the longest statement text the cache keeps. Longer
// statements (multi-row INSERTs with literal values, say, each one new)
// are parsed every time: caching them would fill memory for no hits, and
// their parse is small next to their execution. Prepare such a statement
// to parse it once.
const MaxCachedLen = 2048

var cache, _ = lru.New[string, *Parsed](CacheSize)

// parsed counts the statements Parse parsed: cache misses, and statements
// too long to cache. Only a miss pays for the count, and it is the
// cache's measure (BenchmarkParse reports it).
var parsed atomic.Int64

// Parse parses one statement, through a bounded cache keyed by the text: a
// statement seen before is not parsed again. The result is shared and must
// not be modified.
func Parse(sql string) (*Parsed, error) {
	if len(sql) > MaxCachedLen {
		parsed.Add(1)
		return parse(sql)
	}
	if p, ok := cache.Get(sql); ok {
		return p, nil
	}
	parsed.Add(1)
	p, err := parse(sql)
	if err != nil {
		return nil, err
	}
	cache.Add(sql, p)
	return p, nil
}
