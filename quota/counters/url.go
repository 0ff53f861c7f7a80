package counters

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
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

// ErrStoreURL is what Open's and CheckURL's errors wrap: a URL the store
// cannot use.
var ErrStoreURL = errors.New("server.counters.store: not a usable redis://, rediss://, unix://, redis-sentinel:// or redis-cluster:// URL")

// URLError is a refusal of a URL, with its reason. Neither holds the URL
// (a password may be in it).
type URLError struct{ Reason string }

func (e *URLError) Error() string { return ErrStoreURL.Error() + ": " + e.Reason }
func (e *URLError) Unwrap() error { return ErrStoreURL }

// CheckURL says whether Open would take rawURL, and if not why (a
// *URLError), without connecting.
func CheckURL(rawURL string) error {
	_, err := parseStore(rawURL)
	return err
}

// HostOf is what the store at rawURL names in the logs (Host), never a
// password: host:port, the socket, or the hosts (a Sentinel's with
// /master).
func HostOf(rawURL string) (string, error) {
	st, err := parseStore(rawURL)
	return st.host, err
}

// storeURL is a parsed server.counters.store: one of one, fail, clus.
type storeURL struct {
	host string // for the logs: host:port, the socket, hosts[/master]; never a password
	one  *redis.Options
	fail *redis.FailoverOptions
	clus *redis.ClusterOptions
}

// urlErr is a refusal: reason must not hold the URL.
func urlErr(reason string) error { return &URLError{Reason: reason} }

func parseStore(raw string) (storeURL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return storeURL{}, urlErr("no scheme")
	}
	switch scheme {
	case "redis", "rediss", "unix":
		return parseOne(raw, scheme)
	case "redis" + sentinelScheme, "rediss" + sentinelScheme:
		return parseSentinel(strings.TrimSuffix(scheme, sentinelScheme), rest)
	case "redis" + clusterScheme, "rediss" + clusterScheme:
		return parseCluster(strings.TrimSuffix(scheme, clusterScheme), rest)
	}
	return storeURL{}, urlErr(fmt.Sprintf("the scheme %q is none of these", scheme))
}

// parseOne is go-redis's ParseURL: one Redis.
func parseOne(raw, scheme string) (storeURL, error) {
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return storeURL{}, libErr(err, raw)
	}
	host := opt.Addr
	if u, err := url.Parse(raw); err == nil && scheme == "unix" {
		host = u.Path
	}
	return storeURL{host: host, one: opt}, nil
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
func parseSentinel(scheme, rest string) (storeURL, error) {
	m, err := splitMulti(rest, sentinelPort)
	if err != nil {
		return storeURL{}, err
	}
	parts := strings.Split(strings.Trim(m.path, "/"), "/")
	if parts[0] == "" || len(parts) > 2 {
		return storeURL{}, urlErr("a Sentinel URL names the primary's master name, then the database: redis-sentinel://host:26379/mymaster[/0]")
	}
	db := "0"
	if len(parts) == 2 {
		if n, err := strconv.Atoi(parts[1]); err != nil || n < 0 {
			return storeURL{}, urlErr(fmt.Sprintf("the database %q is not a number", parts[1]))
		}
		db = parts[1]
	}
	q := m.query
	if err := reserved(q, "addr", "master_name", "username", "password", "db"); err != nil {
		return storeURL{}, err
	}
	if err := readers(q, "replica_only", "route_by_latency", "route_randomly", "use_disconnected_replicas"); err != nil {
		return storeURL{}, err
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
		return storeURL{}, libErr(err, g.String())
	}
	perHostTLS(opt.TLSConfig)
	return storeURL{host: strings.Join(m.hosts, ",") + "/" + parts[0], fail: opt}, nil
}

// parseCluster rewrites the Cluster form into ParseClusterURL's:
// redis://[user:password@]host1?addr=host2&addr=host3.
func parseCluster(scheme, rest string) (storeURL, error) {
	m, err := splitMulti(rest, redisPort)
	if err != nil {
		return storeURL{}, err
	}
	if strings.Trim(m.path, "/") != "" {
		return storeURL{}, urlErr("a Redis Cluster has no database number: redis-cluster://host1:6379,host2:6379")
	}
	if err := reserved(m.query, "addr"); err != nil {
		return storeURL{}, err
	}
	if err := readers(m.query, "read_only", "route_by_latency", "route_randomly"); err != nil {
		return storeURL{}, err
	}
	g := &url.URL{Scheme: scheme, Host: m.hosts[0], User: m.user}
	for _, h := range m.hosts[1:] {
		m.query.Add("addr", h)
	}
	g.RawQuery = m.query.Encode()
	opt, err := redis.ParseClusterURL(g.String())
	if err != nil {
		return storeURL{}, libErr(err, g.String())
	}
	perHostTLS(opt.TLSConfig)
	return storeURL{host: strings.Join(m.hosts, ","), clus: opt}, nil
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

// The store's own settings, whatever the form (DESIGN.md, the go-redis
// choice): a reconciliation that fails is tried again at the next sync
// with its deltas, so no retry inside one (an INCRBY retried after a lost
// answer would count twice; in a Cluster, no redirect either: a moved slot
// fails its commands for this sync, the slot map is read again for the
// next), short timeouts (the goroutine is alone), a pool of 2 (per node).
const (
	storeTimeout = time.Second
	storePool    = 2
)

// client makes the store's client; a Sentinel's reports each connection's
// address to primary (the failover line).
func (s storeURL) client(primary *atomic.Pointer[string]) redis.UniversalClient {
	off := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	switch {
	case s.fail != nil:
		o := s.fail
		o.MaxRetries, o.PoolSize = -1, storePool
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = storeTimeout, storeTimeout, storeTimeout, storeTimeout
		o.ContextTimeoutEnabled, o.DisableIdentity = true, true
		cl := redis.NewFailoverClient(o)
		cl.AddHook(primaryHook{primary})
		return cl
	case s.clus != nil:
		o := s.clus
		o.MaxRetries, o.MaxRedirects, o.PoolSize = -1, -1, storePool
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = storeTimeout, storeTimeout, storeTimeout, storeTimeout
		o.ContextTimeoutEnabled, o.DisableIdentity = true, true
		o.MaintNotificationsConfig = off
		return redis.NewClusterClient(o)
	}
	o := s.one
	o.MaxRetries, o.PoolSize = -1, storePool
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = storeTimeout, storeTimeout, storeTimeout, storeTimeout
	o.ContextTimeoutEnabled, o.DisableIdentity = true, true
	o.MaintNotificationsConfig = off
	return redis.NewClient(o)
}

// primaryHook records the address of each connection the failover client
// opens: its own dials go to the primary the Sentinels name (theirs are
// another client's, without this hook).
type primaryHook struct{ primary *atomic.Pointer[string] }

func (h primaryHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err == nil {
			a := c.RemoteAddr().String()
			h.primary.Store(&a)
		}
		return c, err
	}
}

func (h primaryHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h primaryHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
