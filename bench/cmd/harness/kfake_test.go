package main

import (
	"slices"
	"strings"
	"testing"
)

// Against kfake each path's kfakesrv listens where its broker listener
// would: direct and the gateway's upstream on the broker's port, the
// relay's on its target advertising the relay, with SASL as the broker's
// user (kcat's runs without).
func TestKfakeArgs(t *testing.T) {
	h := &harness{bin: "/b", broker: "127.0.0.1:29192", relayBoot: "127.0.0.1:29196", relayTarget: "127.0.0.1:29195",
		relayUser: "flexway", relayPass: "flexway-secret", brokerKind: brokerKfake}
	for _, c := range []struct {
		path   string
		noSASL bool
		args   []string
		user   string
	}{
		{direct, false, []string{"/b/kfakesrv", "-partitions", "3", "-port", "29192"}, ""},
		{gateway, false, []string{"/b/kfakesrv", "-partitions", "3", "-port", "29192"}, ""},
		{relay, false, []string{"/b/kfakesrv", "-partitions", "3", "-port", "29195", "-advertise", "127.0.0.1:29196", "-sasl-user", "flexway"}, "flexway"},
		{relay, true, []string{"/b/kfakesrv", "-partitions", "3", "-port", "29195", "-advertise", "127.0.0.1:29196"}, ""},
	} {
		args, user := h.kfakeArgs(c.path, c.noSASL)
		if !slices.Equal(args, c.args) || user != c.user {
			t.Errorf("kfakeArgs(%s, %v) = %v, %q; want %v, %q", c.path, c.noSASL, args, user, c.args, c.user)
		}
		if strings.Contains(strings.Join(args, " "), h.relayPass) {
			t.Errorf("the password is on kfakesrv's command line: %v", args)
		}
	}
	if a := h.kfakeAddr(relay); a != "127.0.0.1:29195" {
		t.Errorf("relay's kfakesrv at %s", a)
	}
	if a := h.kfakeAddr(gateway); a != "127.0.0.1:29192" {
		t.Errorf("gateway's kfakesrv at %s", a)
	}
}

// A reading run's fresh broker is filled with what it reads: the consumers
// BENCH_RECORDS of perf, the large fetches BENCH_BIG_MIB of big; a
// producer's run nothing.
func TestKfakeFill(t *testing.T) {
	h := &harness{records: 300000, bigMiB: 256}
	for sc, want := range map[string]struct {
		topic string
		n     int
	}{
		scConsume: {"perf", 300000}, scFranzConsume: {"perf", 300000},
		h.scBigFetch(): {"big", 256 << 10}, h.scBigFetchJava(): {"big", 256 << 10},
		scFranzProduce: {"", 0}, scKcatProduce: {"", 0}, scProduce("all"): {"", 0}, scProduceFixed("1", 5000): {"", 0},
	} {
		if topic, n := h.kfakeFill(sc); topic != want.topic || n != want.n {
			t.Errorf("kfakeFill(%q) = %q, %d; want %q, %d", sc, topic, n, want.topic, want.n)
		}
	}
}

// The tables say which broker they ran against, first: a kfake table
// cannot be read as an Apache Kafka one.
func TestTablesSayTheBroker(t *testing.T) {
	t.Setenv("KAFKA_VERSION", "4.1.2")
	h := &harness{repeat: 1}
	h.results = []result{
		{scenario: scFranzProduce, path: direct, rep: 1, recs: 1, mibps: 100, p50: nan, p99: nan},
		{scenario: scFranzProduce, path: gateway, rep: 1, recs: 1, mibps: 90, bytes: 1 << 30, hopCPU: 0.5, p50: nan, p99: nan},
	}
	for _, out := range []string{h.summaryTable(), h.table()} {
		if !strings.HasPrefix(out, "Broker: Apache Kafka 4.1.2 (single-node KRaft") || strings.Contains(out, "kfake") {
			t.Errorf("Apache Kafka's table does not say so first:\n%s", out)
		}
	}
	h.brokerKind = brokerKfake
	for _, out := range []string{h.summaryTable(), h.table()} {
		first, _, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(first, "Broker: kfake ") || !strings.Contains(first, "NOT Apache Kafka") || !strings.Contains(first, "a fresh kfakesrv for every run") {
			t.Errorf("kfake's table does not say so first:\n%s", out)
		}
	}
}

// kfake runs the table and the large fetches (its default), not the parts
// that keep a broker for long; BENCH_FRANZ_ACKS gives franz-go's rows.
func TestKfakeParts(t *testing.T) {
	if err := checkKfakeParts(parseParts(defaultParts(brokerKfake))); err != nil {
		t.Errorf("kfake's default parts: %v", err)
	}
	if defaultParts(brokerKafka) != "table,bigfetch,rssfetch,sweep,profile" {
		t.Errorf("Apache Kafka's default parts moved: %s", defaultParts(brokerKafka))
	}
	for _, p := range []string{"rssfetch", "sweep", "profile", "quota", "many", "otlp", "hold"} {
		if err := checkKfakeParts(parseParts("table," + p)); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("BENCH_PARTS=table,%s against kfake: err %v", p, err)
		}
	}
	if got := franzAcksList(" all, 1,all"); !slices.Equal(got, []string{"all", "1"}) {
		t.Errorf("franzAcksList = %v", got)
	}
	if scFranz("all") != scFranzProduce || scFranz("1") != "franz-go produce 1 KiB acks=1, unlimited" ||
		scFranzFixed("1", 9000) != "franz-go produce 1 KiB acks=1, fixed 9000 rec/s" || scFranzFixed("all", 9000) != "franz-go produce 1 KiB acks=all, fixed 9000 rec/s" {
		t.Errorf("franz-go's row names: %q %q", scFranz("1"), scFranzFixed("1", 9000))
	}
}
