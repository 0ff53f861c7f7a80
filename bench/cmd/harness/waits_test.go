package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The gateway's series kept per run (runSeries: the engine's, the requests,
// the bytes) read from its /metrics (and nothing else of
// it), their change over a run written to metrics/<run>.txt, unchanged
// series left out; the heap gauge read from the same exposition.
func TestEngineCountersDelta(t *testing.T) {
	var body atomic.Pointer[string]
	text := "flexway_engine_read_pauses_total 3\n" +
		"flexway_engine_loop_event_seconds_bucket{le=\"0.005\"} 10\n" +
		"flexway_kafka_requests_total{decision=\"allowed\"} 7\n" +
		"flexway_kafka_bytes_total{direction=\"produce\"} 1024\n" +
		"flexway_kafka_connections 2\n" +
		"go_memstats_heap_inuse_bytes 4096\n"
	body.Store(&text)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(*body.Load())) }))
	defer srv.Close()
	h := &harness{admin: strings.TrimPrefix(srv.URL, "http://"), out: t.TempDir()}
	before := h.engineCounters()
	if len(before) != 4 || before[`flexway_engine_loop_event_seconds_bucket{le="0.005"}`] != 10 || before[`flexway_kafka_bytes_total{direction="produce"}`] != 1024 {
		t.Fatalf("read %v", before)
	}
	if got := h.heapInuse(); got != 4096 {
		t.Fatalf("heapInuse = %v", got)
	}
	after := strings.Replace(text, "pauses_total 3", "pauses_total 5", 1)
	body.Store(&after)
	h.writeCounterDelta("franz-go produce 1 KiB, fixed 100 rec/s", gateway, 2, before, h.engineCounters())
	got, err := os.ReadFile(filepath.Join(h.out, "metrics", "franz-go-produce-1-KiB-fixed-100-rec-s-gateway-2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "flexway_engine_read_pauses_total 2\n" {
		t.Fatalf("delta %q", got)
	}
}
