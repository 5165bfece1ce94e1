package exec

import (
	"fmt"
	"time"

	"github.com/fdbqueue/fdbqueue/queues"
)

// SELECT ... FOR LEASE d: the rows FOR POP would take, left in the table
// and leased (queues.Lease): invisible for d, with a fresh _lease and one
// more _attempts. Autocommit leases are exactly-once as pops are (popOnce:
// the receipt keeps the leased rows with their tokens).

// The plans that lease or see every row.
type (
	// leaseN leases the first n visible rows (n < 0: all), those that
	// fit if fit is set: a lease without WHERE, or with resource limits.
	leaseN struct {
		fit   *fit
		order queues.Order
		n     int64
	}
	// allRows removes rows by a pop plan while the table has no
	// invisible (leased or delayed) row, by scan otherwise: pops take
	// visible rows only, and a DELETE removes every row it selects.
	allRows struct {
		pop  plan
		scan scan
	}
)

// leaseRequest is the queue request of a lease of the statement's table.
func (s *stmtCtx) leaseRequest() queues.LeaseRequest {
	req := queues.LeaseRequest{For: s.b.lease}
	if s.t.MaxAttempts > 0 {
		req.MaxAttempts, req.Dead = s.t.MaxAttempts, s.moveDead
	}
	if s.t.Backoff != nil {
		// Hidden until the lease's end and the backoff of its attempt:
		// when it comes back if the lease ends unacked (backoff.go).
		req.Backoff = func(it queues.Item) time.Duration { return s.t.backoffDelay(it.ID, it.Attempts) }
	}
	return req
}

// deadLetter reports whether taking it as k says moves it to the
// dead-letter table instead (MAX_ATTEMPTS): a plan that chooses the rows
// it leases does not count it, and goes on to the next candidate.
func (s *stmtCtx) deadLetter(k take, it queues.Item) bool {
	return k == takeLease && s.t.MaxAttempts > 0 && it.Attempts >= s.t.MaxAttempts
}

func (p leaseN) run(s *stmtCtx) ([]row, int64, error) {
	req := s.leaseRequest()
	req.Order, req.N = p.order, clampLimit(p.n)
	if p.fit != nil {
		req.Limits = p.fit.limits
	}
	items, err := s.t.Queue.Lease(s.tr, req)
	if err != nil {
		return nil, 0, err
	}
	return counted(s.decodeAll(items))
}

func (p allRows) run(s *stmtCtx) ([]row, int64, error) {
	_, invisible, err := s.t.Queue.NextDue(s.tr)
	if err != nil {
		return nil, 0, err
	}
	if invisible {
		return p.scan.run(s)
	}
	return p.pop.run(s)
}

// takeRows takes the rows a plan found, as k says: it removes them, or
// leases them and returns them with their leases.
func (s *stmtCtx) takeRows(rows []row, k take) ([]row, error) {
	switch k {
	case takeRemove:
		for _, r := range rows {
			if _, _, err := s.t.Queue.Remove(s.tr, r.item.ID); err != nil {
				return nil, err
			}
		}
	case takeLease:
		req := s.leaseRequest()
		req.IDs = make([]int64, len(rows))
		for i, r := range rows {
			req.IDs[i] = r.item.ID
		}
		items, err := s.t.Queue.Lease(s.tr, req)
		if err != nil {
			return nil, err
		}
		byID := make(map[int64]row, len(rows))
		for _, r := range rows {
			byID[r.item.ID] = r
		}
		out := make([]row, len(items))
		for i, it := range items {
			r := byID[it.ID]
			r.item = it
			out[i] = r
		}
		return out, nil
	}
	return rows, nil
}

func (p leaseN) String() string {
	if p.fit != nil {
		return fmt.Sprintf("leaseFit(%v, order=%s, n=%s)", p.fit, orderName(p.order), count(p.n))
	}
	return fmt.Sprintf("leaseN(order=%s, n=%s)", orderName(p.order), count(p.n))
}

func (p allRows) String() string {
	return fmt.Sprintf("allRows(%v | %v)", p.pop, p.scan)
}
