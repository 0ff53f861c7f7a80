package configs

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrStartOnly is wrapped by the error a reload returns when it changes a
// start-only key (SPEC S1); Snapshot.StartOnlyDiff names the keys.
var ErrStartOnly = errors.New("configs: a start-only key changed: restart to apply it")

// FieldError is one problem found at load, at its place in a file.
type FieldError struct {
	File string // the file as Load names it: flexway.yaml, the contract, the key store
	Line int    // 1-based; 0 when the place is unknown (a key that is missing)
	Path string // dotted YAML path, e.g. listeners.kafka.max_session_lifetime
	Msg  string
}

// Error formats the problem as "file:line: path: message".
func (e FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadError is every problem Load found, reported at once (SPEC C3), one per line.
type LoadError struct {
	Errors []FieldError
}

func (e *LoadError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// sortErrors orders the problems file by file (in the order given: flexway.yaml,
// then the contract, then the key store), then by line, so that the report reads
// like the files and does not depend on map iteration.
func sortErrors(errs []FieldError, fileOrder []string) {
	rank := func(f string) int {
		for i, name := range fileOrder {
			if name == f {
				return i
			}
		}
		return len(fileOrder)
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if ra, rb := rank(a.File), rank(b.File); ra != rb {
			return ra < rb
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Msg < b.Msg
	})
}
