package auth

import (
	"crypto/x509"

	"github.com/flexway/flexway/configs"
)

// MatchCert finds a verified client certificate in auth.mtls.clients (I3):
// by its whole subject or by "CN=" and its common name. The identity lives
// until the certificate's NotAfter.
func MatchCert(snap *configs.Snapshot, cert *x509.Certificate) Result {
	for _, c := range snap.Clients {
		if c.Subject == cert.Subject.String() || c.Subject == "CN="+cert.Subject.CommonName {
			return Result{User: c.ID, ID: &Identity{Principal: c.ID, Mechanism: configs.MechMTLS, Tenant: c.Tenant, Ops: c.Operations, Expires: cert.NotAfter, subject: c.Subject}}
		}
	}
	return Result{Cause: "certificate not declared in auth.mtls.clients"}
}
