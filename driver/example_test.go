package driver_test

import (
	"database/sql"
	"fmt"

	_ "github.com/fdbqueue/fdbqueue/driver"
)

// A task queue: consumers pop the highest-priority task that fits them.
func Example_taskQueue() {
	db, err := sql.Open("fdbqueue", "memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()

	db.Exec(`CREATE TABLE tasks (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload TEXT, INDEX fit (cpu, mem))`)
	db.Exec(`INSERT INTO tasks (priority, cpu, mem, payload) VALUES
		(10, 16, 65536, 'train model'), (5, 2, 2048, 'resize images'), (10, 1, 512, 'send emails')`)

	pop := `SELECT payload FROM tasks WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP`
	for _, consumer := range []struct{ cpu, mem int }{{4, 4096}, {4, 4096}, {4, 4096}} {
		var payload string
		err := db.QueryRow(pop, consumer.cpu, consumer.mem).Scan(&payload)
		if err == sql.ErrNoRows {
			fmt.Println("nothing fits")
			continue
		}
		fmt.Println(payload)
	}
	var left int
	db.QueryRow(`SELECT COUNT(*) FROM tasks`).Scan(&left)
	fmt.Println(left, "left")
	// Output:
	// send emails
	// resize images
	// nothing fits
	// 1 left
}

// A priority queue, served from either end, oldest first within a priority.
func Example_priorityQueue() {
	db, _ := sql.Open("fdbqueue", "memory:")
	defer db.Close()
	db.Exec(`CREATE TABLE pq (priority INT NOT NULL, v TEXT)`)
	db.Exec(`INSERT INTO pq VALUES (1, 'low'), (9, 'urgent'), (9, 'urgent too'), (5, 'normal')`)

	var v string
	db.QueryRow(`SELECT v FROM pq ORDER BY priority DESC LIMIT 1 FOR POP`).Scan(&v)
	fmt.Println("max:", v)
	db.QueryRow(`SELECT v FROM pq ORDER BY priority ASC LIMIT 1 FOR POP`).Scan(&v)
	fmt.Println("min:", v)
	db.QueryRow(`SELECT v FROM pq ORDER BY priority DESC LIMIT 1`).Scan(&v)
	fmt.Println("peek max:", v)
	// Output:
	// max: urgent
	// min: low
	// peek max: urgent too
}

// A FIFO queue: a table without a priority column.
func Example_fifo() {
	db, _ := sql.Open("fdbqueue", "memory:")
	defer db.Close()
	db.Exec(`CREATE TABLE jobs (name TEXT NOT NULL)`)
	for _, n := range []string{"first", "second", "third"} {
		db.Exec(`INSERT INTO jobs (name) VALUES (?)`, n)
	}
	rows, _ := db.Query(`SELECT name FROM jobs LIMIT 2 FOR POP`)
	for rows.Next() {
		var name string
		rows.Scan(&name)
		fmt.Println(name)
	}
	rows.Close()
	// Output:
	// first
	// second
}
