// Command priorityqueue shows a priority queue through database/sql: push
// with priorities, peek and pop from either end, re-prioritise and remove by
// id.
//
//	go run ./examples/priorityqueue
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "github.com/fdbqueue/fdbqueue/driver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "priorityqueue:", err)
		os.Exit(1)
	}
}

func run() error {
	db, err := sql.Open("fdbqueue", "memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	steps := []struct {
		say, sql string
		args     []any
	}{
		{"a column named priority makes a priority queue", `CREATE TABLE alerts (priority INT NOT NULL, msg TEXT NOT NULL)`, nil},
		{"push five alerts", `INSERT INTO alerts (priority, msg) VALUES (3, 'disk 80%'), (9, 'site down'), (1, 'cert expires in 30 days'), (9, 'db unreachable'), (5, 'latency up')`, nil},
	}
	for _, s := range steps {
		fmt.Println("--", s.say)
		if _, err := db.Exec(s.sql, s.args...); err != nil {
			return err
		}
	}
	show := func(title, q string, args ...any) error {
		fmt.Println("--", title)
		rows, err := db.Query(q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id, prio int64
			var msg string
			if err := rows.Scan(&id, &prio, &msg); err != nil {
				return err
			}
			fmt.Printf("   priority %d  %s\n", prio, msg)
			n++
		}
		if n == 0 {
			fmt.Println("   (nothing)")
		}
		return rows.Err()
	}
	if err := show("peek the whole queue, highest first (oldest first within a priority)", `SELECT id, priority, msg FROM alerts ORDER BY priority DESC`); err != nil {
		return err
	}
	if err := show("pop_max", `SELECT id, priority, msg FROM alerts ORDER BY priority DESC LIMIT 1 FOR POP`); err != nil {
		return err
	}
	if err := show("pop_min", `SELECT id, priority, msg FROM alerts ORDER BY priority ASC LIMIT 1 FOR POP`); err != nil {
		return err
	}
	var id int64
	if err := db.QueryRow(`SELECT id FROM alerts ORDER BY priority ASC LIMIT 1`).Scan(&id); err != nil {
		return err
	}
	fmt.Println("-- re-prioritise the lowest alert to 10 (UPDATE ... SET priority WHERE id)")
	if _, err := db.Exec(`UPDATE alerts SET priority = ? WHERE id = ?`, 10, id); err != nil {
		return err
	}
	if err := show("peek_max", `SELECT id, priority, msg FROM alerts ORDER BY priority DESC LIMIT 1`); err != nil {
		return err
	}
	fmt.Println("-- remove it by id")
	if _, err := db.Exec(`DELETE FROM alerts WHERE id = ?`, id); err != nil {
		return err
	}
	if err := show("what is left", `SELECT id, priority, msg FROM alerts ORDER BY priority DESC`); err != nil {
		return err
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM alerts`).Scan(&n); err != nil {
		return err
	}
	fmt.Printf("-- COUNT(*) = %d\n", n)
	return nil
}
