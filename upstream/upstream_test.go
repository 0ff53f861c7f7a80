package upstream

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// embedded is upstreams.<name> with an embedded cluster, as configs.Load
// leaves it (defaults applied), on free ports.
func embedded(brokers int, partitions int32) *configs.Upstream {
	return &configs.Upstream{
		Protocol: "kafka",
		Timeout:  configs.Duration(configs.DefaultUpstreamTimeout),
		Embedded: &configs.Embedded{Brokers: brokers, Host: configs.DefaultEmbeddedHost, Partitions: partitions},
	}
}

func start(t *testing.T, cfg *configs.Upstream, seedTopics ...string) *Upstream {
	t.Helper()
	u, err := Start(context.Background(), "events", cfg, seedTopics)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(u.Close)
	return u
}

// The address book after Start: every embedded broker by its node id, the
// bootstrap in turn over all of them, each broker's versions read.
func TestStartEmbeddedAddressBook(t *testing.T) {
	u := start(t, embedded(2, 2), "acme.orders")
	addrs := u.EmbeddedAddrs()
	if len(addrs) != 2 {
		t.Fatalf("EmbeddedAddrs = %v, want 2 brokers", addrs)
	}
	var nodes []string
	for node := int32(0); node < 2; node++ {
		a, ok := u.Addr(node)
		if !ok || !slices.Contains(addrs, a) {
			t.Fatalf("Addr(%d) = %q, %v; want one of %v", node, a, ok, addrs)
		}
		nodes = append(nodes, a)
	}
	if nodes[0] == nodes[1] {
		t.Fatalf("nodes 0 and 1 share the address %s", nodes[0])
	}
	if a, ok := u.Addr(2); ok {
		t.Fatalf("Addr(2) = %q on a two-broker cluster, want unknown", a)
	}
	seen := map[string]int{}
	for range 4 {
		a, ok := u.Addr(-1)
		if !ok {
			t.Fatal("Addr(-1): no bootstrap address")
		}
		seen[a]++
	}
	if seen[nodes[0]] != 2 || seen[nodes[1]] != 2 {
		t.Fatalf("bootstrap addresses over 4 calls: %v, want each broker twice", seen)
	}
	vs := u.Versions()
	if len(vs) != 2 {
		t.Fatalf("Versions: %d answers, want one per broker (2)", len(vs))
	}
	for i, v := range vs {
		if !slices.ContainsFunc(v.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == 0 }) {
			t.Fatalf("broker %d's versions do not list Produce: %+v", i, v.ApiKeys)
		}
	}
	if u.Name() != "events" || u.Embedded() == nil {
		t.Fatalf("Name %q, Embedded %v", u.Name(), u.Embedded())
	}

	// The seed topic exists with the configured partitions.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("acme.orders")
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("seed topic acme.orders: %+v, want 2 partitions", resp.Topics)
	}
}

// Learn moves a node's address (Metadata answers passing through); a new
// node becomes known; Refresh reads the brokers' own addresses again.
func TestLearnAndRefresh(t *testing.T) {
	u := start(t, embedded(1, 1))
	own, _ := u.Addr(0)
	u.Learn(0, "kafka-0.internal", 9092)
	if a, _ := u.Addr(0); a != "kafka-0.internal:9092" {
		t.Fatalf("Addr(0) after Learn = %q", a)
	}
	u.Learn(7, "::1", 9093)
	if a, ok := u.Addr(7); !ok || a != "[::1]:9093" {
		t.Fatalf("Addr(7) after Learn = %q, %v; want [::1]:9093", a, ok)
	}
	if err := u.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a, _ := u.Addr(0); a != own {
		t.Fatalf("Addr(0) after Refresh = %q, want the broker's own %q", a, own)
	}
}

// Dial hands over a connection a Kafka request can be written to at once.
func TestDialBroker(t *testing.T) {
	u := start(t, embedded(1, 1))
	addr, _ := u.Addr(0)
	nc, err := u.Dial(context.Background(), addr)
	if err != nil {
		t.Fatalf("Dial %s: %v", addr, err)
	}
	defer nc.Close()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 42)
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	var head [8]byte
	if _, err := io.ReadFull(nc, head[:]); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if corr := int32(binary.BigEndian.Uint32(head[4:])); corr != 42 {
		t.Fatalf("answer's correlation id %d, want 42", corr)
	}
}

// A broker that does not answer the connection fails the dial at the
// configured timeout, not the system's.
func TestDialTimeout(t *testing.T) {
	addr := fullListener(t)
	cfg := &configs.Upstream{Protocol: "kafka", Brokers: []string{addr}, Timeout: configs.Duration(300 * time.Millisecond)}
	u := &Upstream{name: "events", cfg: cfg, nodes: map[int32]string{}}
	// A dial that ignored the configured timeout would end at this
	// deadline instead (or at the system's, minutes), far past the bound
	// below, which a busy machine does not reach.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	nc, err := u.Dial(ctx, addr)
	took := time.Since(began)
	if err == nil {
		nc.Close()
		t.Fatal("Dial succeeded on a full listen queue")
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Dial: %v, want a timeout", err)
	}
	if took < 250*time.Millisecond || took > 20*time.Second {
		t.Fatalf("Dial gave up after %v, want the configured 300ms, not the context's minute", took)
	}
}

// Start fails, naming the upstream, when no broker answers, within the
// upstream's timeout bounds; a timeout not set (no defaults applied) is
// refused rather than replaced.
func TestStartUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := &configs.Upstream{Protocol: "kafka", Brokers: []string{addr}, Timeout: configs.Duration(200 * time.Millisecond)}
	began := time.Now()
	startFails(t, cfg, "events: metadata: ")
	// Bounded: 3 × 200ms and the client's own retries, well under this
	// (a Start that kept retrying an unreachable upstream would not end).
	if took := time.Since(began); took > 30*time.Second {
		t.Fatalf("Start gave up after %v, want within 3 × 200ms and the client's own retries", took)
	}

	cfg.Timeout = 0
	startFails(t, cfg, "events: timeout 0s: must be positive")
}

// An embedded cluster that cannot bind its port fails Start, named.
func TestStartEmbeddedPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := embedded(1, 1)
	cfg.Embedded.Port = ln.Addr().(*net.TCPAddr).Port
	startFails(t, cfg, "embedded upstream events: ")
}

// startFails checks that Start refuses cfg with an error that begins with
// prefix (the upstream, and the step, named).
func startFails(t *testing.T, cfg *configs.Upstream, prefix string) {
	t.Helper()
	u, err := Start(context.Background(), "events", cfg, nil)
	if err == nil {
		u.Close()
		t.Fatalf("Start succeeded, want an error beginning %q", prefix)
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("Start: %q, want it to begin %q", err, prefix)
	}
}

// fullListener returns the address of a loopback socket that listens with
// a backlog of 0 and never accepts, once its queue is full: a connection
// to it hangs until the dialer's timeout. The test is skipped where the
// kernel accepts past the backlog.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	for range 8 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return addr // the queue is full
			}
			t.Fatalf("filling the listen queue: %v", err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("the kernel accepted 8 connections past a backlog of 0")
	return ""
}
