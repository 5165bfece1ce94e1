package ui_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/ui"
)

// TestManyTables: with hundreds of tables the page asks for the series it
// draws only (the deepest tables', and the totals), or one table's, and
// an unknown table's error lists a few tables, not all of them.
func TestManyTables(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	const n = 150
	for i := range n {
		_, err := db.Exec(fmt.Sprintf(`CREATE TABLE t%03d (v INT NOT NULL) MAX_ATTEMPTS=3`, i))
		require.NoError(t, err)
	}
	// t000 to t009 the deepest: 10 rows to 1.
	for i := range 10 {
		_, err := db.Exec(fmt.Sprintf(`INSERT INTO t%03d (v) VALUES (1)`+strings.Repeat(", (1)", 9-i), i))
		require.NoError(t, err)
	}
	c := newClient(t, ui.Handler(db, ui.WithInterval(100*time.Millisecond), ui.WithHistory(5)))
	seriesOf := func(r response) map[string]any {
		t.Helper()
		require.Equal(t, 200, r.status, r.body)
		return r.body["series"].(map[string]any)
	}
	require.Eventually(t, func() bool {
		return len(seriesOf(c.get(t, "api/overview"))["t"].([]any)) >= 2
	}, 10*time.Second, 20*time.Millisecond)

	all := c.get(t, "api/overview")
	require.Len(t, all.body["tables"], 2*n, "with no parameter, every table and its dead letters")
	require.Len(t, seriesOf(all)["tables"], 2*n)

	top := c.get(t, "api/overview?top=8")
	require.Len(t, top.body["tables"], 2*n, "the counts of every table")
	var names []string
	for name := range seriesOf(top)["tables"].(map[string]any) {
		names = append(names, name)
	}
	require.ElementsMatch(t, []string{"t000", "t001", "t002", "t003", "t004", "t005", "t006", "t007"}, names)
	total := seriesOf(top)["total"].(map[string]any)
	require.Len(t, total["inPerS"], len(seriesOf(top)["t"].([]any)), "the rates summed over every table")
	for _, q := range top.body["tables"].([]any) {
		require.GreaterOrEqual(t, q.(map[string]any)["inPerS"], 0.0, "each table's last rate, with or without its series")
	}

	one := c.get(t, "api/overview?table=t042")
	require.Len(t, one.body["tables"], 1)
	require.Equal(t, "t042", one.body["tables"].([]any)[0].(map[string]any)["name"])
	require.Len(t, seriesOf(one)["tables"], 1)
	require.Contains(t, seriesOf(one)["tables"], "t042")

	for path, says := range map[string]string{
		"api/overview?table=nope":                `no table "nope" in fdbqueue_queues: was it dropped?`,
		"api/overview?top=0":                     `top "0" is not a number from 1 to 100`,
		"api/overview?top=8&table=t001":          "table and top together",
		"api/overview?sort=name":                 `unknown parameter "sort"; accepted: table`,
		"api/tables/nope":                        fmt.Sprintf("the tables are t000, t000_dead, t001, t001_dead, t002, t002_dead, t003, t003_dead, t004, t004_dead, t005, t005_dead, t006, t006_dead, t007, t007_dead, t008, t008_dead, t009, t009_dead, and %d more", 2*n-20),
		"api/tables/" + strings.Repeat("x", 500): "no table",
	} {
		r := c.get(t, path)
		require.GreaterOrEqual(t, r.status, 400, path)
		require.Contains(t, r.body["error"], says, path)
		require.Less(t, len(r.body["error"].(string)), 1000, path)
	}
}
