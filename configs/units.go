package configs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written "10s", "1h", "100ms" in YAML.
// A bare 0 is accepted; any other bare number is refused, because "30" could
// mean seconds or milliseconds and the operator must say which.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String writes the duration as Go does ("1m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML implements yaml.InterfaceUnmarshaler.
func (d *Duration) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*d = 0
		return nil
	case string:
		p, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			return fmt.Errorf("%q is not a duration (write it like 500ms, 10s, 5m, 1h)", x)
		}
		*d = Duration(p)
		return nil
	case uint64:
		if x == 0 {
			*d = 0
			return nil
		}
	case int64:
		if x == 0 {
			*d = 0
			return nil
		}
	}
	return fmt.Errorf("%v is not a duration: give it a unit (500ms, 10s, 5m, 1h)", v)
}

// MarshalYAML writes the duration back in the form it is read.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalText lets /config (JSON) show "10s" rather than nanoseconds.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ByteSize is a size written as a number of bytes or with a unit: "64KiB", "16MiB", "1GiB".
// Binary units (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB)
// powers of 1000, as Kafka's own documentation writes them.
type ByteSize int64

// Int returns the size in bytes.
func (b ByteSize) Int() int64 { return int64(b) }

// String writes the size with the largest binary unit that divides it.
func (b ByteSize) String() string {
	n := int64(b)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

var byteUnits = []struct {
	suffix string
	size   int64
}{
	// Longest suffixes first, so that "MiB" is not read as "B".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// ParseByteSize reads "16MiB", "64KiB", "1GiB", "10MB" or a plain number of bytes.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.size
			t = strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || t == "" {
		return 0, fmt.Errorf("%q is not a size (write it like 512KiB, 16MiB, 1GiB or a number of bytes)", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML implements yaml.InterfaceUnmarshaler.
func (b *ByteSize) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*b = 0
		return nil
	case string:
		n, err := ParseByteSize(x)
		if err != nil {
			return err
		}
		*b = n
		return nil
	case uint64:
		if x > math.MaxInt64 {
			return fmt.Errorf("%d is too large", x)
		}
		*b = ByteSize(x)
		return nil
	case int64:
		if x < 0 {
			return fmt.Errorf("%d is negative", x)
		}
		*b = ByteSize(x)
		return nil
	}
	return fmt.Errorf("%v is not a size (write it like 512KiB, 16MiB, 1GiB or a number of bytes)", v)
}

// MarshalYAML writes the size back in the form it is read.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// Secret is a value written literally or as "file:/path" (read at load, never logged).
// After Load, the value is the secret itself (a "file:" reference has been read,
// its trailing newline trimmed): use Value to get it. String, GoString and the
// marshalers redact it so that a %v, a log line or the /config endpoint never
// shows it.
type Secret string

const redacted = "<redacted>"

// Value returns the secret itself.
func (s Secret) Value() string { return string(s) }

// String redacts the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString redacts the secret in %#v too.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// UnmarshalYAML implements yaml.InterfaceUnmarshaler: a scalar, kept as written;
// Load reads "file:" references afterwards (it knows flexway.yaml's folder).
func (s *Secret) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*s = ""
	case string:
		*s = Secret(x)
	case map[string]any, []any:
		// Never echo the value: it may be the secret, mistyped.
		return errors.New("a secret is a string: the value itself or \"file:/path\"")
	default:
		*s = Secret(fmt.Sprint(x))
	}
	return nil
}

// MarshalYAML redacts the secret.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText redacts the secret (JSON, text encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
