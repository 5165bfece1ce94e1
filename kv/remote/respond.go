// The server's answers.

package remote

import "github.com/fdbqueue/fdbqueue/kv"

// resp begins an answer to req; false once the connection failed (the
// answer is dropped: the client gets the connection's error).
func (c *sconn) resp(req uint64, status byte) (enc, bool) {
	e, err := c.w.start(mResp)
	if err != nil {
		return enc{}, false
	}
	e.uvarint(req)
	e.u8(status)
	return e, true
}

// respondErr answers req with err, or with success if err is nil.
func (c *sconn) respondErr(req uint64, err error) {
	if err != nil {
		if e, ok := c.resp(req, stErr); ok {
			encodeErr(&e, err)
			c.w.send(&e)
		}
		return
	}
	if e, ok := c.resp(req, stOK); ok {
		c.w.send(&e)
	}
}

func (c *sconn) respondValue(req uint64, v []byte, err error) {
	if err != nil {
		c.respondErr(req, err)
		return
	}
	if e, ok := c.resp(req, stOK); ok {
		e.opt(v)
		c.w.send(&e)
	}
}

func (c *sconn) respondVersion(req uint64, v int64, err error) {
	if err != nil {
		c.respondErr(req, err)
		return
	}
	if e, ok := c.resp(req, stOK); ok {
		e.varint(v)
		c.w.send(&e)
	}
}

func (c *sconn) respondRetry(req uint64, retry bool) {
	if e, ok := c.resp(req, stOK); ok {
		e.u8(boolByte(retry))
		c.w.send(&e)
	}
}

func (c *sconn) respondFirst(req uint64, kvp kv.KeyValue, found bool, err error) {
	if err != nil {
		c.respondErr(req, err)
		return
	}
	if e, ok := c.resp(req, stOK); ok {
		e.u8(boolByte(found))
		if found {
			e.bytes(kvp.Key)
			e.bytes(kvp.Value)
		}
		c.w.send(&e)
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// inChunks calls emit with consecutive runs [lo, hi) of n items, each
// run's sizes adding up to chunkBytes at most (or one item, if larger),
// the last run with last set; at least once, for n 0. It stops when emit
// returns false.
func inChunks(n int, size func(i int) int, emit func(lo, hi int, last bool) bool) {
	for lo := 0; ; {
		hi, total := lo, 0
		for hi < n && (hi == lo || total+size(hi) <= chunkBytes) {
			total += size(hi)
			hi++
		}
		if !emit(lo, hi, hi == n) || hi == n {
			return
		}
		lo = hi
	}
}

// status is an answer frame's: more frames follow it, or not.
func status(last bool) byte {
	if last {
		return stOK
	}
	return stMore
}

// respondValues answers a GetMany, in frames of about chunkBytes.
func (c *sconn) respondValues(req uint64, vals [][]byte) {
	inChunks(len(vals), func(i int) int { return len(vals[i]) + 4 }, func(lo, hi int, last bool) bool {
		e, ok := c.resp(req, status(last))
		if !ok {
			return false
		}
		e.uvarint(uint64(hi - lo))
		for _, v := range vals[lo:hi] {
			e.opt(v)
		}
		c.w.send(&e)
		return true
	})
}

// respondRows answers a range read, in frames of about chunkBytes, the
// last saying whether more rows may follow (a page cut short).
func (c *sconn) respondRows(req uint64, rows []kv.KeyValue, more bool) {
	inChunks(len(rows), func(i int) int { return rowSize(rows[i]) }, func(lo, hi int, last bool) bool {
		e, ok := c.resp(req, status(last))
		if !ok {
			return false
		}
		e.uvarint(uint64(hi - lo))
		for _, r := range rows[lo:hi] {
			e.bytes(r.Key)
			e.bytes(r.Value)
		}
		if last {
			e.u8(boolByte(more))
		}
		c.w.send(&e)
		return true
	})
}

// sendWatchValue tells the client what a watch compares with.
func (c *sconn) sendWatchValue(id uint64, v []byte) {
	if e, err := c.w.start(mWatchValue); err == nil {
		e.uvarint(id)
		e.opt(v)
		c.w.send(&e)
	}
}

// sendWatchDone tells the client a watch fired (err nil) or failed.
func (c *sconn) sendWatchDone(id uint64, err error) {
	if e, werr := c.w.start(mWatchDone); werr == nil {
		e.uvarint(id)
		if err == nil {
			e.u8(0)
		} else {
			e.u8(1)
			encodeErr(&e, err)
		}
		c.w.send(&e)
	}
}
