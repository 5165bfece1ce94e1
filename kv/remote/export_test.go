package remote

// WithVersion returns o with the fdbqueue version its handshake sends.
func WithVersion(o Options, v string) Options {
	o.version = v
	return o
}

// ServerWithVersion returns o with the fdbqueue version its handshake
// sends.
func ServerWithVersion(o ServerOptions, v string) ServerOptions {
	o.version = v
	return o
}

// MaxFrame is the bound on frames.
const MaxFrame = maxFrame
