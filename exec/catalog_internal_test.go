package exec

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// TestCatalogCacheHitConflictsAsTheRead: a schema found in the cache
// conflicts as the read of its catalog key would have: with a DROP or
// CREATE of its table committed after the transaction's read version, and
// with nothing else, not even a DDL of another table (which bumps the same
// metadata version). Statements today read their table's keys too, which a
// DROP clears, so they would conflict anyway (see exec_test's
// TestCatalogCacheDDLBeforeCommit); a statement that reads none of them
// (a blind push) has only this conflict.
func TestCatalogCacheHitConflictsAsTheRead(t *testing.T) {
	t.Parallel()
	for name, db := range map[string]kv.Database{
		"memory":   embedded.Open("", embedded.Config{}),
		"fdbmodel": fdbmodel.Wrap(embedded.Open("", embedded.Config{}), fdbmodel.Config{}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer db.Close()
			ctx := context.Background()
			root := []byte("c")
			mine, other := New(db, root), New(db, root)
			ddl := func(sql string) {
				t.Helper()
				p, err := parser.Parse(sql)
				require.NoError(t, err)
				_, err = other.Auto(ctx, p, Args{})
				require.NoError(t, err, sql)
			}
			// lookup looks q up in a new transaction, and reports whether
			// the cache answered.
			lookup := func() (kv.Transaction, bool) {
				t.Helper()
				tr, err := db.CreateTransaction(ctx)
				require.NoError(t, err)
				t.Cleanup(tr.Cancel)
				mdv, err := kv.MetadataVersion(tr.Snapshot())
				require.NoError(t, err)
				_, hit := mine.cat.cached("q", mdv)
				_, err = mine.cat.table(tr, "q")
				require.NoError(t, err)
				return tr, hit
			}
			write := func(tr kv.Transaction) error {
				tr.Set(rootKey(root, "elsewhere"), nil)
				return tr.Commit()
			}

			ddl("CREATE TABLE q (a INT)")
			tr, hit := lookup()
			require.False(t, hit, "first read")
			require.NoError(t, write(tr))

			tr, hit = lookup()
			require.True(t, hit)
			ddl("DROP TABLE q")
			require.ErrorIs(t, write(tr), kv.ErrNotCommitted, "a DROP after the read version")
			ddl("CREATE TABLE q (b TEXT)")

			tr, hit = lookup()
			require.False(t, hit, "the metadata version changed")
			require.NoError(t, write(tr))
			tr, hit = lookup()
			require.True(t, hit)
			ddl("DROP TABLE q")
			ddl("CREATE TABLE q (c INT)")
			require.ErrorIs(t, write(tr), kv.ErrNotCommitted, "a DROP and CREATE after the read version")

			_, _ = lookup() // caches the new q
			tr, hit = lookup()
			require.True(t, hit)
			ddl("CREATE TABLE r (a INT)")
			ddl("DROP TABLE r")
			require.NoError(t, write(tr), "DDL of another table changes the metadata version, not q's key")
		})
	}
}
