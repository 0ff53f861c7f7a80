package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flexway/flexway/engine/session"
)

// Issue 23.3: the flow and splice counters are series of the engine's
// /metrics, each family there from the start, and they count: a large
// Fetch spliced shows in flexway_engine_spliced_bytes_total.
func TestFlowSeriesExported(t *testing.T) {
	const size = 3 << 20
	f := largeAnswers(t, size)
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	var buf bytes.Buffer
	env.e.Metrics().WritePrometheus(&buf)
	for _, n := range session.SeriesNames {
		if !strings.Contains(buf.String(), n) {
			t.Errorf("%s not on /metrics", n)
		}
	}
	r := dialReader(t, env, "acme-app")
	r.fetchOrders(12)
	r.checkOrders(12, size)
	buf.Reset()
	env.e.Metrics().WritePrometheus(&buf)
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(line, `flexway_engine_spliced_bytes_total{direction="fetch"} `) {
			if strings.HasSuffix(line, " 0") {
				t.Fatalf("nothing counted after a spliced answer: %s", line)
			}
			return
		}
	}
	t.Fatalf("no fetch series:\n%s", buf.String())
}
