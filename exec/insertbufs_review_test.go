package exec_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// TestInsertBuffersReusedConcurrently: INSERTs reuse their items,
// resources, packed rows and row scratch (insertBufs), from one statement
// to the next and between goroutines. Concurrent INSERTs of 1 to 30 rows,
// with values of many sizes, resources and a unique key, autocommit (so
// combined in groups) and several in one explicit transaction, each
// store exactly their rows, and report their own count and last id.
func TestInsertBuffersReusedConcurrently(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	e := exec.New(db, []byte("r"))
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, note TEXT NOT NULL, ref TEXT UNIQUE, INDEX fit (cpu, mem))")
	type row struct {
		prio, cpu, mem int64
		note           string
	}
	const writers, each = 6, 24
	var mu sync.Mutex
	want := map[string]row{}      // by ref
	lastRef := map[int64]string{} // a statement's last id: its last row's ref
	insert := func(w, i int) (*parser.Parsed, []any, []string) {
		k := 1 + (i*7+w)%30
		var sb strings.Builder
		sb.WriteString("INSERT INTO t (priority, cpu, mem, note, ref) VALUES ")
		var args []any
		var refs []string
		for r := range k {
			if r > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?, ?)")
			ref := fmt.Sprintf("%d.%d.%d", w, i, r)
			x := row{prio: int64((i + r) % 5), cpu: int64(w*1000 + r), mem: int64(i*100 + r),
				note: ref + strings.Repeat(string(rune('a'+(w+i+r)%26)), (w*31+i*17+r*97)%2500)}
			args = append(args, x.prio, x.cpu, x.mem, x.note, ref)
			refs = append(refs, ref)
			mu.Lock()
			want[ref] = x
			mu.Unlock()
		}
		p, err := parser.Parse(sb.String())
		require.NoError(t, err)
		return p, args, refs
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if i%4 == 3 {
					// Three INSERTs in one transaction.
					err := kv.Transact(context.Background(), db, func(tr kv.Transaction) error {
						for j := range 3 {
							p, args, refs := insert(w, i+j)
							res, err := e.Exec(tr, p, exec.Args{Positional: args})
							if err != nil {
								return err
							}
							if res.RowsAffected != int64(len(refs)) {
								return fmt.Errorf("%d rows affected, want %d", res.RowsAffected, len(refs))
							}
						}
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					i += 2
					continue
				}
				p, args, refs := insert(w, i)
				res, err := e.Auto(context.Background(), p, exec.Args{Positional: args})
				if err != nil {
					t.Error(err)
					return
				}
				if res.RowsAffected != int64(len(refs)) {
					t.Errorf("%d rows affected, want %d", res.RowsAffected, len(refs))
				}
				mu.Lock()
				lastRef[res.LastInsertID] = refs[len(refs)-1]
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	rows := mustRun(t, e, "SELECT id, priority, cpu, mem, note, ref FROM t").Rows
	require.Len(t, rows, len(want))
	got := map[string]row{}
	for _, r := range rows {
		ref := r[5].(string)
		got[ref] = row{prio: r[1].(int64), cpu: r[2].(int64), mem: r[3].(int64), note: r[4].(string)}
		if l, ok := lastRef[r[0].(int64)]; ok {
			require.Equal(t, l, ref, "the last id of a statement is its last row's")
		}
	}
	for ref, x := range want {
		require.Equal(t, x, got[ref], "row %s", ref)
	}
}
