package configs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// path is a place in a YAML document: string segments are mapping keys, int
// segments sequence indexes. It is kept as segments (not as a goccy path
// string) because contract keys hold characters that a path string must
// quote ("$ref", "x-flexway-kafka-proxy", channel names with dots).
type path []any

// at returns p extended by more segments, never sharing p's backing array.
func (p path) at(more ...any) path {
	q := make(path, 0, len(p)+len(more))
	return append(append(q, p...), more...)
}

func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch v := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			if v == "" || strings.ContainsAny(v, ". []") {
				b.WriteString(strconv.Quote(v))
			} else {
				b.WriteString(v)
			}
		}
	}
	return b.String()
}

// hasPrefix reports whether q is p or a place under it.
func (p path) hasPrefix(q path) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// doc is one YAML file being loaded: its name (as errors show it), its AST and
// the problems found in it.
type doc struct {
	name    string
	body    ast.Node // nil for an empty file
	anchors map[string]ast.Node
	r       *report
	// failed holds the places whose value could not be decoded: a semantic
	// check at or under one of them would only repeat the decode error
	// ("required" about a value that is present but mistyped), so it is dropped.
	failed []path
}

// report collects every problem of one Load, in all its files.
type report struct {
	errs []FieldError
}

func (r *report) ok() bool { return len(r.errs) == 0 }

// What a YAML file may hold, so that a hostile one costs Load little (with
// MaxFileBytes, which bounds its size): goccy's parser spends time and memory
// quadratic in the depth of nesting (40 KB of "[" takes it 660 MB), and
// aliases multiply what the decoder and the checks walk (a "billion laughs":
// anchors of lists of aliases of anchors).
const (
	maxNesting     = 100     // levels of mappings and lists, block and flow together
	maxAliasValues = 1 << 20 // values the aliases add, each expanded
)

// parseDoc parses data into a doc; a syntax error is reported and leaves the
// doc without a body. Text that is not UTF-8, too deep a nesting and aliases
// that expand too far are refused before or right after parsing.
func parseDoc(name string, data []byte, r *report) (*doc, bool) {
	d := &doc{name: name, r: r, anchors: map[string]ast.Node{}}
	if line, msg := notText(data); msg != "" {
		r.errs = append(r.errs, FieldError{File: name, Line: line, Msg: msg})
		return d, false
	}
	tokens := lexer.Tokenize(string(data))
	if tk := tooDeep(tokens); tk != nil {
		r.errs = append(r.errs, FieldError{File: name, Line: tk.Position.Line,
			Msg: fmt.Sprintf("nested more than %d levels deep, far more than a configuration needs", maxNesting)})
		return d, false
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		d.addYAMLError(nil, err)
		return d, false
	}
	if len(f.Docs) > 1 {
		r.errs = append(r.errs, FieldError{File: name, Msg: "one YAML document expected, found " + strconv.Itoa(len(f.Docs))})
		return d, false
	}
	if len(f.Docs) == 1 {
		d.body = f.Docs[0].Body
	}
	if d.body != nil {
		ast.Walk(anchorCollector(d.anchors), d.body)
		if added, at := d.aliasValues(); added > maxAliasValues {
			r.errs = append(r.errs, FieldError{File: name, Line: nodeLine(at),
				Msg: fmt.Sprintf("its aliases expand to more than %d values (anchors of aliases of anchors: a YAML bomb?)", maxAliasValues)})
			return d, false
		}
	}
	return d, true
}

// notText names the first byte that YAML text cannot hold: one that is not
// UTF-8, or a control character other than tab, line feed and carriage
// return (YAML 1.2, 5.1). A binary file stops here, with its line.
func notText(data []byte) (line int, msg string) {
	line = 1
	for i := 0; i < len(data); {
		c, size := utf8.DecodeRune(data[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			return line, fmt.Sprintf("not YAML text: byte %d is not UTF-8 (a binary file?)", i)
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r', c == 0x7f:
			return line, fmt.Sprintf("not YAML text: byte %d is the control character %#02x (a binary file?)", i, c)
		case c == '\n':
			line++
		}
		i += size
	}
	return line, ""
}

// tooDeep returns the first token nested deeper than maxNesting: its block
// indentation level, the "- " entries before it on its line ("- - - x"
// nests three lists) and the flow collections ([ {) open around it.
func tooDeep(tokens token.Tokens) *token.Token {
	flow, line, entries := 0, 0, 0
	for _, tk := range tokens {
		if tk.Position == nil {
			continue
		}
		if tk.Position.Line != line {
			line, entries = tk.Position.Line, 0
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.SequenceEntryType:
			if flow == 0 {
				entries++
			}
		}
		if tk.Position.IndentLevel+entries+flow > maxNesting {
			return tk
		}
	}
	return nil
}

// aliasValues counts the values the document's aliases add when each is
// expanded (the anchor's values, its own aliases expanded in turn), and
// returns the alias that adds the most. The count stops a little above
// maxAliasValues: it never walks the expansion itself, each anchor is
// counted once.
func (d *doc) aliasValues() (added int, biggest ast.Node) {
	const limit = maxAliasValues + 1
	memo := map[ast.Node]int{}
	busy := map[ast.Node]bool{}
	most := 0
	var count func(n ast.Node) int // values under n, aliases expanded, at most limit
	// anchored counts an anchor's value once, whether the walk meets it
	// where it is written or through an alias first.
	anchored := func(target ast.Node) int {
		if c, ok := memo[target]; ok {
			return c
		}
		busy[target] = true
		c := count(target)
		busy[target] = false
		memo[target] = c
		return c
	}
	count = func(n ast.Node) int {
		switch v := n.(type) {
		case nil:
			return 0
		case *ast.AliasNode:
			if v.Value == nil {
				return 1
			}
			target := d.anchors[v.Value.GetToken().Value]
			if target == nil || busy[target] {
				return 1 // unknown, or an alias inside its own anchor: goccy reports it
			}
			c := anchored(target)
			if c > most {
				most, biggest = c, v
			}
			added = min(added+c, limit)
			return c
		case *ast.AnchorNode:
			if v.Value == nil {
				return 0
			}
			return anchored(v.Value)
		case *ast.TagNode:
			return count(v.Value)
		case *ast.DocumentNode:
			return count(v.Body)
		case *ast.MappingValueNode:
			return min(count(v.Key)+count(v.Value), limit)
		case *ast.MappingNode:
			c := 1
			for _, mv := range v.Values {
				c = min(c+count(mv), limit)
			}
			return c
		case *ast.SequenceNode:
			c := 1
			for _, item := range v.Values {
				c = min(c+count(item), limit)
			}
			return c
		case *ast.CommentGroupNode, *ast.CommentNode:
			return 0
		}
		return 1
	}
	count(d.body)
	return added, biggest
}

type anchorCollector map[string]ast.Node

func (a anchorCollector) Visit(n ast.Node) ast.Visitor {
	if an, ok := n.(*ast.AnchorNode); ok && an.Name != nil {
		a[an.Name.GetToken().Value] = an.Value
	}
	return a
}

// errorf reports a problem at p; its line is looked up in the AST.
func (d *doc) errorf(p path, format string, args ...any) {
	for _, f := range d.failed {
		if p.hasPrefix(f) {
			return
		}
	}
	d.r.errs = append(d.r.errs, FieldError{File: d.name, Line: d.line(p), Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// addYAMLError reports an error of goccy's parser or decoder at p, with the
// line of its token when it has one.
func (d *doc) addYAMLError(p path, err error) {
	fe := FieldError{File: d.name, Path: p.String(), Msg: err.Error()}
	var ye yaml.Error
	if errors.As(err, &ye) {
		fe.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			fe.Line = tk.Position.Line
		}
	}
	if fe.Line == 0 && p != nil {
		fe.Line = d.line(p)
	}
	d.r.errs = append(d.r.errs, fe)
}

// resolve looks through anchors, aliases and tags to the node that holds the value.
func (d *doc) resolve(n ast.Node) ast.Node {
	for i := 0; i < 16 && n != nil; i++ { // bounded: an alias cycle must not hang Load
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			a, ok := d.anchors[v.Value.GetToken().Value]
			if !ok {
				return nil
			}
			n = a
		default:
			return n
		}
	}
	return n
}

// pairs returns the key/value pairs of a mapping node, nil if n is no mapping.
func pairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := n.(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

func keyText(k ast.Node) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if k == nil || k.GetToken() == nil {
		return ""
	}
	return k.GetToken().Value
}

func nodeLine(n ast.Node) int {
	if n == nil || n.GetToken() == nil || n.GetToken().Position == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

// find returns the pair of key in mapping n, looking into merge keys (<<) too.
func (d *doc) find(n ast.Node, key string) *ast.MappingValueNode {
	ps, ok := pairs(d.resolve(n))
	if !ok {
		return nil
	}
	for _, mv := range ps {
		if _, merge := mv.Key.(*ast.MergeKeyNode); !merge && keyText(mv.Key) == key {
			return mv
		}
	}
	for _, mv := range ps {
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			if found := d.find(mv.Value, key); found != nil {
				return found
			}
		}
	}
	return nil
}

// lookup walks p down the AST. It returns the deepest node reached, the line
// of its key (a mapping value) or of itself (a sequence item), and whether all
// of p was found. Reporting the key's line rather than the value's matters for
// block values: "kafka:" is where the operator looks, not its first child.
func (d *doc) lookup(p path) (node ast.Node, line int, found bool) {
	node = d.body
	for _, seg := range p {
		switch s := seg.(type) {
		case string:
			mv := d.find(node, s)
			if mv == nil {
				return node, line, false
			}
			node, line = mv.Value, nodeLine(mv.Key)
		case int:
			seq, ok := d.resolve(node).(*ast.SequenceNode)
			if !ok || s < 0 || s >= len(seq.Values) {
				return node, line, false
			}
			node = seq.Values[s]
			line = nodeLine(node)
		}
	}
	return node, line, true
}

// line is the line of p, or of its deepest ancestor present in the file, or 0.
func (d *doc) line(p path) int {
	_, l, _ := d.lookup(p)
	return l
}

// has reports whether p is written in the file (even with a null value).
func (d *doc) has(p path) bool {
	_, _, found := d.lookup(p)
	return found
}

// keys returns the keys written in the mapping at p, in file order.
func (d *doc) keys(p path) []string {
	n, _, found := d.lookup(p)
	if !found {
		return nil
	}
	ps, _ := pairs(d.resolve(n))
	out := make([]string, 0, len(ps))
	for _, mv := range ps {
		out = append(out, keyText(mv.Key))
	}
	return out
}
