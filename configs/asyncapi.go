package configs

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The AsyncAPI 3.0 contract, as far as the Kafka listener reads it (seed 001
// "La convention du contrat", SPEC C1, C2). It is read leniently: a contract
// carries info, messages, payload schemas, OAuth flows... that are not ours to
// judge. Only the x-flexway-kafka-proxy extension is ours, so its keys are
// checked strictly (unknown keys in it are errors).
//
// Seed 002 also refuses a served AsyncAPI operation whose id equals an OpenAPI
// operation's (a key bound to one would open the other): that check does not
// apply here, this product has no OpenAPI contract.

type asyncDoc struct {
	AsyncAPI   string                     `yaml:"asyncapi"`
	Channels   map[string]*asyncChannel   `yaml:"channels"`
	Operations map[string]*asyncOperation `yaml:"operations"`
	Components asyncComponents            `yaml:"components"`
}

type asyncComponents struct {
	SecuritySchemes map[string]*asyncScheme    `yaml:"securitySchemes"`
	Parameters      map[string]*asyncParameter `yaml:"parameters"`
}

type asyncChannel struct {
	Address    *string                    `yaml:"address"` // null in AsyncAPI means "dynamic": not servable
	Parameters map[string]*asyncParameter `yaml:"parameters"`
}

type asyncParameter struct {
	Ref  string `yaml:"$ref"`
	Bind string `yaml:"x-flexway-bind"`
}

type asyncOperation struct {
	Action     string         `yaml:"action"`
	Channel    asyncRef       `yaml:"channel"`
	Upstream   string         `yaml:"x-flexway-upstream"`
	Proxy      *kafkaProxy    `yaml:"x-flexway-kafka-proxy"`
	Security   []*asyncScheme `yaml:"security"` // each a $ref or an inline scheme
	Validation string         `yaml:"x-flexway-validation"`
}

type asyncRef struct {
	Ref string `yaml:"$ref"`
}

type kafkaProxy struct {
	Cluster      string `yaml:"cluster"`
	Transactions bool   `yaml:"transactions"`
	AdminScope   string `yaml:"admin_scope"`
}

var kafkaProxyKeys = []string{"cluster", "transactions", "admin_scope"}

// asyncScheme is an AsyncAPI 3 Security Scheme Object, or a Reference to one.
type asyncScheme struct {
	Ref    string   `yaml:"$ref"`
	Type   string   `yaml:"type"`
	In     string   `yaml:"in"`
	Scopes []string `yaml:"scopes"`
}

const (
	channelsRef = "#/channels/"
	schemesRef  = "#/components/securitySchemes/"
	paramsRef   = "#/components/parameters/"
)

// refName returns the name a local JSON pointer "#/<section>/<name>" points
// at, unescaped (RFC 6901: ~1 is '/', ~0 is '~').
func refName(ref, section string) (string, bool) {
	name, ok := strings.CutPrefix(ref, section)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~"), true
}

func (l *loader) loadContract() {
	if l.f.Contracts.AsyncAPI == "" {
		return
	}
	name := filepath.Clean(l.resolve(l.f.Contracts.AsyncAPI))
	l.contractName = name
	data, err := readConfigFile(name)
	if err != nil {
		l.cfg.errorf(path{"contracts", "asyncapi"}, "cannot read %s: %s", name, unwrapPathError(err))
		return
	}
	d, ok := parseDoc(name, data, &l.r)
	if !ok {
		return
	}
	if d.body == nil {
		l.r.errs = append(l.r.errs, FieldError{File: name, Msg: "empty: an AsyncAPI 3 contract is expected (asyncapi: 3.0.0, channels, operations)"})
		return
	}
	l.contract = d
	var a asyncDoc
	// A contract that did not decode whole still has its operations judged,
	// but the checks that need the full list of served operations (a key's
	// operations, undeclared fallback ports) would only add false reports.
	l.contractOK = d.decode(&a, false)
	l.checkContract(d, &a)
}

// checkContract checks every served operation and its channel, and builds
// l.ops and l.clusters.
func (l *loader) checkContract(d *doc, a *asyncDoc) {
	if !strings.HasPrefix(a.AsyncAPI, "3.") {
		d.errorf(path{"asyncapi"}, "%q: an AsyncAPI 3 contract is expected (asyncapi: 3.0.0)", a.AsyncAPI)
	}
	l.ops = map[string]*Operation{}
	l.clusters = map[string]*Cluster{}
	prefixes := map[string]string{} // channel key -> its checked prefix
	checked := map[string]bool{}

	for _, id := range sortedKeys(a.Operations) {
		if op := l.checkOperation(d, a, id, prefixes, checked); op != nil {
			l.ops[id] = op
		}
	}
	l.checkKafkaListenerDeclared(d)
	l.checkUpstreamsOfContract(d, prefixes)
	l.buildClusters(prefixes)
}

// checkOperation checks the operation id if it is served to Kafka clients
// (it has x-flexway-kafka-proxy) and returns it, nil if it is not served.
// Its channel is checked the first time an operation names it (checked),
// its prefix recorded in prefixes if good.
func (l *loader) checkOperation(d *doc, a *asyncDoc, id string, prefixes map[string]string, checked map[string]bool) *Operation {
	o := a.Operations[id]
	p := path{"operations", id}
	pp := p.at("x-flexway-kafka-proxy")
	if o == nil || (o.Proxy == nil && !d.has(pp)) {
		return nil // not served to Kafka clients: another listener's business
	}
	proxy := o.Proxy
	if proxy == nil {
		proxy = &kafkaProxy{}
	}
	for _, k := range d.keys(pp) {
		if !slices.Contains(kafkaProxyKeys, k) {
			d.errorf(pp.at(k), "unknown key (x-flexway-kafka-proxy has %s)", strings.Join(kafkaProxyKeys, ", "))
		}
	}
	op := &Operation{
		ID:           id,
		Action:       o.Action,
		Cluster:      proxy.Cluster,
		Upstream:     o.Upstream,
		Transactions: proxy.Transactions,
		AdminScope:   proxy.AdminScope,
	}
	l.checkOperationFields(d, p, o, proxy, op)
	op.Channel = l.checkOperationChannel(d, p, o, a, prefixes, checked)
	l.checkSecurity(d, p, o, a, op)
	return op
}

// checkOperationFields checks a served operation's action, its proxy's
// cluster and transactions, its upstream and its validation; a cluster that
// is not a DNS label is taken out of op, so that no cluster is built under it.
func (l *loader) checkOperationFields(d *doc, p path, o *asyncOperation, proxy *kafkaProxy, op *Operation) {
	pp := p.at("x-flexway-kafka-proxy")
	switch o.Action {
	case "send", "receive":
	case "":
		d.errorf(p.at("action"), "required: send (the client produces) or receive (it reads)")
	default:
		d.errorf(p.at("action"), "%q is not an action: send or receive", o.Action)
	}
	if proxy.Transactions && o.Action == "receive" {
		d.errorf(pp.at("transactions"), "transactions open the transactional producer: a send operation's, not a receive one's")
	}
	switch {
	case proxy.Cluster == "":
		d.errorf(pp.at("cluster"), "required: the virtual cluster serving the operation (a DNS label)")
	case !isDNSLabel(proxy.Cluster):
		d.errorf(pp.at("cluster"), "%q is not a DNS label (lower-case letters, digits and '-', at most 63): clients reach it as bootstrap.<cluster>.<sni_domain>", proxy.Cluster)
		op.Cluster = "" // judged once: no cluster is built under a bad name
	}
	switch {
	case o.Upstream == "":
		d.errorf(p.at("x-flexway-upstream"), "required: the flexway.yaml upstream whose brokers hold the topic")
	case l.f.Upstreams[o.Upstream] == nil:
		d.errorf(p.at("x-flexway-upstream"), "unknown upstream %q (flexway.yaml declares: %s)", o.Upstream, listOrNone(sortedKeys(l.f.Upstreams)))
	}
	if o.Validation == "full" {
		d.errorf(p.at("x-flexway-validation"), "full validation decodes every record, and the listener relays record batches undecoded")
	}
}

// checkOperationChannel checks a served operation's channel reference and
// returns the channel's key, "" if it names none of the contract's. The
// channel itself is checked once, by the first operation naming it.
func (l *loader) checkOperationChannel(d *doc, p path, o *asyncOperation, a *asyncDoc, prefixes map[string]string, checked map[string]bool) string {
	key, ok := refName(o.Channel.Ref, channelsRef)
	switch {
	case o.Channel.Ref == "":
		d.errorf(p.at("channel"), "required: { $ref: \"#/channels/<name>\" }")
	case !ok:
		d.errorf(p.at("channel", "$ref"), "%q: a channel of this contract expected (#/channels/<name>)", o.Channel.Ref)
	case a.Channels[key] == nil:
		d.errorf(p.at("channel", "$ref"), "unknown channel %q", key)
	default:
		if !checked[key] {
			checked[key] = true
			if prefix, ok := l.checkChannel(d, key, a.Channels[key], a); ok {
				prefixes[key] = prefix
			}
		}
		return key
	}
	return ""
}

// checkKafkaListenerDeclared refuses served operations without
// listeners.kafka: said once, at the first served operation in the file.
func (l *loader) checkKafkaListenerDeclared(d *doc) {
	if l.f.Listeners.Kafka != nil || len(l.ops) == 0 {
		return
	}
	first, firstLine := "", 0
	for id := range l.ops {
		if line := d.line(path{"operations", id, "x-flexway-kafka-proxy"}); first == "" || line < firstLine || (line == firstLine && id < first) {
			first, firstLine = id, line
		}
	}
	d.errorf(path{"operations", first, "x-flexway-kafka-proxy"}, "served to Kafka clients, but flexway.yaml declares no listeners.kafka")
}

// checkChannel checks a served channel: its key is a topic name, its address
// <prefix>{tenant}.<key>, its one parameter bound to the tenant. It returns
// the prefix.
func (l *loader) checkChannel(d *doc, key string, ch *asyncChannel, a *asyncDoc) (string, bool) {
	p := path{"channels", key}
	good := true
	if msg := topicNameProblem(key); msg != "" {
		d.errorf(p, "the channel's key is the topic name clients see, and %q %s", key, msg)
		good = false
	}
	if ch.Address == nil {
		d.errorf(p.at("address"), "required: \"<prefix>{tenant}.%s\"", key)
		return "", false
	}
	addr := *ch.Address
	open, end := strings.IndexByte(addr, '{'), strings.IndexByte(addr, '}')
	if open < 0 || end < open || strings.Count(addr, "{") != 1 || strings.Count(addr, "}") != 1 || addr[end+1:] != "."+key {
		d.errorf(p.at("address"), "%q is not \"<prefix>{tenant}.%s\": the tenant, then the channel's key", addr, key)
		return "", false
	}
	param, prefix := addr[open+1:end], addr[:open]
	if prefix != "" {
		if !strings.HasSuffix(prefix, ".") || topicNameProblem(strings.TrimSuffix(prefix, ".")) != "" {
			d.errorf(p.at("address"), "prefix %q: empty, or topic-name characters ending with '.' (and not starting with __)", prefix)
			good = false
		}
	}
	// The shortest tenant is one character: the physical name must still fit.
	if n := len(prefix) + 1 + 1 + len(key); n > 249 {
		d.errorf(p.at("address"), "the physical topic name would exceed Kafka's 249 characters")
		good = false
	}
	prm := ch.Parameters[param]
	switch {
	case len(ch.Parameters) == 0 || prm == nil:
		d.errorf(p.at("parameters"), "required: parameter %s with x-flexway-bind: tenant", param)
		return prefix, false
	case len(ch.Parameters) > 1:
		d.errorf(p.at("parameters"), "the address has one parameter, the tenant: %s declared", strings.Join(sortedKeys(ch.Parameters), ", "))
		good = false
	}
	pp := p.at("parameters", param)
	if prm.Ref != "" {
		name, ok := refName(prm.Ref, paramsRef)
		if prm = a.Components.Parameters[name]; !ok || prm == nil {
			d.errorf(pp.at("$ref"), "%q: a parameter of #/components/parameters/ expected", ch.Parameters[param].Ref)
			return prefix, false
		}
	}
	if prm.Bind != "tenant" {
		d.errorf(pp, "x-flexway-bind: tenant required: the address's parameter is the tenant")
		good = false
	}
	return prefix, good
}

// checkSecurity reads the operation's alternatives into op and checks that the
// listener verifies each, with what it needs declared in flexway.yaml.
func (l *loader) checkSecurity(d *doc, p path, o *asyncOperation, a *asyncDoc, op *Operation) {
	sp := p.at("security")
	if len(o.Security) == 0 {
		d.errorf(sp, "required: who may use a served operation (plain, oauth2 or openIdConnect with scopes, X509)")
		return
	}
	k := l.f.Listeners.Kafka
	for i, alt := range o.Security {
		ap := sp.at(i)
		desc := "an inline scheme"
		s := alt
		switch {
		case alt != nil && alt.Ref != "":
			name, ok := refName(alt.Ref, schemesRef)
			if !ok {
				d.errorf(ap, "%q: a scheme of #/components/securitySchemes/ expected", alt.Ref)
				continue
			}
			if s = a.Components.SecuritySchemes[name]; s == nil {
				d.errorf(ap, "unknown security scheme %q", name)
				continue
			}
			desc = fmt.Sprintf("scheme %q", name)
		case alt == nil || len(d.keys(ap)) == 0:
			d.errorf(ap, "an empty alternative makes the operation public: every client could use it")
			continue
		case alt.Type == "":
			d.errorf(ap, "neither a $ref to #/components/securitySchemes/ nor a scheme with a type (AsyncAPI 3 lists schemes, not name: [scopes])")
			continue
		}
		switch s.Type {
		case "plain":
			op.Plain = true
		case "apiKey":
			if s.In != "password" {
				d.errorf(ap, "%s: apiKey in %q is not verified by the Kafka listener: only in: password, read as SASL PLAIN", desc, s.In)
				continue
			}
			op.Plain = true
		case "oauth2", "openIdConnect":
			if len(s.Scopes) == 0 {
				d.errorf(ap, "%s: %s without scopes would admit every token of the issuers: list the scopes it requires", desc, s.Type)
				continue
			}
			op.OAuthScopes = append(op.OAuthScopes, append([]string(nil), s.Scopes...))
			if len(l.f.Auth.Issuers) == 0 {
				d.errorf(ap, "%s admits tokens, and flexway.yaml declares no auth.issuers to verify them", desc)
			}
			continue
		case "X509":
			op.X509 = true
			if k == nil || k.TLS == nil || k.TLS.ClientCAFile == "" {
				d.errorf(ap, "%s admits client certificates, and flexway.yaml declares no listeners.kafka.tls.client_ca_file to verify them", desc)
			}
			continue
		case "":
			d.errorf(ap, "%s has no type", desc)
			continue
		default:
			d.errorf(ap, "%s: type %s is not verified by the Kafka listener (it verifies plain, apiKey in password, oauth2, openIdConnect, X509)", desc, s.Type)
			continue
		}
		// plain, or apiKey in password
		if l.f.Auth.APIKeys == nil {
			d.errorf(ap, "%s admits API keys, and flexway.yaml declares no auth.api_keys to hold them", desc)
		}
	}
}

// checkUpstreamsOfContract checks what joins operations to upstreams: one
// upstream per cluster, one prefix per upstream (and per broker shared by two
// upstreams), no two channel names that Kafka confuses.
func (l *loader) checkUpstreamsOfContract(d *doc, prefixes map[string]string) {
	clusterUpstream := map[string]string{}
	l.upstreamPrefix = map[string]string{}
	prefixChannel := map[string]string{} // upstream -> the channel that set its prefix
	confusable := map[string]map[string]string{}
	for _, id := range sortedKeys(l.ops) {
		op := l.ops[id]
		if op.Upstream == "" || l.f.Upstreams[op.Upstream] == nil {
			continue // reported: nothing to join
		}
		if op.Cluster != "" {
			if u, seen := clusterUpstream[op.Cluster]; seen && u != op.Upstream {
				d.errorf(path{"operations", id, "x-flexway-upstream"}, "cluster %q is served by upstream %q already: a virtual cluster has one upstream", op.Cluster, u)
			} else if !seen {
				clusterUpstream[op.Cluster] = op.Upstream
			}
		}
		if prefix, ok := prefixes[op.Channel]; ok {
			if pr, seen := l.upstreamPrefix[op.Upstream]; seen && pr != prefix {
				d.errorf(path{"channels", op.Channel, "address"}, "prefix %q, but upstream %q serves channel %q under prefix %q: one prefix per upstream", prefix, op.Upstream, prefixChannel[op.Upstream], pr)
			} else if !seen {
				l.upstreamPrefix[op.Upstream] = prefix
				prefixChannel[op.Upstream] = op.Channel
			}
		}
		if op.Channel != "" {
			// Kafka reads '.' and '_' as one character in its metrics and
			// refuses a topic that collides that way with another.
			norm := strings.ReplaceAll(op.Channel, ".", "_")
			if confusable[op.Upstream] == nil {
				confusable[op.Upstream] = map[string]string{}
			}
			if other, seen := confusable[op.Upstream][norm]; seen && other != op.Channel {
				d.errorf(path{"channels", op.Channel}, "Kafka confuses %q with channel %q ('.' and '_' read as one character) on upstream %q", op.Channel, other, op.Upstream)
			} else if !seen {
				confusable[op.Upstream][norm] = op.Channel
			}
		}
	}
	// Two upstreams that reach one broker are one physical cluster: two
	// prefixes on it would let one tenant's names be read under another's.
	// (The cluster id read at first connection catches what addresses hide, U3.)
	names := sortedKeys(l.f.Upstreams)
	for i, a := range names {
		pa, ok := l.upstreamPrefix[a]
		if !ok || l.f.Upstreams[a] == nil {
			continue
		}
		for _, b := range names[i+1:] {
			pb, ok := l.upstreamPrefix[b]
			if !ok || l.f.Upstreams[b] == nil || pa == pb {
				continue
			}
			for j, addr := range l.f.Upstreams[b].Brokers {
				if slices.IndexFunc(l.f.Upstreams[a].Brokers, func(s string) bool { return normBroker(s) == normBroker(addr) }) >= 0 {
					l.cfg.errorf(path{"upstreams", b, "brokers", j}, "%q is a broker of upstream %q too, which the contract serves under prefix %q, and this one under %q: one prefix per physical cluster", addr, a, pa, pb)
					break
				}
			}
		}
	}
}

func (l *loader) buildClusters(prefixes map[string]string) {
	var plaintext map[string]*PlaintextCluster
	if k := l.f.Listeners.Kafka; k != nil && k.Plaintext != nil {
		plaintext = k.Plaintext.Clusters
	}
	for _, id := range sortedKeys(l.ops) {
		op := l.ops[id]
		if op.Cluster == "" {
			continue
		}
		c := l.clusters[op.Cluster]
		if c == nil {
			c = &Cluster{
				Name:      op.Cluster,
				Upstream:  op.Upstream,
				Prefix:    l.upstreamPrefix[op.Upstream],
				Topics:    map[string]*Topic{},
				Plaintext: plaintext[op.Cluster],
			}
			l.clusters[op.Cluster] = c
		}
		c.Plain = c.Plain || op.Plain
		c.OAuth = c.OAuth || len(op.OAuthScopes) > 0
		c.X509 = c.X509 || op.X509
		if op.Channel == "" {
			continue
		}
		t := c.Topics[op.Channel]
		if t == nil {
			t = &Topic{Name: op.Channel}
			c.Topics[op.Channel] = t
		}
		switch op.Action {
		case "send":
			t.Send = append(t.Send, op)
		case "receive":
			t.Receive = append(t.Receive, op)
		}
	}
	for _, c := range l.clusters {
		for _, t := range c.Topics {
			sort.Slice(t.Send, func(i, j int) bool { return t.Send[i].ID < t.Send[j].ID })
			sort.Slice(t.Receive, func(i, j int) bool { return t.Receive[i].ID < t.Receive[j].ID })
		}
	}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
