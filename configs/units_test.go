package configs

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

func TestDurationYAML(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"10s": 10 * time.Second, `"1h"`: time.Hour, "100ms": 100 * time.Millisecond, "0": 0, "100us": 100 * time.Microsecond, "~": 0,
	} {
		var v struct {
			D Duration `yaml:"d"`
		}
		if err := yaml.Unmarshal([]byte("d: "+in), &v); err != nil || v.D.D() != want {
			t.Errorf("%s: %v, %v; want %v", in, v.D, err, want)
		}
	}
	for _, in := range []string{"10", "ten", "[1s]", "1.5"} {
		var v struct {
			D Duration `yaml:"d"`
		}
		if err := yaml.Unmarshal([]byte("d: "+in), &v); err == nil {
			t.Errorf("%s accepted as %v", in, v.D)
		}
	}
}

func TestByteSizeYAML(t *testing.T) {
	for in, want := range map[string]ByteSize{
		"16MiB": 16 << 20, "64KiB": 64 << 10, "1GiB": 1 << 30, "2TiB": 2 << 40, "10MB": 10e6, "1kb": 1000,
		"4096": 4096, `"512 KiB"`: 512 << 10, "7B": 7,
	} {
		var v struct {
			B ByteSize `yaml:"b"`
		}
		if err := yaml.Unmarshal([]byte("b: "+in), &v); err != nil || v.B != want {
			t.Errorf("%s: %v, %v; want %v", in, v.B, err, want)
		}
	}
	for _, in := range []string{"-1", "16XB", "MiB", "1.5GiB", "99999999999TiB", "[1]"} {
		var v struct {
			B ByteSize `yaml:"b"`
		}
		if err := yaml.Unmarshal([]byte("b: "+in), &v); err == nil {
			t.Errorf("%s accepted as %v", in, v.B)
		}
	}
	if s := ByteSize(128 << 20).String(); s != "128MiB" {
		t.Errorf("String = %s", s)
	}
	if s := ByteSize(1000).String(); s != "1000" {
		t.Errorf("String = %s", s)
	}
}

// TestSecretNeverShown: a Secret prints, marshals and logs as <redacted>;
// only Value gives it (SPEC I4: never the key).
func TestSecretNeverShown(t *testing.T) {
	s := Secret("hunter2")
	for _, out := range []string{
		fmt.Sprint(s), fmt.Sprintf("%v %s %#v", s, s, s), fmt.Sprintf("%+v", UpstreamSASL{Password: s}),
	} {
		if strings.Contains(out, "hunter2") {
			t.Errorf("secret shown: %s", out)
		}
	}
	j, _ := json.Marshal(UpstreamSASL{Password: s})
	y, _ := yaml.Marshal(UpstreamSASL{Password: s})
	if strings.Contains(string(j), "hunter2") || strings.Contains(string(y), "hunter2") {
		t.Errorf("secret marshalled: %s / %s", j, y)
	}
	if s.Value() != "hunter2" {
		t.Error("Value lost the secret")
	}
	// A mistyped secret is refused without being echoed.
	var v struct {
		P Secret `yaml:"p"`
	}
	err := yaml.Unmarshal([]byte("p: [hunter2]"), &v)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	e := &LoadError{Errors: []FieldError{
		{File: "flexway.yaml", Line: 12, Path: "listeners.kafka.max_session_lifetime", Msg: "30s is outside 1m..24h"},
		{File: "flexway.yaml", Path: "version", Msg: "required"},
	}}
	want := "flexway.yaml:12: listeners.kafka.max_session_lifetime: 30s is outside 1m..24h\nflexway.yaml: version: required"
	if e.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", e.Error(), want)
	}
}
