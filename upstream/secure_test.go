package upstream

import (
	"context"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslCluster is a kfake cluster whose one user is flexway/pass with mech.
func saslCluster(t *testing.T, mech, pass string, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech, "flexway", pass)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func saslConfig(brokers []string, mech, pass string) *configs.Upstream {
	return &configs.Upstream{Protocol: "kafka", Brokers: brokers, Timeout: configs.Duration(5 * time.Second),
		SASL: &configs.UpstreamSASL{Mechanism: mech, Username: "flexway", Password: configs.Secret(pass)}}
}

// Dial authenticates before it hands the connection over: a request
// written at once is served; the session's end is known when the broker
// announces one (KIP-368).
func TestDialAuthenticates(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			addrs := saslCluster(t, mech, "s3cret", kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": "60000"}))
			u := start(t, saslConfig(addrs, mech, "s3cret"))
			began := time.Now()
			c, err := u.Dial(context.Background(), addrs[0])
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			if a := c.Auth(); a == nil || a.Mechanism() != mech {
				t.Fatalf("the dial's exchange: %+v", a)
			}
			if rb := c.Auth().RenewBy(); rb.Before(began.Add(50*time.Second)) || rb.After(began.Add(60*time.Second)) {
				t.Fatalf("RenewBy %v after the dial, want before the 60 s lifetime, with a margin", rb.Sub(began))
			}
			req := kmsg.NewPtrMetadataRequest()
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write(frame); err != nil {
				t.Fatal(err)
			}
			var head [8]byte
			if _, err := io.ReadFull(c, head[:]); err != nil {
				t.Fatalf("no answer to an authenticated request: %v", err)
			}
			if corr := int32(binary.BigEndian.Uint32(head[4:])); corr != 7 {
				t.Fatalf("correlation id %d, want 7", corr)
			}
		})
	}
}

// Refused credentials: Start fails naming the upstream, never the
// password; a dial is an *AuthError, and the refusal is remembered until a
// reload reads the credentials again (Update).
func TestDialRefusedCredentials(t *testing.T) {
	addrs := saslCluster(t, "SCRAM-SHA-512", "right-password")
	_, err := Start(context.Background(), "events", saslConfig(addrs, "SCRAM-SHA-512", "wrong-password"), nil)
	if err == nil || !strings.Contains(err.Error(), "events") || strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("Start with a wrong password: %v", err)
	}
	u := start(t, saslConfig(addrs, "SCRAM-SHA-512", "right-password"))
	if err := u.Update(saslConfig(addrs, "SCRAM-SHA-512", "wrong-password")); err != nil {
		t.Fatal(err)
	}
	_, err = u.Dial(context.Background(), addrs[0])
	if !IsAuthError(err) || strings.Contains(err.Error(), "wrong-password") || !strings.Contains(err.Error(), "events") {
		t.Fatalf("Dial with a wrong password: %v, want an AuthError naming the upstream", err)
	}
	if !u.Refused() {
		t.Fatal("the refusal is not remembered")
	}
	if err := u.Update(saslConfig(addrs, "SCRAM-SHA-512", "right-password")); err != nil {
		t.Fatal(err)
	}
	if u.Refused() {
		t.Fatal("the refusal outlived the reload")
	}
	c, err := u.Dial(context.Background(), addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
