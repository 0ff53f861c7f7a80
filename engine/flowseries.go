package engine

import (
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/engine/conn"
)

// The engine's own series (issue 23.3): what the flow-control mechanism
// and the splice passes did, beside the seed's flexway_kafka_* signals.
// Counted per engine, exported on /metrics with the rest; tests read them.

// count is a counter of the engine's series.
type count struct{ c *metrics.Counter }

func (c count) Add(n int64) { c.c.Add(int(n)) }
func (c count) Load() int64 { return int64(c.c.Get()) }

// flowSeries are the engine's flow and splice counters.
type flowSeries struct {
	brokerPauses   count                 // broker connections paused until their client reads
	brokerPausedNs count                 // the time they stayed so, in ns (tests)
	brokerPausedS  *metrics.FloatCounter // the same, exported in seconds
	clientPauses   count                 // clients paused until their broker takes

	fetchSpliced  count // Fetch record bytes spliced to clients
	fetchPipeOuts count // Fetch passes that met a full client socket
	fetchUnits    count // units taken from a broker's socket between partitions

	produceSpliced  count // Produce record bytes spliced to brokers
	producePipeOuts count // Produce passes that met a full broker socket
	produceUnits    count // units taken from a client's socket between partitions
	produceNexts    count // requests begun from a head looked at in the socket
	produceRoomOuts count // passes a full broker socket ended before a splice
	produceDetached count // record bytes spliced from a detached client's socket
}

// flowSeriesNames are the families newFlowSeries exports.
var flowSeriesNames = []string{
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
}

// pausedFor counts a broker connection's pause of d.
func (fs *flowSeries) pausedFor(d time.Duration) {
	fs.brokerPausedNs.Add(int64(d))
	fs.brokerPausedS.Add(d.Seconds())
}

func newFlowSeries(set *metrics.Set, st *conn.Stats) flowSeries {
	c := func(name string) count { return count{set.NewCounter(name)} }
	st.Detaches = set.NewCounter(`flexway_engine_read_pauses_total`)
	st.Resumes = set.NewCounter(`flexway_engine_read_resumes_total`)
	st.Above = set.NewCounter(`flexway_engine_queue_high_total`)
	fs := flowSeries{
		brokerPauses:    c(`flexway_engine_peer_pauses_total{side="broker"}`),
		clientPauses:    c(`flexway_engine_peer_pauses_total{side="client"}`),
		brokerPausedNs:  count{&metrics.Counter{}},
		brokerPausedS:   set.NewFloatCounter(`flexway_engine_peer_paused_seconds_total{side="broker"}`),
		fetchSpliced:    c(`flexway_engine_spliced_bytes_total{direction="fetch"}`),
		fetchPipeOuts:   c(`flexway_engine_splice_pipe_outs_total{direction="fetch"}`),
		fetchUnits:      c(`flexway_engine_splice_units_total{direction="fetch"}`),
		produceSpliced:  c(`flexway_engine_spliced_bytes_total{direction="produce"}`),
		producePipeOuts: c(`flexway_engine_splice_pipe_outs_total{direction="produce"}`),
		produceUnits:    c(`flexway_engine_splice_units_total{direction="produce"}`),
		produceNexts:    c(`flexway_engine_splice_next_requests_total`),
		produceRoomOuts: c(`flexway_engine_splice_room_outs_total`),
		produceDetached: c(`flexway_engine_spliced_detached_bytes_total`),
	}
	return fs
}
