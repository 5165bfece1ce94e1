// The handshake, and the versions it compares.

package remote

import (
	"bufio"
	"fmt"
	"net"
	"runtime/debug"
	"time"
)

// Version is fdbqueue's version string when the build does not say it (a
// test, a build outside version control): see ModuleVersion.
const Version = "devel"

// modulePath is fdbqueue's module path, which build information names.
const modulePath = "github.com/fdbqueue/fdbqueue"

// moduleVersion is the version the handshake sends, unless the options
// say another (tests do, to make a mismatch).
var moduleVersion = ModuleVersion()

func versionOr(v string) string {
	if v == "" {
		return moduleVersion
	}
	return v
}

// ModuleVersion returns the version of fdbqueue this binary was built
// with, as the handshake compares it: the module's version in the build
// information (a dependency's tag or pseudo-version, or the main module's
// version control stamp), else Version.
func ModuleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	v := ""
	if bi.Main.Path == modulePath {
		v = bi.Main.Version
	}
	for _, dep := range bi.Deps {
		if dep.Path == modulePath {
			v = dep.Version
			if dep.Replace != nil {
				v = dep.Replace.Version
			}
		}
	}
	if v == "" || v == "(devel)" {
		return Version
	}
	return v
}

// handshakeTimeout bounds the handshake on both sides, when the dial's
// context does not bound it sooner.
const handshakeTimeout = 10 * time.Second

// Capabilities the server announces.
const (
	capMetadataVersion     = 1 << iota // its transactions have a metadata version
	capCalls                           // it takes calls (ServerOptions.Call)
	capWriteConflictRanges             // its transactions take write conflict ranges
)

// helloFrame is the client's hello.
func helloFrame(version string) []byte {
	e := enc{b: []byte{0, 0, 0, 0, mHello}}
	e.b = append(e.b, magic...)
	e.uvarint(ProtocolVersion)
	e.str(version)
	return framed(e.b)
}

// helloReplyFrame is the server's answer: its versions, and why it refuses
// the client ("" if it does not).
func helloReplyFrame(version, refusal string, caps byte) []byte {
	e := enc{b: []byte{0, 0, 0, 0, mHelloReply}}
	e.uvarint(ProtocolVersion)
	e.str(version)
	e.str(refusal)
	e.u8(caps)
	return framed(e.b)
}

// framed fills in the length of a frame built with 4 bytes for it.
func framed(b []byte) []byte {
	n := len(b) - 4
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

// clientHandshake sends the hello and reads the reply: the server's
// capabilities, or a *VersionError.
func clientHandshake(nc net.Conn, br *bufio.Reader, version string, deadline time.Time) (byte, error) {
	if err := nc.SetDeadline(deadline); err != nil {
		return 0, err
	}
	if _, err := nc.Write(helloFrame(version)); err != nil {
		return 0, err
	}
	f, err := readFrame(br)
	if err != nil {
		return 0, fmt.Errorf("fdbqueue: kv/remote: reading the server's handshake: %w", err)
	}
	d := dec{b: f[1:]}
	proto := d.uvarint()
	ver := d.str()
	refusal := d.str()
	caps := d.u8()
	if f[0] != mHelloReply || d.end() != nil {
		return 0, fmt.Errorf("%w: the server's handshake is malformed", errProtocol)
	}
	if proto != ProtocolVersion || ver != version {
		return 0, &VersionError{ClientProtocol: ProtocolVersion, ServerProtocol: int(proto), ClientVersion: version, ServerVersion: ver}
	}
	if refusal != "" {
		return 0, fmt.Errorf("fdbqueue: kv/remote: the server refused the connection: %s", refusal)
	}
	return caps, nc.SetDeadline(time.Time{})
}

// serverHandshake reads the client's hello and answers it; a client of
// another version is refused (after being told the server's version).
func serverHandshake(nc net.Conn, br *bufio.Reader, version string, caps byte) error {
	if err := nc.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return err
	}
	f, err := readFrame(br)
	if err != nil {
		return fmt.Errorf("reading the hello: %w", err)
	}
	if f[0] != mHello || len(f) < 1+len(magic) || string(f[1:1+len(magic)]) != magic {
		return fmt.Errorf("%w: the first frame is not a kv/remote hello", errProtocol)
	}
	d := dec{b: f[1+len(magic):]}
	proto := d.uvarint()
	ver := d.str()
	if d.end() != nil {
		return fmt.Errorf("%w: a malformed hello", errProtocol)
	}
	refusal := ""
	if proto != ProtocolVersion || ver != version {
		refusal = (&VersionError{ClientProtocol: int(proto), ServerProtocol: ProtocolVersion, ClientVersion: ver, ServerVersion: version}).Error()
	}
	if _, err := nc.Write(helloReplyFrame(version, refusal, caps)); err != nil {
		return err
	}
	if refusal != "" {
		return fmt.Errorf("refused a client: %s", refusal)
	}
	return nc.SetDeadline(time.Time{})
}
