package configs

import (
	"crypto/sha256"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Load reads flexway.yaml at path, the AsyncAPI contract it names
// (contracts.asyncapi) and the API-key store (auth.api_keys.store), applies the
// seeds' defaults, checks everything and returns the Snapshot. Relative paths
// in flexway.yaml are read from its folder, whatever the working directory.
//
// Every problem is reported at once (SPEC C3): the error is a *LoadError
// whose lines read "file:line: yaml.path: message". Secrets are never part
// of an error.
//
// Load touches no shared state: a reload calls it from any goroutine, then
// compares the result with the Snapshot in force (StartOnlyDiff).
func Load(path string) (*Snapshot, error) {
	return load(path, false)
}

// load is Load; servingUnbuilt accepts the keys of notServed, for the tests
// that keep their checks alive until their feature is built.
func load(path string, servingUnbuilt bool) (*Snapshot, error) {
	l := &loader{path: filepath.Clean(path), dir: filepath.Dir(path), now: time.Now(), servingUnbuilt: servingUnbuilt}
	snap := l.load()
	if !l.r.ok() {
		errs := l.r.errs
		sortErrors(errs, []string{l.path, l.contractName, l.storeName})
		return nil, &LoadError{Errors: slices.Compact(errs)}
	}
	return snap, nil
}

// loader is the state of one Load.
type loader struct {
	path string // flexway.yaml as the caller named it
	dir  string // its folder: relative paths are read from there
	now  time.Time
	r    report
	// servingUnbuilt: the keys of notServed load (tests only, see load).
	servingUnbuilt bool

	cfg *doc
	f   *File

	contractName string
	contract     *doc
	contractOK   bool // parsed: its operations can be checked against

	storeName string
	store     *doc

	ops      map[string]*Operation
	clusters map[string]*Cluster
	// served channels' prefixes per upstream, for the broker-sharing check.
	upstreamPrefix map[string]string
	keys           map[string]*APIKey

	// files hashes flexway.yaml and the key store as read: the audit's
	// topic key when audit.topic_key is absent (checkAudit).
	files hash.Hash
}

func (l *loader) load() *Snapshot {
	data, err := readConfigFile(l.path)
	if err != nil {
		l.r.errs = append(l.r.errs, FieldError{File: l.path, Msg: "cannot read: " + unwrapPathError(err)})
		return nil
	}
	l.files = sha256.New()
	l.files.Write(data)
	d, ok := parseDoc(l.path, data, &l.r)
	if !ok {
		return nil
	}
	if d.body == nil {
		// Said alone: "version: required" and the rest would hide that
		// the file holds nothing (a truncated copy, the wrong path).
		l.r.errs = append(l.r.errs, FieldError{File: l.path, Msg: "empty: nothing is configured (a flexway.yaml starts with version: 1; see configs/quickstart/flexway.yaml)"})
		return nil
	}
	l.cfg = d
	l.f = &File{}
	d.decode(l.f, true)
	l.refuseNotServed()
	applyDefaults(l.f)

	l.checkFile()
	l.loadContract()
	l.loadKeyStore()
	l.crossCheck()

	if !l.r.ok() {
		return nil
	}
	snap := &Snapshot{
		Path:       l.path,
		File:       l.f,
		Listener:   l.f.Listeners.Kafka,
		Clusters:   l.clusters,
		Operations: l.ops,
		Upstreams:  l.f.Upstreams,
		Keys:       l.keys,
		LoadedAt:   l.now,

		ContractPath: l.contractName,
		KeyStorePath: l.storeName,
	}
	if snap.Upstreams == nil {
		snap.Upstreams = map[string]*Upstream{}
	}
	if m := l.f.Auth.MTLS; m != nil {
		for i := range m.Clients {
			snap.Clients = append(snap.Clients, &m.Clients[i])
		}
	}
	return snap
}

// resolve reads a path of flexway.yaml from its folder.
func (l *loader) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.dir, p)
}

// readSecret replaces a "file:PATH" secret by the file's content, its
// trailing newline trimmed (the way secrets are mounted). The content never
// appears in an error.
func (l *loader) readSecret(s *Secret, p path) {
	ref, isFile := strings.CutPrefix(string(*s), "file:")
	if !isFile {
		return
	}
	name := l.resolve(ref)
	data, err := readConfigFile(name)
	if err != nil {
		l.cfg.errorf(p, "cannot read the secret's file %s: %s", name, unwrapPathError(err))
		*s = ""
		return
	}
	v := strings.TrimRight(string(data), "\r\n")
	if v == "" {
		l.cfg.errorf(p, "the secret's file %s is empty", name)
	}
	*s = Secret(v)
}

// unwrapPathError keeps the cause of an *os.PathError: the path is said by the
// caller, once.
func unwrapPathError(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
