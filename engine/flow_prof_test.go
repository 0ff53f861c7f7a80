package engine

// Issue 11.4: where the gateway's CPU goes on the streamed Fetch-answer
// path, without kfake and franz-go in the profile. A hand-written broker
// answers every Fetch with the same pre-built answer (two partitions of
// FLEXWAY_FETCH_PART bytes, default 10 MiB), written in large chunks; a raw
// client sends a Fetch, reads the answer through (optionally checksumming
// it, FLEXWAY_FETCH_CRC=1, or hashing it byte by byte, FLEXWAY_FETCH_WORK=1:
// a stand-in for a consumer's decoding), and sends the next; FLEXWAY_FETCH_MIB
// per run (default 2048), splice on and off in turn (FLEXWAY_SPLICE=on, off:
// one only). Run by hand:
//
//	FLEXWAY_FLOW_SPEED=1 go test ./engine -run TestFlowProfileRawFetch -v -cpuprofile /tmp/cpu.out

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFlowProfileRawFetch(t *testing.T) {
	handRun(t, "a loopback profile run")
	part := 10 << 20
	if v, err := strconv.Atoi(os.Getenv("FLEXWAY_FETCH_PART")); err == nil && v > 0 {
		part = v
	}
	total := 2 << 30
	if v, err := strconv.Atoi(os.Getenv("FLEXWAY_FETCH_MIB")); err == nil && v > 0 {
		total = v << 20
	}
	d := &fetchDigest{
		crc:  os.Getenv("FLEXWAY_FETCH_CRC") != "",
		work: os.Getenv("FLEXWAY_FETCH_WORK") != "", // a byte-wise hash: a consumer near 1 GiB/s
		tab:  crc32.MakeTable(crc32.Castagnoli),
	}
	var cached []byte
	f := newFetchBroker(t, 1<<20, func(h codec.RequestHeader, req *kmsg.FetchRequest) []byte {
		if cached == nil {
			cached = respFrame(h.Correlation, streamAnswer(req, part))
		}
		binary.BigEndian.PutUint32(cached[4:], uint32(h.Correlation))
		return cached
	})
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	r := dialReader(t, env, "acme-app")
	buf := make([]byte, 1<<20)
	// Splice on and off in turn (FLEXWAY_SPLICE=on or off: one of them only).
	modes := []bool{true, false, false, true, true, false}
	switch os.Getenv("FLEXWAY_SPLICE") {
	case "on":
		modes = []bool{true}
	case "off":
		modes = []bool{false}
	}
	min0 := env.e.env.Tune.FetchSpliceMin.Load()
	defer env.e.env.Tune.FetchSpliceMin.Store(min0)
	rates, cpus := map[bool][]float64{}, map[bool][]float64{}
	for _, on := range modes {
		if on {
			env.e.env.Tune.FetchSpliceMin.Store(min0)
		} else {
			env.e.env.Tune.FetchSpliceMin.Store(0)
		}
		p0 := env.e.env.Series.BrokerPauses.Load()
		start, cpu0 := time.Now(), cpuNow()
		read := readFetchRun(t, r, total, buf, d)
		el, cpu := time.Since(start), cpuNow()-cpu0
		mib := float64(read) / (1 << 20)
		rates[on] = append(rates[on], mib/el.Seconds())
		cpus[on] = append(cpus[on], cpu.Seconds()/(mib/1024))
		t.Logf("splice %v: %.0f MiB in %v: %.0f MiB/s, process CPU %.2f s/GiB, %d broker pauses (sum %x)",
			on, mib, el.Round(time.Millisecond), mib/el.Seconds(), cpu.Seconds()/(mib/1024),
			env.e.env.Series.BrokerPauses.Load()-p0, d.sum)
	}
	med := func(v []float64) float64 { v = append([]float64(nil), v...); sort.Float64s(v); return v[len(v)/2] }
	for _, on := range []bool{true, false} {
		if len(rates[on]) > 0 {
			t.Logf("median, splice %v: %.0f MiB/s, process CPU %.2f s/GiB (runs %.0f)", on, med(rates[on]), med(cpus[on]), rates[on])
		}
	}
}

// fetchDigest is what a profile run does with the bytes it reads, as a
// consumer would: a CRC (crc), a byte-wise hash (work), both or neither;
// sum is their result.
type fetchDigest struct {
	crc, work bool
	tab       *crc32.Table
	sum       uint32
}

func (d *fetchDigest) add(b []byte) {
	if d.crc {
		d.sum = crc32.Update(d.sum, d.tab, b)
	}
	if d.work {
		for _, c := range b {
			d.sum = (d.sum ^ uint32(c)) * 16777619
		}
	}
}

// readFetchRun sends Fetches of orders on r, one at a time, and reads each
// answer through (in reads of up to len(buf) bytes, each given to d), until
// total bytes were read; it returns how many.
func readFetchRun(t *testing.T, r *rawConn, total int, buf []byte, d *fetchDigest) int {
	read := 0
	for read < total {
		r.fetchOrders(12)
		_ = r.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var sz [4]byte
		if _, err := io.ReadFull(r.c, sz[:]); err != nil {
			t.Fatal(err)
		}
		left := int(binary.BigEndian.Uint32(sz[:]))
		for left > 0 {
			n, err := r.c.Read(buf[:min(left, len(buf))])
			if err != nil {
				t.Fatal(err)
			}
			d.add(buf[:n])
			left -= n
			read += n
		}
	}
	return read
}
