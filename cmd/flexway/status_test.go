package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// quickstartFiles copies the quickstart's contract and key store to a
// folder of the test's, where its flexway.yaml is written.
func quickstartFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"asyncapi.yaml", "api-keys.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../configs/quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// quickstartEngine boots the quickstart's gateway in the test, on free ports.
func quickstartEngine(t *testing.T) (*engine.Engine, string) {
	t.Helper()
	dir := quickstartFiles(t)
	base := testkit.FreePorts(t, 4)
	cfg, err := os.ReadFile("../../configs/quickstart/flexway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := strings.NewReplacer("from: 19092, to: 19095", fmt.Sprintf("from: %d, to: %d", base, base+3)).Replace(string(cfg))
	path := filepath.Join(dir, "flexway.yaml")
	if err := os.WriteFile(path, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), snap, engine.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	go e.Serve()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e, fmt.Sprintf("127.0.0.1:%d", base)
}

func quickstartKey(t *testing.T, id string) string {
	b, err := os.ReadFile(filepath.Join("../../configs/quickstart", id+".key"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Issue 10.7: / on the admin address is an HTML page without an external
// asset that shows, while traffic runs, each tenant's connections and
// decisions (with the refusals' causes), its budget and throttling columns,
// and the upstream's brokers.
func TestStatusPage(t *testing.T) {
	e, boot := quickstartEngine(t)
	srv := httptest.NewServer(adminHandler(e))
	defer srv.Close()

	// acme produces until the test ends; globex's reader tries to produce (refused: acl).
	producer := statusClient(t, boot, "acme-app")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_ = producer.ProduceSync(ctx, &kgo.Record{Value: []byte("status")}).FirstErr()
		}
	}()
	defer func() { stop(); wg.Wait() }()
	reader := statusClient(t, boot, "acme-orders-reader")
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := reader.ProduceSync(rctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Error("a reader produced")
	}
	rcancel()

	page, hdr, m := waitAcmeRow(t, srv.URL)
	if m == nil {
		t.Fatalf("no row for shop/acme:\n%s", page)
	}
	if m[1] == "0" || m[3] == "0" || m[4] == "0" || m[6] == "0" {
		t.Errorf("shop/acme while producing: connections %s, allowed %s, refused %s, produced bytes %s", m[1], m[3], m[4], m[6])
	}
	if !strings.Contains(m[2], "api_key") || !strings.Contains(m[5], "acl") {
		t.Errorf("mechanisms %q (want api_key), refusals by cause %q (want acl)", m[2], m[5])
	}
	if !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Errorf("Content-Type %q", hdr.Get("Content-Type"))
	}
	checkStatusPageContent(t, page)
	// The endpoint's other paths still answer; an unknown path is 404.
	for path, code := range map[string]int{"/metrics": 200, "/healthz": 200, "/config": 200, "/nothing": 404} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}
}

// statusClient is a franz-go client of the quickstart's identity id on
// boot, without retries, producing to orders; closed when the test ends.
func statusClient(t *testing.T, boot, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(boot), kgo.SASL(plain.Auth{User: id, Pass: quickstartKey(t, id)}.AsMechanism()),
		kgo.RequestRetries(0), kgo.RecordRetries(0), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// getStatusPage reads / at url: the page and its headers, status 200.
func getStatusPage(t *testing.T, url string) (string, http.Header) {
	t.Helper()
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /: %s", resp.Status)
	}
	return string(b), resp.Header
}

// acmeRow is shop/acme's row of the tenants' table: connections,
// mechanisms, allowed, refused, refusals by cause, produced bytes.
var acmeRow = regexp.MustCompile(`<tr><td class="l">shop</td><td class="l">acme</td><td>([0-9]+)</td><td class="l">([^<]*)</td><td>([0-9]+)</td><td>[0-9]+</td><td[^>]*>([0-9]+)</td><td class="l">([^<]*)</td><td>([0-9]+)</td>`)

// waitAcmeRow reads the page at url until shop/acme's row shows
// connections, decisions allowed and refused and bytes produced, 20
// seconds at most; it returns the last page read, its headers and the row
// (nil when there is none).
func waitAcmeRow(t *testing.T, url string) (page string, hdr http.Header, m []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, hdr = getStatusPage(t, url)
		m = acmeRow.FindStringSubmatch(page)
		if (m != nil && m[1] != "0" && m[3] != "0" && m[4] != "0" && m[6] != "0") || time.Now().After(deadline) {
			return page, hdr, m
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkStatusPageContent: the page shows the upstreams' table with a
// broker of shop, the budget and throttling columns and the bounds; and it
// is self-contained.
func checkStatusPageContent(t *testing.T, page string) {
	t.Helper()
	for _, want := range []string{"<h2>Upstreams</h2>", `<table id="upstreams">`, "Throttle p95", "Budget wait p95", "max_connections_per_tenant", "auth_timeout"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if !regexp.MustCompile(`<td class="l">shop</td><td class="l">[0-9]+|<td class="l">shop</td><td class="l">bootstrap`).MatchString(page) {
		t.Errorf("no broker of shop in the upstreams table")
	}
	// Self-contained: no script, no stylesheet or image fetched, no link
	// but the endpoint's own.
	for _, bad := range []string{"<script", "<link", "<img", "src=", "http://", "https://", "//"} {
		if strings.Contains(strings.ReplaceAll(page, "<!DOCTYPE html>", ""), bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
}
