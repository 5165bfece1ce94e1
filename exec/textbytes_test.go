package exec_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
)

// TestTextFromBytes: a []byte given for a TEXT column is stored as the
// string it holds (insert packs it without making the string), read back
// as a string, found by WHERE, in any position among the columns, with
// zero bytes and bytes that escape, and kept as it was when the caller
// writes over its buffer after the INSERT. What convert refuses, it still
// refuses.
func TestTextFromBytes(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("tb"))
	mustRun(t, e, "CREATE TABLE t (a TEXT, n INT, b TEXT, c VARCHAR(3), d BLOB)")
	texts := []string{"", "plain", "zero\x00byte", "é\x00\x00ü", "end\x00"}
	buf := make([]byte, 0, 64) // one buffer for every row, as a caller's
	var want [][]any
	for i, s := range texts {
		buf = append(buf[:0], s...)
		blob := []byte{0, 1, byte(i)}
		mustRun(t, e, "INSERT INTO t (a, n, b, c, d) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)",
			buf, int64(i), "s", buf[:min(len(buf), 3)], blob,
			"s", int64(100+i), buf, []byte("abc"), nil)
		want = append(want, []any{s, int64(i), "s", s[:min(len(s), 3)], blob})
		want = append(want, []any{"s", int64(100 + i), s, "abc", nil})
		for j := range buf {
			buf[j] = 'X' // the caller reuses its buffer
		}
	}
	got := mustRun(t, e, "SELECT a, n, b, c, d FROM t").Rows
	require.Len(t, got, len(want))
	for _, w := range want {
		i := slicesIndex(got, w[1].(int64))
		require.GreaterOrEqual(t, i, 0)
		require.Equal(t, w, got[i], "row n=%d", w[1])
	}
	for i, s := range texts {
		rows := mustRun(t, e, "SELECT n FROM t WHERE b = ?", s).Rows
		require.Equal(t, [][]any{{int64(100 + i)}}, rows, "%q", s)
	}

	_, err := run(t, e, "INSERT INTO t (a) VALUES (?)", []byte("a\xffb"))
	require.ErrorIs(t, err, exec.ErrValue, "not UTF-8")
	_, err = run(t, e, "INSERT INTO t (c) VALUES (?)", []byte("long"))
	require.ErrorIs(t, err, exec.ErrValue, "longer than VARCHAR(3)")
	require.Contains(t, err.Error(), "at most 3 characters")
}

// TestTextFromBytesInUniqueKey: a TEXT value of a unique key given as
// []byte keys the row as the string it holds: the same text given as a
// string is a duplicate.
func TestTextFromBytesInUniqueKey(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("tbu"))
	mustRun(t, e, "CREATE TABLE u (k TEXT, v TEXT, UNIQUE (k))")
	buf := []byte("key")
	mustRun(t, e, "INSERT INTO u (k, v) VALUES (?, ?)", buf, buf)
	copy(buf, "XXX")
	_, err := run(t, e, "INSERT INTO u (k, v) VALUES (?, ?)", "key", "other")
	require.Error(t, err, "the key given as bytes, then as a string")
	require.Equal(t, [][]any{{"key", "key"}}, mustRun(t, e, "SELECT k, v FROM u").Rows)
	for i := range 3 {
		mustRun(t, e, "INSERT INTO u (k, v) VALUES (?, ?)", fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{'v'}, i))
	}
	require.Equal(t, [][]any{{int64(4)}}, mustRun(t, e, "SELECT COUNT(*) FROM u").Rows)
}

func slicesIndex(rows [][]any, n int64) int {
	for i, r := range rows {
		if r[1] == n {
			return i
		}
	}
	return -1
}
