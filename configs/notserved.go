package configs

// The keys this version reads and does not serve (issue 13, item 7): their
// feature is not built yet. A flexway.yaml that writes one does not load, and
// the report names the key: accepted and ignored, it would promise a quota, an
// encrypted link to the brokers or an audit that does not exist.
//
// Their types and checks stay, for the version that serves them: serving one
// is deleting its row here. A key is refused when it is written, whatever its value (even
// empty): the defaults of what it configures are what runs.

// notServed is the one list of those keys.
var notServed = []struct {
	key path   // one "*" at most: it stands for each name of the mapping above it
	why string // the feature missing, in the report's parentheses
	// drop forgets the key's value before the checks run, so that no check
	// judges a value that is refused whole (name is the "*" segment's match).
	drop func(f *File, name string)
}{
	// Empty: every key this version reads is served (issues 8, 9, 10).
}

// refuseNotServed reports each key of notServed written in flexway.yaml and
// drops its value. It runs before the defaults and the checks.
func (l *loader) refuseNotServed() {
	if l.servingUnbuilt {
		return
	}
	d := l.cfg
	for _, ns := range notServed {
		for _, m := range d.expand(ns.key) {
			// Reported even under a value that did not decode (errorf
			// would drop it there): the refusal is what to fix first.
			d.r.errs = append(d.r.errs, FieldError{File: d.name, Line: d.line(m.p), Path: m.p.String(),
				Msg: "not served by this version (" + ns.why + "): remove it"})
			ns.drop(l.f, m.name)
		}
	}
}

type expanded struct {
	p    path
	name string // what "*" matched, "" without one
}

// expand returns the places written in the file that p names, "*" standing
// for each key of the mapping above it.
func (d *doc) expand(p path) []expanded {
	for i, seg := range p {
		if seg != "*" {
			continue
		}
		var out []expanded
		for _, name := range d.keys(p[:i]) {
			q := p[:i].at(name).at(p[i+1:]...)
			if d.has(q) {
				out = append(out, expanded{q, name})
			}
		}
		return out
	}
	if d.has(p) {
		return []expanded{{p, ""}}
	}
	return nil
}
