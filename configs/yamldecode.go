package configs

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// The decoder of a parsed doc into the configuration's types (see
// yamldoc.go for the document, its bounds and its places): goccy first, then,
// if it fails, a walk field by field that reports every unknown key and
// mistyped value at its line, in YAML words, with a "did you mean".

// decode fills v (a pointer) from the document. goccy decodes the whole
// document first: when that succeeds, its result is used as is. When it fails
// it stops at its first error, so the document is decoded again field by field
// (decodeNode) to report every unknown key and mistyped value at once, each at
// its line, and to keep what could be decoded for the semantic checks.
func (d *doc) decode(v any, strict bool) bool {
	if d.body == nil {
		return true
	}
	var opts []yaml.DecodeOption
	if strict {
		opts = append(opts, yaml.Strict())
	}
	err := yaml.NodeToValue(d.body, v, opts...)
	if err == nil {
		return true
	}
	before := len(d.r.errs)
	rv := reflect.ValueOf(v).Elem()
	rv.Set(reflect.Zero(rv.Type()))
	d.decodeNode(d.body, rv, nil, strict)
	if len(d.r.errs) == before {
		// The walk found nothing goccy did (a construct it does not follow):
		// goccy's own error, with its line, is the report.
		d.addYAMLError(nil, err)
	}
	return false
}

var (
	ifaceUnmarshaler = reflect.TypeFor[yaml.InterfaceUnmarshaler]()
	bytesUnmarshaler = reflect.TypeFor[yaml.BytesUnmarshaler]()
	nodeUnmarshaler  = reflect.TypeFor[yaml.NodeUnmarshaler]()
	textUnmarshaler  = reflect.TypeFor[encoding.TextUnmarshaler]() // time.Time and the like: scalars
)

// walked reports whether decodeNode descends into values of type t itself
// (structs, and maps and slices of them) rather than handing them to goccy.
func walked(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(ifaceUnmarshaler) || pt.Implements(bytesUnmarshaler) || pt.Implements(nodeUnmarshaler) || pt.Implements(textUnmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Map:
		return t.Key().Kind() == reflect.String && walked(t.Elem())
	case reflect.Slice:
		return walked(t.Elem())
	}
	return false
}

// decodeNode decodes n into rv (settable) and reports every problem under p.
func (d *doc) decodeNode(n ast.Node, rv reflect.Value, p path, strict bool) {
	n = d.resolve(n)
	if n == nil || n.Type() == ast.NullType {
		return // absent: the zero value
	}
	t := rv.Type()
	if !walked(t) {
		d.decodeLeaf(n, rv, p, strict)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		d.decodeNode(n, rv.Elem(), p, strict)
	case reflect.Struct:
		d.decodeStruct(n, rv, p, strict)
	case reflect.Map:
		d.decodeMap(n, rv, p, strict)
	case reflect.Slice:
		d.decodeSlice(n, rv, p, strict)
	}
}

// decodeLeaf hands n to goccy for a type decodeNode does not walk (a
// scalar, a type with its own unmarshaler); a failure is reported at p.
func (d *doc) decodeLeaf(n ast.Node, rv reflect.Value, p path, strict bool) {
	t := rv.Type()
	ptr := reflect.New(t)
	var opts []yaml.DecodeOption
	if strict {
		opts = append(opts, yaml.Strict())
	}
	if err := yaml.NodeToValue(n, ptr.Interface(), opts...); err != nil {
		d.failed = append(d.failed, p)
		d.addLeafError(n, p, t, err)
		return
	}
	rv.Set(ptr.Elem())
}

// decodeStruct decodes a mapping into the struct rv, key by key: merge keys
// applied, an unknown key reported (when strict) with the closest known one.
func (d *doc) decodeStruct(n ast.Node, rv reflect.Value, p path, strict bool) {
	ps, ok := pairs(n)
	if !ok {
		d.wrongShape(n, p, "a mapping of keys")
		return
	}
	fields := yamlFields(rv.Type())
	for _, mv := range ps {
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			d.decodeMerge(mv.Value, rv, p, strict)
			continue
		}
		k := keyText(mv.Key)
		idx, known := fields[k]
		if !known {
			if strict {
				d.r.errs = append(d.r.errs, FieldError{File: d.name, Line: nodeLine(mv.Key), Path: p.at(k).String(), Msg: "unknown key" + suggest(k, fields)})
			}
			continue
		}
		d.decodeNode(mv.Value, rv.Field(idx), p.at(k), strict)
	}
}

// decodeMap decodes a mapping into the map rv (string keys), made if nil.
func (d *doc) decodeMap(n ast.Node, rv reflect.Value, p path, strict bool) {
	ps, ok := pairs(n)
	if !ok {
		d.wrongShape(n, p, "a mapping")
		return
	}
	t := rv.Type()
	if rv.IsNil() {
		rv.Set(reflect.MakeMap(t))
	}
	for _, mv := range ps {
		k := keyText(mv.Key)
		elem := reflect.New(t.Elem()).Elem()
		d.decodeNode(mv.Value, elem, p.at(k), strict)
		rv.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
	}
}

// decodeSlice decodes a list into the slice rv, replacing what it held.
func (d *doc) decodeSlice(n ast.Node, rv reflect.Value, p path, strict bool) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.wrongShape(n, p, "a list")
		return
	}
	out := reflect.MakeSlice(rv.Type(), len(seq.Values), len(seq.Values))
	for i, item := range seq.Values {
		d.decodeNode(item, out.Index(i), p.at(i), strict)
	}
	rv.Set(out)
}

// wrongShape reports that the value at p is not the collection the type
// expects (want: "a mapping", "a list"), and marks p as failed.
func (d *doc) wrongShape(n ast.Node, p path, want string) {
	d.failed = append(d.failed, p)
	d.r.errs = append(d.r.errs, FieldError{File: d.name, Line: nodeLine(n), Path: p.String(), Msg: "expected " + want + ", found " + describeNode(n)})
}

// decodeMerge applies a merge key (<<: *base, or a list of them) to a struct.
func (d *doc) decodeMerge(n ast.Node, rv reflect.Value, p path, strict bool) {
	n = d.resolve(n)
	if seq, ok := n.(*ast.SequenceNode); ok {
		for _, item := range seq.Values {
			d.decodeNode(item, rv, p, strict)
		}
		return
	}
	d.decodeNode(n, rv, p, strict)
}

func (d *doc) addLeafError(n ast.Node, p path, t reflect.Type, err error) {
	fe := FieldError{File: d.name, Line: nodeLine(n), Path: p.String()}
	var te *yaml.TypeError
	var ye yaml.Error
	switch {
	case errors.As(err, &te):
		// goccy names Go types ("Go struct field K.N of type int"); the
		// operator wrote YAML: say what is expected in YAML words.
		fe.Msg = "expected " + describeType(t) + ", found " + describeNode(n)
	case errors.As(err, &ye):
		fe.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			fe.Line = tk.Position.Line
		}
	default:
		fe.Msg = err.Error()
	}
	if fe.Line == 0 {
		fe.Line = d.line(p)
	}
	d.r.errs = append(d.r.errs, fe)
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "an "), "a ") + "s"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

func describeNode(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.IntegerType:
		return "an integer"
	case ast.FloatType:
		return "a number"
	case ast.BoolType:
		return "a boolean"
	case ast.StringType:
		return "a string"
	case ast.NullType:
		return "nothing"
	}
	return strings.ToLower(n.Type().String())
}

var fieldCache = map[reflect.Type]map[string]int{}

// yamlFields maps the yaml keys of struct t to field indexes. Load runs
// single-threaded per call, but several Loads may run at once (tests, the
// keys command), so the cache is filled only from package init (see init).
func yamlFields(t reflect.Type) map[string]int {
	if m, ok := fieldCache[t]; ok {
		return m
	}
	return computeFields(t)
}

func computeFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = i
	}
	return m
}

func init() {
	// Warm the cache for every struct Load walks, so that yamlFields never
	// writes the map after init (it is read by concurrent Loads).
	var fill func(t reflect.Type)
	fill = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || !walked(t) {
			return
		}
		if _, done := fieldCache[t]; done {
			return
		}
		fieldCache[t] = computeFields(t)
		for i := 0; i < t.NumField(); i++ {
			fill(t.Field(i).Type)
		}
	}
	fill(reflect.TypeFor[File]())
	fill(reflect.TypeFor[asyncDoc]())
	fill(reflect.TypeFor[keyStore]())
}

// suggest names the known key closest to a mistyped one ("did you mean").
func suggest(k string, fields map[string]int) string {
	best, bestD := "", 3 // at most two edits away
	for name := range fields {
		if dd := editDistance(k, name); dd < bestD || (dd == bestD && name < best && best != "") {
			best, bestD = name, dd
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
