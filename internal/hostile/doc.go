// Package hostile holds `make hostile` (issue 33.8): the attacks a hostile
// tenant or an anonymous peer can make, run one after the other against the
// built binary (go build ./cmd/flexway) on a plain configuration, each
// measured (the gateway's RSS, descriptors and goroutines before, at peak and
// after; the log bytes it wrote) and judged against its bound, while a second
// tenant's client produces and consumes (the canary).
//
// Everything is in the tests (TestHostile): `go test ./internal/hostile` runs
// a quick subset (the kfake suite of `make test`), `make hostile` (the flag
// -hostile.full, or HOSTILE_FULL=1) runs every attack and prints the table.
package hostile
