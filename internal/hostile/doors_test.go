package hostile

// The attacks on the doors: connections that never authenticate, a tenant
// that names another's topics, fetches never read, broken reloads.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unauthFlood: 600 connections from one address that send nothing: at
// most max_connections_per_ip (16) are held, the rest refused at accept.
// Every one held is closed by auth_timeout (10 s).
func unauthFlood(g *gateway, full bool) error {
	return flood(g, 600, 1, 16, true)
}

// unauthFloodMany: the same from 40 addresses (15 each, within the
// per-address bound): at most max_unauthenticated_connections (256) held.
// The seed refuses a new connection while they are full ("an anonymous
// flood never takes the authenticated clients' places"): a new login is
// not expected to get in, the authenticated canary to be served.
func unauthFloodMany(g *gateway, full bool) error {
	return flood(g, 600, 40, 256, false)
}

// flood opens n connections from addrs attacker addresses, sends nothing,
// and checks that at most held are held (the gateway's descriptors), and
// every one closed by auth_timeout; newLogin: a globex login from another
// address gets in meanwhile.
func flood(g *gateway, n, addrs, held int, newLogin bool) error {
	before := fds(g.pid())
	rs := make([]*raw, n)
	start := time.Now()
	var refused atomic.Int64
	err := parallel(n, func(i int) error {
		r, err := dialFrom(attacker(i%addrs), g.kafka())
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
			refused.Add(1) // beyond the bound: refused at accept
			return nil
		}
		rs[i] = r
		return err
	})
	defer func() {
		for _, r := range rs {
			if r != nil {
				r.Close()
			}
		}
	}()
	if err != nil {
		return err
	}
	// While they are held, a globex client from an address of its own
	// still gets in and authenticates, within seconds.
	var errs []error
	if newLogin {
		errs = append(errs, loginDuring(g)...)
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() { // the descriptors, while the connections wait
		for {
			if n := int64(fds(g.pid())); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	err = parallel(n, func(i int) error {
		if rs[i] == nil {
			return nil
		}
		return rs[i].closedWithin(10*time.Second + closeWithin - time.Since(start))
	})
	close(stop)
	err = errors.Join(append(errs, err)...)
	if p := int(peak.Load()); p > before+held+16 {
		err = errors.Join(err, fmt.Errorf("%d descriptors for %d unauthenticated connections from %d addresses (before %d, bound %d)",
			p, n, addrs, before, held))
	}
	return err
}

// globexy are the names acme asks for that are globex's, or would be
// under another reading of the name.
var globexy = []string{"globex.orders", "globex", "../globex.orders", "globex.orders ", ".globex.orders", "~g.globex"}

// tenantNames: acme asks Metadata of every topic and of globex's names,
// fetches and produces to them. Nothing of globex may come back: no name
// but the ones asked, each refused, no partitions, no record.
func tenantNames(g *gateway, full bool) error {
	rounds := 1
	if full {
		rounds = 20
	}
	r, err := dialAuthed(g.kafka(), "acme-app", g.keys["acme-app"])
	if err != nil {
		return err
	}
	defer r.Close()
	for i := 0; i < rounds; i++ {
		if err := allTopics(r); err != nil {
			return err
		}
		for _, name := range globexy {
			if err := namedTopic(r, name); err != nil {
				return err
			}
			if err := fetchOf(r, name); err != nil {
				return err
			}
			if err := produceTo(r, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func allTopics(r *raw) error {
	req := metadata()
	corr, err := r.send(req)
	if err != nil {
		return err
	}
	got, body, err := r.next()
	if err != nil || got != corr {
		return fmt.Errorf("Metadata of every topic: %v (answer %d)", err, got)
	}
	if bytes.Contains(body, []byte("globex")) {
		return fmt.Errorf("Metadata of every topic names globex: %q", body)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = req.Version
	if err := resp.ReadFrom(body[1:]); err != nil {
		return err
	}
	if len(resp.Topics) == 0 {
		return errors.New("Metadata of every topic: not even acme's orders")
	}
	return nil
}

func namedTopic(r *raw, name string) error {
	resp := kmsg.NewPtrMetadataResponse()
	if err := r.roundTrip(metadata(name), resp); err != nil {
		return fmt.Errorf("Metadata %q: %w", name, err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != name {
			return fmt.Errorf("Metadata %q answered topic %v", name, t.Topic)
		}
		if t.ErrorCode == 0 || len(t.Partitions) > 0 {
			return fmt.Errorf("Metadata %q: served (%d partitions)", name, len(t.Partitions))
		}
	}
	return nil
}

func fetchOf(r *raw, name string) error {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.MaxWaitMillis = 10
	t := kmsg.NewFetchRequestTopic()
	t.Topic = name
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes = 1 << 20
	p.CurrentLeaderEpoch = -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	corr, err := r.send(req)
	if err != nil {
		return err
	}
	got, body, err := r.next()
	if err != nil || got != corr {
		return fmt.Errorf("Fetch %q: %v (answer %d)", name, err, got)
	}
	if bytes.Contains(body, []byte("canary-")) {
		return fmt.Errorf("Fetch %q returned globex's records", name)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = req.Version
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("Fetch %q: %w", name, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && len(p.RecordBatches) > 0 {
				return fmt.Errorf("Fetch %q: served records", name)
			}
		}
	}
	return nil
}

func produceTo(r *raw, name string) error {
	resp := kmsg.NewPtrProduceResponse()
	if err := r.roundTrip(produce(name, 0, 16, 1), resp); err != nil {
		return fmt.Errorf("Produce %q: %w", name, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				return fmt.Errorf("Produce %q: accepted", name)
			}
		}
	}
	return nil
}

// brokenReloads: flexway.yaml broken three ways, SIGHUP each time: the
// reload is refused with its line, the old configuration serves (acme
// authenticates and reads its metadata); then the good file is back.
func brokenReloads(g *gateway, _ bool) error {
	path := filepath.Join(g.dir, "flexway.yaml")
	defer os.WriteFile(path, g.cfg, 0o600)
	good := string(g.cfg)
	broken := []string{
		"version: 1\nupstreams: {{{\n  :: not yaml\n",
		strings.Replace(good, "version: 1\n", "version: 1\nunknown_key: true\n", 1),
		strings.Replace(good, "max_in_flight_bytes: 8MiB", "max_in_flight_bytes: -8MiB", 1),
		"",
	}
	for i, b := range broken {
		if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
			return err
		}
		from := g.out.Bytes()
		if err := g.hup(); err != nil {
			return err
		}
		if err := g.waitLog(from, 10*time.Second, "configuration reload refused"); err != nil {
			return fmt.Errorf("broken file %d: %w", i, err)
		}
		if err := servesAcme(g); err != nil {
			return fmt.Errorf("after broken file %d: %w", i, err)
		}
	}
	if err := os.WriteFile(path, g.cfg, 0o600); err != nil {
		return err
	}
	from := g.out.Bytes()
	if err := g.hup(); err != nil {
		return err
	}
	return g.waitLog(from, 10*time.Second, "configuration reloaded")
}

// servesAcme: a new acme connection authenticates and is served "orders".
func servesAcme(g *gateway) error {
	r, err := dialAuthed(g.kafka(), "acme-app", g.keys["acme-app"])
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = leaderPort(g, r, 0)
	return err
}

// unreadFetches: 4 acme connections each ask a 50 MiB fetch of a
// partition holding 20 MiB, and never read; held until the gateway's RSS
// stops growing, then closed.
func unreadFetches(g *gateway, _ bool) error {
	if err := fillOrders(g, 20<<20); err != nil {
		return err
	}
	rs := make([]*raw, 4)
	defer func() {
		for _, r := range rs {
			if r != nil {
				r.Close()
			}
		}
	}()
	for i := range rs {
		boot, err := dialAuthed(g.kafka(), "acme-app", g.keys["acme-app"])
		if err != nil {
			return err
		}
		port, err := leaderPort(g, boot, int32(i%3))
		boot.Close()
		if err != nil {
			return err
		}
		if rs[i], err = dialAuthed(fmt.Sprintf("127.0.0.1:%d", port), "acme-app", g.keys["acme-app"]); err != nil {
			return err
		}
		_ = rs[i].c.(*net.TCPConn).SetReadBuffer(16 << 10)
		if _, err := rs[i].send(bigFetch(int32(i % 3))); err != nil {
			return err
		}
	}
	steady(g, 2*time.Second, 30*time.Second)
	for i, r := range rs { // the answers were there, large, unread
		_ = r.c.SetReadDeadline(time.Now().Add(ioDeadline))
		var sz [4]byte
		if _, err := io.ReadFull(r.c, sz[:]); err != nil {
			return fmt.Errorf("fetch %d: %w", i, err)
		}
		if n := binary.BigEndian.Uint32(sz[:]); n < 10<<20 {
			return fmt.Errorf("fetch %d: an answer of %d bytes, not the large one tried", i, n)
		}
	}
	return nil
}

// bigFetch is a Fetch of orders' partition p from its start, 50 MiB.
func bigFetch(p int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxBytes = 50 << 20
	req.MaxWaitMillis = 500
	t := kmsg.NewFetchRequestTopic()
	t.Topic = "orders"
	part := kmsg.NewFetchRequestTopicPartition()
	part.Partition = p
	part.PartitionMaxBytes = 50 << 20
	part.CurrentLeaderEpoch = -1
	t.Partitions = append(t.Partitions, part)
	req.Topics = append(req.Topics, t)
	return req
}

// steady waits until the gateway's RSS has not grown for quiet, at most within.
func steady(g *gateway, quiet, within time.Duration) {
	top, since, start := rss(g.pid()), time.Now(), time.Now()
	for time.Since(since) < quiet && time.Since(start) < within {
		time.Sleep(100 * time.Millisecond)
		if n := rss(g.pid()); n > top+mib {
			top, since = n, time.Now()
		}
	}
}

var filled sync.Once

// fillOrders writes per bytes of 16 KiB records to each partition of
// acme.orders, straight to the broker (once per gateway).
func fillOrders(g *gateway, per int) error {
	var err error
	filled.Do(func() {
		var cl *kgo.Client
		cl, err = kgo.NewClient(kgo.SeedBrokers(g.k.ListenAddrs()...), kgo.DefaultProduceTopic("acme.orders"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			return
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		val := make([]byte, 16<<10)
		var mu sync.Mutex
		var first error
		for p := int32(0); p < 3; p++ {
			for i := 0; i < per/len(val); i++ {
				cl.Produce(ctx, &kgo.Record{Value: val, Partition: p}, func(_ *kgo.Record, e error) {
					mu.Lock()
					defer mu.Unlock()
					first = cmp.Or(first, e)
				})
			}
		}
		err = cmp.Or(cl.Flush(ctx), first)
	})
	return err
}

// loginDuring: a globex client from an address of its own gets in and
// authenticates, within seconds.
func loginDuring(g *gateway) []error {
	r, err := dialFrom("127.0.0.1", g.kafka())
	if err != nil {
		return []error{fmt.Errorf("globex during the flood: %w", err)}
	}
	code, err := r.plain("globex-app", g.keys["globex-app"])
	r.Close()
	if err != nil || code != 0 {
		return []error{fmt.Errorf("globex during the flood: code %d, %v", code, err)}
	}
	return nil
}
