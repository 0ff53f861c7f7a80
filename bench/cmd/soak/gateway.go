// The soak's gateway: its configuration written as an operator writes it
// (a contract declaring every tenant's topics, a key store filled by
// flexway keys new, a flexway.yaml checked by flexway -check), the built
// binary started on it, killed with SIGKILL and started again, and its
// gauges read from /proc and its /metrics.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flexway/flexway/internal/testkit"
)

// contract declares each tenant's two topics: events (an idempotent
// producer, a group) and ledger (a transactional producer, a
// read_committed group).
const contract = `# flexway soak contract (written by bench/cmd/soak)
asyncapi: 3.0.0
info: { title: flexway soak, version: "1.0.0" }
channels:
  events:
    address: "{tenant}.events"
    parameters:
      tenant: { x-flexway-bind: tenant }
  ledger:
    address: "{tenant}.ledger"
    parameters:
      tenant: { x-flexway-bind: tenant }
operations:
  sendEvents:
    action: send
    channel: { $ref: "#/channels/events" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: soak }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
  receiveEvents:
    action: receive
    channel: { $ref: "#/channels/events" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: soak }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
  sendLedger:
    action: send
    channel: { $ref: "#/channels/ledger" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: soak, transactions: true }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
  receiveLedger:
    action: receive
    channel: { $ref: "#/channels/ledger" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: soak }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
components:
  securitySchemes:
    plain: { type: plain }
`

// gatewayYAML is the soak's flexway.yaml: the cluster's proxies as the
// upstream's brokers, the plaintext listener on ports base..base+3, the
// admin endpoint on base+4; server.counters on the soak's Redis (store),
// the reconciliation at its default sync. Every client comes from
// 127.0.0.1: the per-address bound is off, the rest at the seeds' defaults.
//
// The quotas count without ever holding the workload back, so that what a
// Redis outage does is not hidden behind throttling: per tenant the rates
// of the seed's example (10 MiB/s produced, 40 MiB/s read, 2000
// requests/s; a tenant of the soak produces some 12 KB/s), and a day
// budget of a billion Produce requests (some 60/s here). A throttled
// request or a refused Produce is then a fault (report.go checks there
// is none).
func gatewayYAML(brokers []string, base int, store string) string {
	return fmt.Sprintf(`# flexway soak configuration (written by bench/cmd/soak)
version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  kafka: { protocol: kafka, brokers: ["%s"] }
auth:
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
    max_connections_per_ip: 0          # every client of the soak on 127.0.0.1
    quotas:
      tenant: { producer_byte_rate: 10MiB, consumer_byte_rate: 40MiB, request_rate: 2000 }
      quota: %s
    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        soak: { ports: { from: %d, to: %d }, first_node_id: 0 }
server:
  admin:
    address: 127.0.0.1:%d
  counters: { store: "%s" }
policies:
  definitions:
    %s: { type: quota, config: { limits: { day: 1000000000 } } }
`, strings.Join(brokers, `", "`), budgetPolicy, base, base+3, base+4, store, budgetPolicy)
}

// tenantKey is a tenant's API key: its id (the SASL user) and secret.
type tenantKey struct{ tenant, id, secret string }

// writeConfig writes the gateway's folder dir for the brokers and the
// counters' store (a redis:// URL) and makes a key per tenant with flexway
// keys new; it returns the keys and the bootstrap port.
func writeConfig(bin, dir string, brokers []string, counters string, tenants int) ([]tenantKey, int, error) {
	base := freePorts(5)
	files := map[string]string{"asyncapi.yaml": contract, "flexway.yaml": gatewayYAML(brokers, base, counters), "api-keys.yaml": "keys: []\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			return nil, 0, err
		}
	}
	var keys []tenantKey
	store := "keys:\n"
	for i := range tenants {
		k := tenantKey{tenant: fmt.Sprintf("tenant-%02d", i), id: fmt.Sprintf("soak-%02d", i)}
		out, err := exec.Command(bin, "keys", "new", "--id", k.id, "--tenant", k.tenant,
			"--operations", "sendEvents,receiveEvents,sendLedger,receiveLedger",
			"--config", filepath.Join(dir, "flexway.yaml")).CombinedOutput()
		if err != nil {
			return nil, 0, fmt.Errorf("flexway keys new: %v: %s", err, out)
		}
		entry, secret := parseKeysNew(string(out))
		if secret == "" || entry == "" {
			return nil, 0, fmt.Errorf("cannot read the output of flexway keys new (%d bytes)", len(out))
		}
		k.secret = secret
		keys = append(keys, k)
		store += entry
	}
	if err := os.WriteFile(filepath.Join(dir, "api-keys.yaml"), []byte(store), 0o600); err != nil {
		return nil, 0, err
	}
	if out, err := exec.Command(bin, "-check", "-config", filepath.Join(dir, "flexway.yaml")).CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("flexway -check: %v: %s", err, out)
	}
	return keys, base, nil
}

// parseKeysNew reads flexway keys new's output: the store entry (its
// lines under "keys:") and the key, printed on the line after "# The key".
func parseKeysNew(out string) (entry, secret string) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# The key") && i+1 < len(lines) {
			secret = strings.TrimSpace(lines[i+1])
		}
		if strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "- id:") {
			entry += l + "\n"
		}
	}
	return entry, secret
}

// freePorts is the first of n consecutive ports free a moment ago, below
// the kernel's ephemeral range (as testkit.FreePorts chooses them).
func freePorts(n int) int {
	for {
		base := 20000 + rand.IntN(12000-n)
		ok := true
		for i := 0; ok && i < n; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf(":%d", base+i))
			ok = err == nil
			if ok {
				l.Close()
			}
		}
		if ok {
			return base
		}
	}
}

// gateway is one flexway process on the soak's folder.
type gateway struct {
	cmd  *exec.Cmd // nil for a process an upgrade started (upgrade.go)
	pid  int
	base int
	gen  int           // 1 for the first gateway of the run, then one more for each upgrade or restart
	done chan struct{} // closed when the process has exited
}

// startGateway starts bin in dir, its log to logPath, and waits until its
// admin endpoint says it is healthy.
func startGateway(bin, dir, logPath string, base int) (*gateway, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	gw := &gateway{cmd: exec.Command(bin, "-config", "flexway.yaml"), base: base, done: make(chan struct{})}
	gw.cmd.Dir = dir
	gw.cmd.Stdout, gw.cmd.Stderr = log, log
	gw.cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	if err := gw.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	gw.pid = gw.cmd.Process.Pid
	go func() {
		_ = gw.cmd.Wait()
		log.Close()
		close(gw.done)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case <-gw.done:
			return nil, fmt.Errorf("flexway exited at its start (log: %s)", logPath)
		default:
		}
		if resp, err := http.Get(gw.admin("/healthz")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return gw, nil
			}
		}
		if time.Now().After(deadline) {
			gw.kill()
			return nil, fmt.Errorf("flexway not healthy within 30 s (log: %s)", logPath)
		}
	}
}

// kill ends the process with SIGKILL (kill -9) and waits for its end.
func (gw *gateway) kill() {
	select {
	case <-gw.done:
		return
	default:
	}
	_ = syscall.Kill(gw.pid, syscall.SIGKILL)
	<-gw.done
}

func (gw *gateway) admin(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", gw.base+4, path)
}

func (gw *gateway) bootstrap() string { return fmt.Sprintf("127.0.0.1:%d", gw.base) }

// sample is the gateway's gauges at a moment of the run.
type sample struct {
	At          time.Duration    // since the run's start
	RSSMiB      float64          // VmRSS
	FDs         float64          // open file descriptors
	Goroutines  float64          // go_goroutines
	Connections float64          // flexway_kafka_connections: client connections open
	Gateway     int              // which gateway: 1, then 2 after the kill
	Throttled   float64          // requests throttled by a quota, since the gateway's start
	QuotaRefuse float64          // requests refused for a quota (a budget spent), since its start
	Admitted    map[string]int64 // by tenant, Produce requests let through since its start
}

// gauges reads the gateway's gauges now, and what it admitted of tenants'.
func (gw *gateway) gauges(tenants []string) (sample, error) {
	var s sample
	pid := gw.pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kib, _ := strconv.ParseFloat(f[1], 64)
			s.RSSMiB = kib / 1024
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = float64(len(fds))
	m, err := gw.metrics()
	if err != nil {
		return s, err
	}
	s.Goroutines = testkit.SumSeries(m, "go_goroutines ")
	s.Connections = testkit.SumSeries(m, "flexway_kafka_connections{")
	s.Throttled = sumWhere(m, "flexway_kafka_requests_total{", `decision="throttled"`)
	s.QuotaRefuse = sumWhere(m, "flexway_kafka_requests_total{", `decision="refused"`, `cause="quota"`)
	s.Admitted = admittedIn(m, tenants)
	return s, nil
}

// metrics is the gateway's /metrics now.
func (gw *gateway) metrics() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw.admin("/metrics"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	m, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/metrics: %s", resp.Status)
	}
	return string(m), err
}

// admitted is, by tenant, the Produce requests the gateway let through
// since its start (allowed or throttled: each one counted once in the
// tenant's budget, engine/session/budget_quota.go).
func (gw *gateway) admitted(tenants []string) (map[string]int64, error) {
	m, err := gw.metrics()
	if err != nil {
		return nil, err
	}
	return admittedIn(m, tenants), nil
}
