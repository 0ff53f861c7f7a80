package engine

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
)

// testCA is a certificate authority made by the test (internal/testkit's),
// with the engine tests' short forms.
type testCA struct {
	*testkit.CA
	pem []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	ca := testkit.NewCA(t, name)
	return &testCA{CA: ca, pem: ca.PEM}
}

// issue makes a leaf certificate: DNS names for a server, a subject for a client.
func (ca *testCA) issue(t *testing.T, cn string, dns []string, client bool, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.Issue(t, testkit.Leaf{CommonName: cn, Names: dns, Client: client, NotAfter: notAfter})
}

func (ca *testCA) pool() *x509.CertPool { return ca.Pool() }

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	return testkit.WriteFile(t, dir, name, b)
}

func keyPair(t *testing.T, certPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	return testkit.KeyPair(t, certPEM, keyPEM)
}
