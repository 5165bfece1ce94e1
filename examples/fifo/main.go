// Command fifo shows a FIFO queue through database/sql: producers push,
// workers pop in batches inside transactions, and every message arrives
// once, in order per producer.
//
//	go run ./examples/fifo
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fifo:", err)
		os.Exit(1)
	}
}

func run() error {
	db, err := sql.Open("fdbqueue", "memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE inbox (producer INT NOT NULL, seq INT NOT NULL, body TEXT)`); err != nil {
		return err
	}
	const producers, each = 4, 25
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := db.Exec(`INSERT INTO inbox (producer, seq, body) VALUES (?, ?, ?)`, p, i, fmt.Sprintf("message %d from producer %d", i, p)); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			}
		}()
	}
	wg.Wait()

	// Pop in batches of 10, each batch in one transaction with a
	// bookkeeping insert: both happen, or neither.
	if _, err := db.Exec(`CREATE TABLE done (n INT NOT NULL)`); err != nil {
		return err
	}
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	total, batches := 0, 0
	for {
		var got []struct{ p, seq int }
		err := fdbqueue.ExecuteTx(context.Background(), db, nil, func(tx *sql.Tx) error {
			got = got[:0]
			rows, err := tx.Query(`SELECT producer, seq FROM inbox LIMIT 10 FOR POP`)
			if err != nil {
				return err
			}
			for rows.Next() {
				var m struct{ p, seq int }
				if err := rows.Scan(&m.p, &m.seq); err != nil {
					rows.Close()
					return err
				}
				got = append(got, m)
			}
			rows.Close()
			if len(got) == 0 {
				return nil
			}
			_, err = tx.Exec(`INSERT INTO done (n) VALUES (?)`, len(got))
			return err
		})
		if err != nil {
			return err
		}
		if len(got) == 0 {
			break
		}
		batches++
		for _, m := range got {
			if m.seq != last[m.p]+1 {
				return fmt.Errorf("producer %d: message %d after %d", m.p, m.seq, last[m.p])
			}
			last[m.p] = m.seq
			total++
		}
		fmt.Printf("batch %2d: %d messages\n", batches, len(got))
	}
	fmt.Printf("%d messages from %d producers in %d batches, each producer's in order, none twice\n", total, producers, batches)
	return nil
}
