#!/usr/bin/env bash
# Builds Jaeger (github.com/jaegertracing/jaeger/cmd/jaeger, pinned in
# interop/jaeger/go.mod: the all-in-one that receives OTLP and serves its
# query API) into bin/tools/jaeger: the receiver of the OTLP end-to-end test
# (cmd/flexway/otlp_test.go). `go install …@version` refuses it (its go.mod
# has replace directives), so it is built from a module of its own whose
# dependencies stay out of flexway's go.mod. About 3 minutes the first time;
# skipped while bin/tools/jaeger is newer than interop/jaeger's go.mod and go.sum.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
out="$PWD/bin/tools/jaeger"
if [ -x "$out" ] && [ "$out" -nt interop/jaeger/go.mod ] && [ "$out" -nt interop/jaeger/go.sum ]; then
  echo "build-jaeger: $out up to date"
  exit 0
fi
mkdir -p bin/tools
cd interop/jaeger
GOWORK=off "$GO" build -o "$out.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
mv "$out.tmp" "$out"
echo "build-jaeger: built $out"
