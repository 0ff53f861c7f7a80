package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 13.6, seed 001 "Les identités", seed 002 troubleshooting: an
// operation's security alternatives bind the mechanism. Here produceOrders
// admits tokens only (oauth2 orders:write), consumeOrders API keys and
// tokens, consumePayments tokens only. acme-app's key is bound to all three:
// over PLAIN it opens consumeOrders alone.
func TestPlainKeyOnOAuthOnlyOperation(t *testing.T) {
	oe := newOAuthEnvWith(t, func(c string) string {
		c = strings.Replace(c, `security: [ { $ref: "#/components/securitySchemes/apiKey" }, { $ref: "#/components/securitySchemes/ordersWrite" } ]`,
			`security: [ { $ref: "#/components/securitySchemes/ordersWrite" } ]`, 1)
		return strings.Replace(c, `security: [ { $ref: "#/components/securitySchemes/apiKey" } ]`,
			`security: [ { $ref: "#/components/securitySchemes/ordersRead" } ]`, 1) // consumePayments
	}, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	app := oe.client("acme-app", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	err := app.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("PLAIN key producing through an oauth2-only operation: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"orders", "payments"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, tp := range resp.Topics {
		codes[*tp.Topic] = tp.ErrorCode
	}
	if codes["orders"] != 0 || codes["payments"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("Metadata over PLAIN: %v, want orders served (consumeOrders has a plain alternative), payments UNKNOWN_TOPIC_OR_PARTITION", codes)
	}

	// A key whose only operation admits tokens only: no operation of the
	// cluster admits it.
	prod := oe.client("acme-orders-producer", kgo.RequestRetries(0))
	if err := prod.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("PLAIN key bound to an oauth2-only operation: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	oe.waitLog(5*time.Second, "kafka authentication refused", "no operation of the cluster admits the identity", "user=acme-orders-producer")

	// The same operation opens to a token carrying its scope.
	tok := oe.tokenClient(oe.token(map[string]any{"scope": "orders:write"}))
	if err := tok.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("token with orders:write: %v", err)
	}
}

// Seed 002 troubleshooting: PLAIN on a cluster where no operation has a
// plain alternative is UNSUPPORTED_SASL_MECHANISM, OAUTHBEARER is offered.
func TestPlainUnsupportedWithoutPlainAlternative(t *testing.T) {
	oe := newOAuthEnvWith(t, func(c string) string {
		c = strings.ReplaceAll(c, `{ $ref: "#/components/securitySchemes/apiKey" }, `, "")
		return strings.ReplaceAll(c, `security: [ { $ref: "#/components/securitySchemes/apiKey" } ]`,
			`security: [ { $ref: "#/components/securitySchemes/ordersRead" } ]`)
	}, 1)
	resp := dialPlain(t, oe.boot).handshake("PLAIN")
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "OAUTHBEARER" {
		t.Fatalf("PLAIN without a plain alternative: error %d, mechanisms %v; want UNSUPPORTED_SASL_MECHANISM offering OAUTHBEARER", resp.ErrorCode, resp.SupportedMechanisms)
	}
}
