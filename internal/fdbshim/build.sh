#!/usr/bin/env bash
# Builds the test libfdb_c (fdbqueue's test double of FoundationDB's client
# library, see doc.go) as DIR/libfdb_c.so. Tests then link it with
#   CGO_CFLAGS="-I$REPO/kv/fdb/testdata/include" CGO_LDFLAGS="-L$DIR -Wl,-rpath,$DIR"
# and -tags fdb. It is never installed, nor linked outside tests.
set -euo pipefail
dir=${1:?usage: internal/fdbshim/build.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cc=${CC:-gcc}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "internal/fdbshim/build.sh: no C compiler ($cc): building the FoundationDB test double needs gcc (or CC=...); the bindings need cgo anyway" >&2
	exit 1
fi
mkdir -p "$dir"
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -pthread \
	-I"$repo/kv/fdb/testdata/include" \
	-o "$dir/libfdb_c.so" "$here/libfdb_c/fdb_c.c"
