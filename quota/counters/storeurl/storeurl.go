// Package storeurl reads server.counters.store (issue 36 item 5, SPEC Q3):
// its forms, into go-redis's options, refused with a reason that never
// holds the URL. quota/counters opens it; configs checks it.
package storeurl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The forms of server.counters.store (issue 36 item 5; README):
//
//	redis://[user:password@]host[:6379][/db]            one Redis (rediss://: TLS)
//	unix://[user:password@]/path/redis.sock[?db=N]      one Redis on a socket
//	redis-sentinel://[user:password@]host1[:26379][,host2[:26379]...]/master[/db]
//	                                                    the primary Sentinel names,
//	                                                    followed through a failover
//	                                                    (rediss-sentinel://: TLS)
//	redis-cluster://[user:password@]host1[:6379][,host2[:6379]...]
//	                                                    a Redis Cluster, found from
//	                                                    these seeds (rediss-cluster://: TLS)
//
// user:password is the data nodes' in every form; a Sentinel that asks a
// password of its own is given it as ?sentinel_username=&sentinel_password=.
// Other query parameters are go-redis's own (ParseURL, ParseFailoverURL,
// ParseClusterURL: the forms are rewritten into theirs), though the
// settings the store makes itself (retries, timeouts, pool) win.
const (
	sentinelScheme = "-sentinel"
	clusterScheme  = "-cluster"
	sentinelPort   = "26379"
	redisPort      = "6379"
)

// ErrURL is what Parse's and Check's errors wrap: a URL the store
// cannot use.
var ErrURL = errors.New("server.counters.store: not a usable redis://, rediss://, unix://, redis-sentinel:// or redis-cluster:// URL")

// Error is a refusal of a URL, with its reason. Neither holds the URL
// (a password may be in it).
type Error struct{ Reason string }

func (e *Error) Error() string { return ErrURL.Error() + ": " + e.Reason }
func (e *Error) Unwrap() error { return ErrURL }

// Store is a parsed server.counters.store: one of One, Failover, Cluster.
type Store struct {
	Host     string // for the logs: host:port, the socket, hosts[/master]; never a password
	One      *redis.Options
	Failover *redis.FailoverOptions
	Cluster  *redis.ClusterOptions
}

// urlErr is a refusal: reason must not hold the URL.
func urlErr(reason string) error { return &Error{Reason: reason} }

// Parse reads rawURL, without connecting; its error is an *Error.
func Parse(raw string) (Store, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Store{}, urlErr("no scheme")
	}
	switch scheme {
	case "redis", "rediss", "unix":
		return parseOne(raw, scheme)
	case "redis" + sentinelScheme, "rediss" + sentinelScheme:
		return parseSentinel(strings.TrimSuffix(scheme, sentinelScheme), rest)
	case "redis" + clusterScheme, "rediss" + clusterScheme:
		return parseCluster(strings.TrimSuffix(scheme, clusterScheme), rest)
	}
	return Store{}, urlErr(fmt.Sprintf("the scheme %q is none of these", scheme))
}

// parseOne is go-redis's ParseURL: one Redis.
func parseOne(raw, scheme string) (Store, error) {
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return Store{}, libErr(err, raw)
	}
	host := opt.Addr
	if u, err := url.Parse(raw); err == nil && scheme == "unix" {
		host = u.Path
	}
	return Store{Host: host, One: opt}, nil
}

// multi is a multi-host URL's parts: the hosts (with their ports), the
// data nodes' user, the path and the query.
type multi struct {
	hosts []string
	user  *url.Userinfo
	path  string
	query url.Values
}

// splitMulti reads rest (what follows "scheme://") by hand: url.Parse
// takes one host only.
func splitMulti(rest, defPort string) (multi, error) {
	var m multi
	auth, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		u, err := url.Parse("x://" + auth[:i+1] + "h")
		if err != nil || u.User == nil {
			return m, urlErr("its user:password@ is not well formed (percent-encode reserved characters)")
		}
		m.user, auth = u.User, auth[i+1:]
	}
	list := strings.Split(auth, ",")
	for i, h := range list {
		hp, why := hostPort(h, defPort)
		if why != "" { // the host is not quoted: a password with a '/' unencoded ends up here
			return m, urlErr(fmt.Sprintf("host %d of %d: %s", i+1, len(list), why))
		}
		m.hosts = append(m.hosts, hp)
	}
	t, err := url.Parse("x://h" + tail)
	if err != nil || t.Fragment != "" {
		return m, urlErr("its path or query is not well formed")
	}
	m.path, m.query = t.Path, t.Query()
	return m, nil
}

// hostPort is h as host:port, defPort if it names none, or why not.
func hostPort(h, defPort string) (string, string) {
	host, port, err := net.SplitHostPort(h)
	if err != nil { // no port: a name, an IPv4, a bracketed IPv6
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defPort
	}
	if host == "" || strings.ContainsAny(host, "[]/@ ") {
		return "", "not a host[:port]"
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", "the port is not a number from 1 to 65535"
	}
	return net.JoinHostPort(host, port), ""
}

// reserved refuses query parameters the form sets elsewhere.
func reserved(q url.Values, names ...string) error {
	for _, n := range names {
		if q.Has(n) {
			return urlErr(fmt.Sprintf("?%s= is not taken: give it in the URL's hosts, path or user", n))
		}
	}
	return nil
}

// readers refuses go-redis's parameters that send commands to replicas:
// the store writes (and NewFailoverClient panics on two of them).
func readers(q url.Values, names ...string) error {
	for _, n := range names {
		if q.Has(n) {
			return urlErr(fmt.Sprintf("?%s= is not taken: the store writes, to the primary", n))
		}
	}
	return nil
}

// parseSentinel rewrites the Sentinel form into ParseFailoverURL's:
// redis://[sentinel_user:sentinel_password@]host1/db?master_name=m&addr=host2&username=u&password=p.
func parseSentinel(scheme, rest string) (Store, error) {
	m, err := splitMulti(rest, sentinelPort)
	if err != nil {
		return Store{}, err
	}
	parts := strings.Split(strings.Trim(m.path, "/"), "/")
	if parts[0] == "" || len(parts) > 2 {
		return Store{}, urlErr("a Sentinel URL names the primary's master name, then the database: redis-sentinel://host:26379/mymaster[/0]")
	}
	db := "0"
	if len(parts) == 2 {
		if n, err := strconv.Atoi(parts[1]); err != nil || n < 0 {
			return Store{}, urlErr(fmt.Sprintf("the database %q is not a number", parts[1]))
		}
		db = parts[1]
	}
	q := m.query
	if err := reserved(q, "addr", "master_name", "username", "password", "db"); err != nil {
		return Store{}, err
	}
	if err := readers(q, "replica_only", "route_by_latency", "route_randomly", "use_disconnected_replicas"); err != nil {
		return Store{}, err
	}
	g := &url.URL{Scheme: scheme, Host: m.hosts[0], Path: "/" + db}
	if su, sp := q.Get("sentinel_username"), q.Get("sentinel_password"); su != "" || sp != "" {
		g.User = url.UserPassword(su, sp)
	}
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Set("master_name", parts[0])
	for _, h := range m.hosts[1:] {
		q.Add("addr", h)
	}
	if m.user != nil {
		p, _ := m.user.Password()
		q.Set("username", m.user.Username())
		q.Set("password", p)
	}
	g.RawQuery = q.Encode()
	opt, err := redis.ParseFailoverURL(g.String())
	if err != nil {
		return Store{}, libErr(err, g.String())
	}
	perHostTLS(opt.TLSConfig)
	return Store{Host: strings.Join(m.hosts, ",") + "/" + parts[0], Failover: opt}, nil
}

// parseCluster rewrites the Cluster form into ParseClusterURL's:
// redis://[user:password@]host1?addr=host2&addr=host3.
func parseCluster(scheme, rest string) (Store, error) {
	m, err := splitMulti(rest, redisPort)
	if err != nil {
		return Store{}, err
	}
	if strings.Trim(m.path, "/") != "" {
		return Store{}, urlErr("a Redis Cluster has no database number: redis-cluster://host1:6379,host2:6379")
	}
	if err := reserved(m.query, "addr"); err != nil {
		return Store{}, err
	}
	if err := readers(m.query, "read_only", "route_by_latency", "route_randomly"); err != nil {
		return Store{}, err
	}
	g := &url.URL{Scheme: scheme, Host: m.hosts[0], User: m.user}
	for _, h := range m.hosts[1:] {
		m.query.Add("addr", h)
	}
	g.RawQuery = m.query.Encode()
	opt, err := redis.ParseClusterURL(g.String())
	if err != nil {
		return Store{}, libErr(err, g.String())
	}
	perHostTLS(opt.TLSConfig)
	return Store{Host: strings.Join(m.hosts, ","), Cluster: opt}, nil
}

// perHostTLS lets each node's certificate be checked against its own
// name: go-redis names the first host for all of them; with no name set,
// crypto/tls takes the one dialed.
func perHostTLS(c *tls.Config) {
	if c != nil {
		c.ServerName = ""
		c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	}
}

// libErr is a go-redis parser's refusal, kept only if it holds nothing of
// the URL it was given (url.Parse's errors quote it whole) nor a password.
func libErr(err error, given string) error {
	msg := strings.TrimPrefix(err.Error(), "redis: ")
	var ue *url.Error
	if errors.As(err, &ue) || strings.Contains(msg, "@") || leaks(msg, given) {
		return urlErr("not a well-formed URL")
	}
	return urlErr(msg)
}

func leaks(msg, given string) bool {
	u, err := url.Parse(given)
	if err != nil || strings.Contains(msg, given) {
		return true
	}
	q := u.Query()
	secrets := []string{q.Get("password"), q.Get("sentinel_password")}
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
