package fdbmodel_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// modelOnly are the exported methods the model has and kv/fdb does not:
// none that a caller could take for an optional kv interface.
var modelOnly = map[string][]string{"DB": {"Latencies"}}

// TestMirrorsFDBEngine: the model's types have the exported methods of
// kv/fdb's, no more and no fewer, so that every optional interface a
// caller asserts (kv.GetMany's, kv.First's, kv.CertainCommits, kv.GetAsync's,
// kv.GetRangeAsync's, kv.MetadataVersion's and kv.BumpMetadataVersion's)
// finds on the model what it finds on FoundationDB, futures included.
// kv/fdb builds only with -tags fdb and libfdb_c, so its source is read.
func TestMirrorsFDBEngine(t *testing.T) {
	t.Parallel()
	fdb := methods(t, filepath.Join("..", "..", "kv", "fdb"), "fdb")
	ours := methods(t, ".", "")
	for _, typ := range []string{"DB", "txn", "snapshot", "iter", "valueFuture", "rangeFuture"} {
		require.NotEmpty(t, fdb[typ], "kv/fdb has no type %s: mirror its new shape here", typ)
		want := slices.Sorted(slices.Values(append(slices.Clone(fdb[typ]), modelOnly[typ]...)))
		require.Equal(t, want, ours[typ], "the exported methods of %s: the model must implement what kv/fdb does, and nothing else", typ)
	}
}

// methods returns the exported methods declared in the package in dir
// (not its tests), by receiver type, sorted.
func methods(t *testing.T, dir, tag string) map[string][]string {
	t.Helper()
	ctx := build.Default
	if tag != "" {
		ctx.BuildTags = []string{tag}
	}
	pkg, err := ctx.ImportDir(dir, 0)
	require.NoError(t, err)
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, name := range append(pkg.GoFiles, pkg.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				out[id.Name] = append(out[id.Name], fn.Name.Name)
			}
		}
	}
	for _, ms := range out {
		slices.Sort(ms)
	}
	return out
}
