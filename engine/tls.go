package engine

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/flexway/flexway/configs"
)

// buildServerTLS makes the listener's tls.Config (start-only, S1).
func buildServerTLS(l *configs.KafkaListener) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(l.TLS.CertFile, l.TLS.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: listeners.kafka.tls: %v", ErrEngineConfig, err)
	}
	cfg := &tls.Config{
		Certificates:                []tls.Certificate{cert},
		MinVersion:                  tls.VersionTLS12,
		DynamicRecordSizingDisabled: true,
	}
	if l.TLS.ClientCAFile != "" {
		pem, err := os.ReadFile(l.TLS.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: listeners.kafka.tls.client_ca_file: %v", ErrEngineConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: listeners.kafka.tls.client_ca_file: no certificate", ErrEngineConfig)
		}
		cfg.ClientCAs = pool
		// SASL clients present no certificate; a certificate, when given, must verify.
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}
