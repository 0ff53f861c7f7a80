package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The kcat row of the table (issue 35.1): kcat -P (librdkafka) producing
// BENCH_RECORDS records of 1 KiB, random bytes (none a newline; the
// records are newline-separated in its input file), on every path, as the
// other rows are. librdkafka's producer defaults stand: acks=all
// (request.required.acks -1), linger.ms 5, batch.size 1,000,000, no
// compression, no idempotence. Through the gateway it authenticates with
// the tenant's key, through the relay and the Go proxy as the broker's user
// (SASL PLAIN, -F a properties file, as reached.go does); against kfake the
// relay's and the Go proxy's broker take it without SASL (kfake.go).
//
// kcat prints nothing on success: the run's MiB/s is the records' payload
// (counted in its input file) over kcat's whole run, its start, metadata
// and SASL included (some 10-50 ms of a run of seconds); a record not
// delivered makes kcat print "Delivery failed" and exit 1, and the run
// fails.

const scKcatProduce = "kcat produce 1 KiB acks=all (librdkafka's defaults), unlimited"

// kcatOn says whether the table has the kcat row: kcat is installed and
// BENCH_KCAT is not 0.
func kcatOn() bool {
	if os.Getenv("BENCH_KCAT") == "0" {
		return false
	}
	_, err := exec.LookPath("kcat")
	return err == nil
}

// kcatInTable says whether the table runs the kcat row: kcat is on
// (kcatOn) and the parts are the whole table, or the produce part with
// BENCH_KCAT=1 given (bench/table's produce part, issue 35.1); not the issue
// part, nor the produce part without it, whose rows stay issue 11's.
func (h *harness) kcatInTable() bool {
	return h.kcat && (!h.issueOnly || h.produceOnly && os.Getenv("BENCH_KCAT") == "1")
}

// kcatInput is kcat's input file of n records of size bytes, written once
// per size and count; it returns its path and the payload it holds.
func (h *harness) kcatInput(n, size int) (string, recordsFile) {
	f := filepath.Join(h.work, fmt.Sprintf("kcat-%d-%d.txt", n, size))
	if rf, ok := h.kcatIn[f]; ok {
		return f, rf
	}
	writeNoise(f, n, size)
	data, err := os.ReadFile(f)
	must(err)
	if h.kcatIn == nil {
		h.kcatIn = map[string]recordsFile{}
	}
	h.kcatIn[f] = countRecords(data)
	return f, h.kcatIn[f]
}

// recordsFile is what a newline-separated input holds.
type recordsFile struct {
	records int
	bytes   int // payload: the records' bytes, the newlines left out
	short   int // records of another size than the first's
}

// countRecords counts the newline-ended records of data (a last record
// without its newline counts too) and their payload.
func countRecords(data []byte) recordsFile {
	var rf recordsFile
	first := -1
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		rec := data
		if i >= 0 {
			rec, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		rf.records++
		rf.bytes += len(rec)
		if first < 0 {
			first = len(rec)
		} else if len(rec) != first {
			rf.short++
		}
	}
	return rf
}

// kcatConfFor writes librdkafka's SASL properties (kcat -F) for path, and
// returns the file's path; "" where kcat connects without SASL (direct;
// against kfake, the relay and the Go proxy).
func (h *harness) kcatConfFor(path string) string {
	var user, pass string
	switch {
	case path == gateway:
		user, pass = h.keyID, h.key
	case (path == relay || path == goproxy) && !h.isKfake():
		user, pass = h.relayUser, h.relayPass
	default:
		return ""
	}
	f := filepath.Join(h.work, "kcat-"+path+".properties")
	must(os.WriteFile(f, []byte(fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\nsasl.username=%s\nsasl.password=%s\n", user, pass)), 0o600))
	return f
}

// kcatArgs is kcat's command line producing file to topic perf through
// boot, with conf (librdkafka's properties file, "" for none).
func kcatArgs(boot, conf, file string) []string {
	args := []string{"kcat", "-b", boot, "-P", "-t", "perf", "-l", file}
	if conf != "" {
		args = append(args, "-F", conf)
	}
	return args
}

// kcatProducer runs kcat -P on path with BENCH_RECORDS records of size.
func (h *harness) kcatProducer(path string, size int) (result, error) {
	file, in := h.kcatInput(h.records, size)
	t0 := time.Now()
	out, err := h.run("kcat-produce-"+path, nil, kcatArgs(h.bootstrap(path), h.kcatConfFor(path), file)...)
	secs := time.Since(t0).Seconds()
	if err != nil {
		return result{}, fmt.Errorf("%v\n%s", err, tail(out, 2000))
	}
	return parseKcatProduce(out, in, size, secs)
}

// parseKcatProduce makes a run's result of kcat -P's output (it prints
// nothing on success), its input and its run's seconds: an error if a
// record was not delivered or the input is not whole records of size;
// librdkafka's other "% ERROR" lines (a connection dropped and made again)
// are counted in the note.
func parseKcatProduce(out string, in recordsFile, size int, secs float64) (result, error) {
	if in.records == 0 || in.short > 0 || in.bytes != in.records*size {
		return result{}, fmt.Errorf("kcat's input: %d records, %d bytes, %d not of %d bytes", in.records, in.bytes, in.short, size)
	}
	failed, errs := 0, 0
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "Delivery failed"):
			failed++
		case strings.HasPrefix(l, "% ERROR"):
			errs++
		}
	}
	if failed > 0 {
		return result{}, fmt.Errorf("kcat: %d of %d records not delivered:\n%s", failed, in.records, tail(out, 2000))
	}
	if secs <= 0 {
		return result{}, fmt.Errorf("kcat: a run of %v s", secs)
	}
	r := result{recs: float64(in.records) / secs, mibps: float64(in.bytes) / (1 << 20) / secs,
		p50: nan, p90: nan, p95: nan, p99: nan, p999: nan, bytes: float64(in.bytes)}
	if errs > 0 {
		r.note = fmt.Sprintf("(librdkafka errors: %d)", errs)
	}
	return r, nil
}
