package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The schedule: event i at t0 + i/rate; a paced consumer polls 50 ms of
// its rate at most.
func TestPacer(t *testing.T) {
	t0 := time.Unix(100, 0)
	p := pacer{t0, 2048}
	if got := p.due(0); !got.Equal(t0) {
		t.Errorf("due(0) %v", got)
	}
	if got := p.due(2048); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("due(2048) %v", got)
	}
	if got := p.due(1024); !got.Equal(t0.Add(500 * time.Millisecond)) {
		t.Errorf("due(1024) %v", got)
	}
	for rate, want := range map[float64]int{0: 0, 5: 1, 2048: 102, 682.67: 34} {
		if got := pollBatch(rate); got != want {
			t.Errorf("pollBatch(%v) = %d, want %d", rate, got, want)
		}
	}
	// Not waited for: unpaced, or already due.
	ctx := context.Background()
	start := time.Now()
	pacer{}.wait(ctx, 1000)
	pacer{time.Now().Add(-time.Hour), 1}.wait(ctx, 10)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("waited %v", d)
	}
}

// Without -direct, every user needs a key; with it, none is read.
func TestClientArgs(t *testing.T) {
	var out bytes.Buffer
	if rc := clientRun([]string{"-brokers", "127.0.0.1:1", "-users", "a,b", "-produce"}, &out, "k1"); rc != 2 {
		t.Errorf("two users, one key: rc %d", rc)
	}
	if rc := clientRun([]string{"-brokers", "127.0.0.1:1", "-users", "a", "-consume", "-consume-rate", "-1"}, &out, "k1"); rc != 2 {
		t.Errorf("a negative rate: rc %d", rc)
	}
}

// harness client -direct against a broker without SASL: a producer paced
// at -rate, a consumer at -consume-rate from the start of a topic holding
// more than it may read; neither goes past its schedule.
func TestClientDirectPaced(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "acme.quota"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	boot := strings.Join(c.ListenAddrs(), ",")

	// A producer at 200 records/s for 1.5 s.
	var out bytes.Buffer
	if rc := clientRun([]string{"-brokers", boot, "-topic", "acme.quota", "-users", "acme-1", "-direct", "-produce",
		"-rate", "200", "-size", "100", "-seconds", "1.5"}, &out, ""); rc != 0 {
		t.Fatalf("producer: rc %d\n%s", rc, out.String())
	}
	_, acked, _, recs := parseClientLines(lines(out.String()), 0)
	if n := len(recs); n == 0 || n > 301 {
		t.Errorf("producer at 200/s for 1.5 s: %d records acknowledged", n)
	}
	if acked.total() != float64(100*len(recs)) {
		t.Errorf("acknowledged %v bytes of %d records", acked.total(), len(recs))
	}

	// 3,000 more records, then two consumers at 400 records/s for 1.5 s.
	cl, err := kgo.NewClient(kgo.SeedBrokers(boot))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		cl.Produce(context.Background(), &kgo.Record{Topic: "acme.quota", Value: make([]byte, 100)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	out.Reset()
	if rc := clientRun([]string{"-brokers", boot, "-topic", "acme.quota", "-users", "acme-1,acme-2", "-direct", "-consume",
		"-consume-rate", "400", "-seconds", "1.5"}, &out, ""); rc != 0 {
		t.Fatalf("consumers: rc %d\n%s", rc, out.String())
	}
	per := map[string]int{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "C" {
			per[f[3]]++
		}
	}
	t.Logf("produced %d, handed over %v", len(recs), per)
	// At most a poll's batch (20) ahead of 400/s over 1.5 s.
	for _, idx := range []string{"0", "1"} {
		if n := per[idx]; n == 0 || n > pollBatch(400)+600 {
			t.Errorf("consumer %s at 400/s for 1.5 s: %d records handed over (all: %v)", idx, n, per)
		}
	}
}

func lines(s string) []timedLine {
	var l []timedLine
	for _, x := range strings.Split(s, "\n") {
		if x != "" {
			l = append(l, timedLine{time.Now(), x})
		}
	}
	return l
}
