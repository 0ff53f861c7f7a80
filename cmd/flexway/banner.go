package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flexway/flexway/configs"
)

// banner prints how to reach the gateway (issue 13.4): for each virtual
// cluster and each listener that serves it, the bootstrap and the kcat
// commands that produce to and consume its first topic that some key can
// use; and the embedded brokers' own addresses (so a user can look at the
// physical names they hold). It never suggests a key that is expired, or
// whose operations do not open the command's action to an API key. A
// cluster in refused (U3: its upstream reaches the physical cluster of an
// earlier one, engine.RefusedClusters) is said to be refused, with why,
// and given no bootstrap or command: every connection to it is closed.
func banner(w io.Writer, snap *configs.Snapshot, ports int, embedded map[string][]string, refused map[string]string, now time.Time) {
	fmt.Fprintf(w, "flexway: serving %d listener ports\n", ports)
	l := snap.Listener
	keyDir := ""
	if ak := snap.File.Auth.APIKeys; ak != nil {
		keyDir = filepath.Dir(strings.TrimPrefix(snap.KeyStorePath, "file:"))
	}
	for _, name := range sortedNames(snap.Clusters) {
		cl := snap.Clusters[name]
		if why, ok := refused[name]; ok {
			fmt.Fprintf(w, "\ncluster %s: refused, every connection to it is closed: %s\n", name, why)
			continue
		}
		topic, prod, cons := bannerKeys(snap, cl, now)
		if l.TLS != nil {
			boot := net.JoinHostPort("bootstrap."+name+"."+l.SNIDomain, strconv.Itoa(tlsPort(l)))
			fmt.Fprintf(w, "\ncluster %s, TLS listener: bootstrap %s (SNI; the names *.%s.%s must resolve to this gateway)\n", name, boot, name, l.SNIDomain)
			tlsArgs := "-X security.protocol=SASL_SSL -X ssl.ca.location=" + trustedCA(l.TLS)
			printKcat(w, boot, tlsArgs, topic, prod, cons, keyDir)
			if topic == "" {
				otherIdentities(w, snap, cl, "-X security.protocol=SSL -X ssl.ca.location="+trustedCA(l.TLS))
			}
		}
		if l.Plaintext != nil && l.Plaintext.Clusters[name] != nil {
			boot := net.JoinHostPort(l.Plaintext.AdvertisedHost, strconv.Itoa(l.Plaintext.Clusters[name].Ports.From))
			fmt.Fprintf(w, "\ncluster %s, plaintext fallback: bootstrap %s\n", name, boot)
			printKcat(w, boot, "-X security.protocol=SASL_PLAINTEXT", topic, prod, cons, keyDir)
			if topic == "" {
				otherIdentities(w, snap, cl, "")
			}
		}
	}
	ups := make([]string, 0, len(embedded))
	for up := range embedded {
		ups = append(ups, up)
	}
	sort.Strings(ups)
	for _, up := range ups {
		fmt.Fprintf(w, "\nembedded upstream %s (the broker itself, physical names): kcat -L -b %s\n", up, strings.Join(embedded[up], ","))
	}
	fmt.Fprintln(w)
}

// bannerKeys picks the first topic of cl (by name) that an API key may use,
// and the first keys (by id) that may produce to it and consume it: not
// expired, bound to an operation of cl on the topic with that action and a
// plain alternative. topic is "" when no key can use any topic.
func bannerKeys(snap *configs.Snapshot, cl *configs.Cluster, now time.Time) (topic string, prod, cons *configs.APIKey) {
	can := func(k *configs.APIKey, t, action string) bool {
		if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
			return false
		}
		for _, id := range k.Operations {
			op := snap.Operations[id]
			if op != nil && op.Cluster == cl.Name && op.Channel == t && op.Action == action && op.Admits(configs.MechAPIKey) {
				return true
			}
		}
		return false
	}
	ids := sortedNames(snap.Keys)
	for _, t := range sortedNames(cl.Topics) {
		prod, cons = nil, nil
		for _, id := range ids {
			k := snap.Keys[id]
			if prod == nil && can(k, t, "send") {
				prod = k
			}
			if cons == nil && can(k, t, "receive") {
				cons = k
			}
		}
		if prod != nil || cons != nil {
			return t, prod, cons
		}
	}
	return "", nil, nil
}

// printKcat prints the produce and consume commands over SASL PLAIN.
func printKcat(w io.Writer, boot, protoArgs, topic string, prod, cons *configs.APIKey, keyDir string) {
	pass := func(k *configs.APIKey) string {
		if keyDir != "" {
			f := filepath.Join(keyDir, k.ID+".key")
			if _, err := os.Stat(f); err == nil {
				return "$(cat " + f + ")"
			}
		}
		return "<the key of " + k.ID + ">"
	}
	sasl := func(k *configs.APIKey) string {
		return fmt.Sprintf("%s -X sasl.mechanisms=PLAIN -X sasl.username=%s -X sasl.password=%s", protoArgs, k.ID, pass(k))
	}
	if prod != nil {
		fmt.Fprintf(w, "  produce: echo hello | kcat -P -b %s %s -t %s\n", boot, sasl(prod), topic)
	}
	if cons != nil {
		fmt.Fprintf(w, "  consume: kcat -C -b %s %s -t %s -o beginning -e\n", boot, sasl(cons), topic)
	}
}

// otherIdentities says how a cluster no API key can use is reached: with a
// client certificate (tlsArgs set: the TLS listener) or a token.
func otherIdentities(w io.Writer, snap *configs.Snapshot, cl *configs.Cluster, tlsArgs string) {
	if tlsArgs != "" && cl.X509 && len(snap.Clients) > 0 {
		fmt.Fprintf(w, "  with a client certificate (auth.mtls.clients): kcat -L -b <bootstrap> %s -X ssl.certificate.location=<its certificate> -X ssl.key.location=<its key>\n", tlsArgs)
	}
	if cl.OAuth {
		for _, is := range snap.File.Auth.Issuers {
			fmt.Fprintf(w, "  with a token of issuer %s (audience %s): -X sasl.mechanisms=OAUTHBEARER\n", is.Name, is.Audience)
		}
	}
}

// tlsPort is the port clients reach the TLS listener at.
func tlsPort(l *configs.KafkaListener) int {
	if l.AdvertisedPort != 0 {
		return l.AdvertisedPort
	}
	_, p, _ := net.SplitHostPort(l.Address)
	n, _ := strconv.Atoi(p)
	return n
}

// trustedCA names the CA file a client should trust for the listener's
// certificate: client_ca_file, or a certificate file beside cert_file,
// if it verifies the certificate; cert_file itself if self-signed.
func trustedCA(t *configs.ListenerTLS) string {
	leaf := firstCert(t.CertFile)
	if leaf == nil {
		return "<the CA of " + t.CertFile + ">"
	}
	cands := []string{}
	if t.ClientCAFile != "" {
		cands = append(cands, t.ClientCAFile)
	}
	for _, pat := range []string{"*.crt", "*.pem"} {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(t.CertFile), pat))
		cands = append(cands, m...)
	}
	for _, f := range cands {
		if f == t.CertFile {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			continue
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
			return f
		}
	}
	if leaf.CheckSignatureFrom(leaf) == nil {
		return t.CertFile
	}
	return "<the CA that issued " + leaf.Issuer.String() + ">"
}

func firstCert(file string) *x509.Certificate {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil
	}
	return c
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
