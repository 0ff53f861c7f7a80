package session

import (
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/engine/conn"
)

// The engine's own series (issue 23.3): what the flow-control mechanism
// and the splice passes did, beside the seed's flexway_kafka_* signals.
// Counted per engine, exported on /metrics with the rest; tests read them.

// count is a counter of the engine's series: Load reads it (tests).
type count struct{ c *metrics.Counter }

func (c count) Add(n int64) { c.c.Add(int(n)) }
func (c count) Load() int64 { return int64(c.c.Get()) }

// Series are the engine's flow and splice counters.
type Series struct {
	BrokerPauses   count                 // broker connections paused until their client reads
	BrokerPausedNs count                 // the time they stayed so, in ns (tests)
	BrokerPausedS  *metrics.FloatCounter // the same, exported in seconds
	ClientPauses   count                 // clients paused until their broker takes

	FetchSpliced  count // Fetch record bytes spliced to clients
	FetchPipeOuts count // Fetch passes that met a full client socket
	FetchUnits    count // units taken from a broker's socket between partitions
	FetchRoomOuts count // passes a full client socket ended before a splice
	FetchDetached count // record bytes spliced from a detached broker's socket

	ProduceSpliced  count // Produce record bytes spliced to brokers
	ProducePipeOuts count // Produce passes that met a full broker socket
	ProduceUnits    count // units taken from a client's socket between partitions
	ProduceNexts    count // requests begun from a head looked at in the socket
	ProduceRoomOuts count // passes a full broker socket ended before a splice
	ProduceDetached count // record bytes spliced from a detached client's socket

	// ReplicaWaits: requests that waited for the replica's in-flight
	// budget (max_total_in_flight_bytes), once a wait (budget_series.go).
	ReplicaWaits count
	// ReadWaits: clients whose reads were paused because what they sent
	// and the gateway had not handled reached a budget (inbound.go).
	ReadWaits count
	// QuotaCapped: requests that waited max_throttle for a quota debt and
	// went on in debt (Q2, quota.go); QuotaPaced: streamed Produce
	// requests paused in their middle for their quota (pace).
	QuotaCapped, QuotaPaced count

	// LoopEvent: how long each traffic event held its loop (every other
	// connection of the loop waits meanwhile): a stall shows here.
	LoopEvent *metrics.PrometheusHistogram
	// LoopTask, LoopUnmute, LoopResume: how long each task run on the
	// loop held it: a tick's sweep or another task (Run), an unmute and
	// the requests it handles, a paused socket's resume (its OnOpen).
	LoopTask, LoopUnmute, LoopResume *metrics.PrometheusHistogram
}

// loopEventBuckets are LoopEvent's bounds, in seconds.
var loopEventBuckets = []float64{0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5}

// SeriesNames are the families newFlowSeries exports.
var SeriesNames = []string{
	"flexway_engine_read_pauses_total",
	"flexway_engine_read_resumes_total",
	"flexway_engine_queue_high_total",
	"flexway_engine_peer_pauses_total",
	"flexway_engine_peer_paused_seconds_total",
	"flexway_engine_spliced_bytes_total",
	"flexway_engine_splice_pipe_outs_total",
	"flexway_engine_splice_units_total",
	"flexway_engine_splice_next_requests_total",
	"flexway_engine_splice_room_outs_total",
	"flexway_engine_spliced_detached_bytes_total",
	"flexway_engine_loop_event_seconds_bucket",
	"flexway_engine_loop_task_seconds_bucket",
	"flexway_engine_quota_capped_total",
	"flexway_engine_quota_paced_total",
}

// pausedFor counts a broker connection's pause of d.
func (fs *Series) pausedFor(d time.Duration) {
	fs.BrokerPausedNs.Add(int64(d))
	fs.BrokerPausedS.Add(d.Seconds())
}

func newFlowSeries(set *metrics.Set, st *conn.Stats) Series {
	c := func(name string) count { return count{set.NewCounter(name)} }
	st.Detaches = set.NewCounter(`flexway_engine_read_pauses_total`)
	st.Resumes = set.NewCounter(`flexway_engine_read_resumes_total`)
	st.Above = set.NewCounter(`flexway_engine_queue_high_total`)
	fs := Series{
		BrokerPauses:    c(`flexway_engine_peer_pauses_total{side="broker"}`),
		ClientPauses:    c(`flexway_engine_peer_pauses_total{side="client"}`),
		BrokerPausedNs:  count{&metrics.Counter{}},
		BrokerPausedS:   set.NewFloatCounter(`flexway_engine_peer_paused_seconds_total{side="broker"}`),
		FetchSpliced:    c(`flexway_engine_spliced_bytes_total{direction="fetch"}`),
		FetchPipeOuts:   c(`flexway_engine_splice_pipe_outs_total{direction="fetch"}`),
		FetchUnits:      c(`flexway_engine_splice_units_total{direction="fetch"}`),
		ProduceSpliced:  c(`flexway_engine_spliced_bytes_total{direction="produce"}`),
		ProducePipeOuts: c(`flexway_engine_splice_pipe_outs_total{direction="produce"}`),
		ProduceUnits:    c(`flexway_engine_splice_units_total{direction="produce"}`),
		ProduceNexts:    c(`flexway_engine_splice_next_requests_total`),
		ProduceRoomOuts: c(`flexway_engine_splice_room_outs_total{direction="produce"}`),
		FetchRoomOuts:   c(`flexway_engine_splice_room_outs_total{direction="fetch"}`),
		ProduceDetached: c(`flexway_engine_spliced_detached_bytes_total{direction="produce"}`),
		FetchDetached:   c(`flexway_engine_spliced_detached_bytes_total{direction="fetch"}`),
		QuotaCapped:     c(`flexway_engine_quota_capped_total`),
		QuotaPaced:      c(`flexway_engine_quota_paced_total`),
		LoopEvent:       set.NewPrometheusHistogramExt(`flexway_engine_loop_event_seconds`, loopEventBuckets),
		LoopTask:        set.NewPrometheusHistogramExt(`flexway_engine_loop_task_seconds{task="run"}`, loopEventBuckets),
		LoopUnmute:      set.NewPrometheusHistogramExt(`flexway_engine_loop_task_seconds{task="unmute"}`, loopEventBuckets),
		LoopResume:      set.NewPrometheusHistogramExt(`flexway_engine_loop_task_seconds{task="resume"}`, loopEventBuckets),
	}
	return fs
}
