package driver

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// Engine names the kv engine a DSN selects.
type Engine string

// Engines.
const (
	EngineMemory Engine = "memory"
	EngineFile   Engine = "file"
	EngineFDB    Engine = "fdb"
)

// Config is a parsed DSN.
type Config struct {
	Engine Engine
	// Name is the shared in-memory database of memory:NAME ("" for a
	// private one); Path is the file of file:PATH or the cluster file of
	// fdb:PATH.
	Name, Path string
	// Params are the DSN's query parameters.
	Params map[string]string
}

const dsnForms = "memory:, memory:NAME, file:PATH[?sync=...&mode=...], fdb:[CLUSTER_FILE][?root=...&tenant=...]"

// allowedParams lists the parameters each engine accepts.
var allowedParams = map[Engine][]string{
	EngineMemory: faultParams,
	EngineFile:   append([]string{"sync", "mode"}, faultParams...),
	EngineFDB:    {"root", "tenant", "timeout", "retry_limit"},
}

// faultParams inject FoundationDB's failures into the embedded engine, for
// tests: rates per commit (0 to 1) and a commit latency.
var faultParams = []string{"fault_conflict", "fault_unknown", "fault_too_old", "fault_timeout", "fault_seed", "commit_latency"}

// acceptedParams lists allowed for an error, the fault-injection ones
// marked as for tests.
func acceptedParams(allowed []string) string {
	var user, faults []string
	for _, p := range allowed {
		if contains(faultParams, p) {
			faults = append(faults, p)
		} else {
			user = append(user, p)
		}
	}
	out := listOrNone(user)
	if len(faults) > 0 {
		out += "; for tests, fault injection: " + strings.Join(faults, ", ")
	}
	return out
}

// ParseDSN parses a DSN: memory:, memory:NAME, file:PATH[?params] or
// fdb:[CLUSTER_FILE][?params]. Unknown parameters are errors.
func ParseDSN(dsn string) (*Config, error) {
	scheme, rest, ok := strings.Cut(dsn, ":")
	if !ok {
		return nil, fmt.Errorf("%w: %q has no engine; DSNs are %s", ErrDSN, dsn, dsnForms)
	}
	cfg := &Config{Engine: Engine(strings.ToLower(scheme)), Params: map[string]string{}}
	allowed, known := allowedParams[cfg.Engine]
	if !known {
		return nil, fmt.Errorf("%w: unknown engine %q; DSNs are %s", ErrDSN, scheme, dsnForms)
	}
	body, query, _ := strings.Cut(rest, "?")
	if query != "" {
		vals, err := url.ParseQuery(query)
		if err != nil {
			return nil, fmt.Errorf("%w: parameters %q: %v", ErrDSN, query, err)
		}
		for k, v := range vals {
			if !contains(allowed, k) {
				return nil, fmt.Errorf("%w: unknown parameter %q for %s (accepted: %s)", ErrDSN, k, cfg.Engine, acceptedParams(allowed))
			}
			if len(v) != 1 {
				return nil, fmt.Errorf("%w: parameter %q is given %d times", ErrDSN, k, len(v))
			}
			cfg.Params[k] = v[0]
		}
	}
	switch cfg.Engine {
	case EngineMemory:
		if strings.ContainsAny(body, "/\\") {
			return nil, fmt.Errorf("%w: memory:%s names an in-memory database; did you mean file:%s?", ErrDSN, body, body)
		}
		cfg.Name = body
	case EngineFile:
		if body == "" {
			return nil, fmt.Errorf("%w: file: needs a path, as in file:/var/lib/app/queue.db", ErrDSN)
		}
		cfg.Path = body
	case EngineFDB:
		cfg.Path = body
	}
	return cfg, nil
}

// Clone returns a deep copy of c: a connector keeps its own, so a caller
// that changes its Config (Params included) afterwards changes nothing.
func (c *Config) Clone() Config {
	out := *c
	out.Params = make(map[string]string, len(c.Params))
	for k, v := range c.Params {
		out.Params[k] = v
	}
	return out
}

// String formats the config as a DSN.
func (c *Config) String() string {
	body := c.Name
	if c.Engine != EngineMemory {
		body = c.Path
	}
	s := string(c.Engine) + ":" + body
	if len(c.Params) > 0 {
		keys := make([]string, 0, len(c.Params))
		for k := range c.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		v := url.Values{}
		for _, k := range keys {
			v.Set(k, c.Params[k])
		}
		s += "?" + v.Encode()
	}
	return s
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
