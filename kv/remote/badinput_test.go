package remote_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// syncBuffer is a log's buffer, written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// frame is a frame of type typ with body.
func frame(typ byte, body ...[]byte) []byte {
	b := []byte{0, 0, 0, 0, typ}
	for _, x := range body {
		b = append(b, x...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func uvarint(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func str(s string) []byte { return append(uvarint(uint64(len(s))), s...) }

// hello is a client's valid handshake.
func hello() []byte {
	return frame(1, []byte("fdbq-kvr"), uvarint(remote.ProtocolVersion), str(remote.ModuleVersion()))
}

// TestBadInput: a peer that sends garbage, an oversized frame, a frame
// that does not decode, or a count it cannot hold, has its connection
// closed, the reason logged; nothing is allocated for the claimed sizes,
// and the server goes on serving its other clients.
func TestBadInput(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	var logs syncBuffer
	s := &served{t: t, db: db, path: sockPath(t),
		opts: remote.ServerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
	s.start()
	defer s.stop()
	good := s.dial(t, remote.Options{})

	huge := make([]byte, 4)
	binary.BigEndian.PutUint32(huge, 0xffff_fff0)
	over := make([]byte, 4)
	binary.BigEndian.PutUint32(over, remote.MaxFrame+1)
	for _, c := range []struct {
		name      string
		handshake bool
		send      []byte
	}{
		{"not the protocol", false, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"a hello without the magic", false, frame(1, []byte("fdbq-xxx"), uvarint(1), str("v"))},
		{"a frame of 4 GiB", true, huge},
		{"a frame one byte over the limit", true, over},
		{"an empty frame", true, []byte{0, 0, 0, 0}},
		{"an unknown type", true, frame(99, uvarint(1))},
		{"a truncated Get", true, append(frame(2, uvarint(1)), frame(3, uvarint(1), uvarint(1), []byte{0}, uvarint(50), []byte("short"))...)},
		{"a count of a billion keys", true, append(frame(2, uvarint(1)), frame(4, uvarint(1), uvarint(1), []byte{0}, uvarint(1e9), str("k"))...)},
		{"unknown flags", true, append(frame(2, uvarint(1)), frame(3, uvarint(1), uvarint(1), []byte{0x80}, str("k"))...)},
		{"a transaction begun twice", true, append(frame(2, uvarint(1)), frame(2, uvarint(1))...)},
		{"a truncated call", true, frame(24, uvarint(1), uvarint(50), []byte("short"))},
		{"a call abort with bytes left over", true, frame(25, uvarint(1), []byte("x"))},
		{"a key over the wire's limit", true, append(frame(2, uvarint(1)), frame(10, uvarint(1), str(strings.Repeat("k", 70_000)))...)},
		{"a truncated BitAnd", true, append(frame(2, uvarint(1)), frame(26, uvarint(1), str("k"), uvarint(50), []byte("short"))...)},
	} {
		nc, err := net.Dial("unix", s.path)
		require.NoError(t, err, c.name)
		if c.handshake {
			_, err = nc.Write(hello())
			require.NoError(t, err, c.name)
		}
		_, _ = nc.Write(c.send)
		// The server answers the handshake, then closes: read to the end.
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = io.Copy(io.Discard, nc)
		require.NoError(t, err, "%s: the server closes the connection (a read timeout means it did not)", c.name)
		_ = nc.Close()

		setKey(t, good, "k", c.name)
		require.Equal(t, c.name, getKey(t, good, "k"), "the server serves the others")
	}
	require.Contains(t, logs.String(), "broke the protocol")
	require.Contains(t, logs.String(), "a frame of 4294967280 bytes")
}
