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

// respondValues answers a GetMany: as many frames as it takes, each of
// about chunkBytes at most.
func (c *sconn) respondValues(req uint64, vals [][]byte) {
	for {
		n, size := 0, 0
		for n < len(vals) && (n == 0 || size+len(vals[n]) <= chunkBytes) {
			size += len(vals[n]) + 4
			n++
		}
		status := byte(stOK)
		if n < len(vals) {
			status = stMore
		}
		e, ok := c.resp(req, status)
		if !ok {
			return
		}
		e.uvarint(uint64(n))
		for _, v := range vals[:n] {
			e.opt(v)
		}
		c.w.send(&e)
		if vals = vals[n:]; len(vals) == 0 {
			return
		}
	}
}

// respondRows answers a range read: as many frames as it takes, the last
// saying whether more rows may follow (a page cut short).
func (c *sconn) respondRows(req uint64, rows []kv.KeyValue, more bool) {
	for {
		n, size := 0, 0
		for n < len(rows) && (n == 0 || size+rowSize(rows[n]) <= chunkBytes) {
			size += rowSize(rows[n])
			n++
		}
		status := byte(stOK)
		if n < len(rows) {
			status = stMore
		}
		e, ok := c.resp(req, status)
		if !ok {
			return
		}
		e.uvarint(uint64(n))
		for _, r := range rows[:n] {
			e.bytes(r.Key)
			e.bytes(r.Value)
		}
		if status == stOK {
			e.u8(boolByte(more))
		}
		c.w.send(&e)
		if rows = rows[n:]; len(rows) == 0 {
			return
		}
	}
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
