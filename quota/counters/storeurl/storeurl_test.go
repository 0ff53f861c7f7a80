package storeurl

import (
	"strings"
	"testing"
)

// The forms: one Redis, Sentinel, Cluster, and what is refused, without
// ever the password in the reason.
func TestForms(t *testing.T) {
	for _, tc := range []struct{ url, host string }{
		{"redis://u:pw-1@10.0.0.1:6380/2", "10.0.0.1:6380"},
		{"rediss://10.0.0.1", "10.0.0.1:6379"},
		{"unix:///run/redis.sock?db=1", "/run/redis.sock"},
		{"redis-sentinel://:pw-1@s1:26380,s2,[::1]:26381/mymaster/3?sentinel_password=spw", "s1:26380,s2:26379,[::1]:26381/mymaster"},
		{"rediss-sentinel://s1/mymaster", "s1:26379/mymaster"},
		{"redis-cluster://u:pw-1@n1:7000,n2:7001,n3", "n1:7000,n2:7001,n3:6379"},
		{"rediss-cluster://n1:7000/", "n1:7000"},
	} {
		st, err := Parse(tc.url)
		if err != nil || st.Host != tc.host {
			t.Errorf("%s: host %q, %v; want %q", tc.url, st.Host, err, tc.host)
		}
	}
	st, _ := Parse("redis-sentinel://du:pw-1@s1:26380,s2/mymaster/3?sentinel_username=su&sentinel_password=spw")
	if f := st.Failover; f == nil || f.MasterName != "mymaster" || f.DB != 3 || f.Username != "du" || f.Password != "pw-1" ||
		f.SentinelUsername != "su" || f.SentinelPassword != "spw" || strings.Join(f.SentinelAddrs, ",") != "s1:26380,s2:26379" {
		t.Errorf("the Sentinel form's options: %+v", st.Failover)
	}
	st, _ = Parse("rediss-cluster://u:pw-1@n1:7000,n2:7001")
	if c := st.Cluster; c == nil || c.Username != "u" || c.Password != "pw-1" || strings.Join(c.Addrs, ",") != "n1:7000,n2:7001" ||
		c.TLSConfig == nil || c.TLSConfig.ServerName != "" {
		t.Errorf("the Cluster form's options: %+v", st.Cluster)
	}
	for _, tc := range []struct{ url, why string }{
		{"redis-sentinel://:pw-1@s1:26379", "master name"},
		{"redis-sentinel://:pw-1@s1:26379/m/0/1", "master name"},
		{"redis-sentinel://:pw-1@s1:26379/m/x", "database"},
		{"redis-sentinel://:pw-1@s1:26379,/m", "host"},
		{"redis-sentinel://:pw-1@s1:99999/m", "port"},
		{"redis-sentinel://:pw-1@s1/m?addr=s2:26379", "addr"},
		{"redis-sentinel://s1/m?password=pw-1", "password"},
		{"redis-sentinel://:pw-1@s1/m?no_such_option=1", "no_such_option"},
		{"redis-sentinel://:pw-1@s1/m?route_by_latency=true", "the store writes"},
		{"redis-sentinel://u:pw-1/x@s1/m", "port"}, // a '/' not encoded: the password is not the host
		{"redis-cluster://:pw-1@n1?read_only=true", "the store writes"},
		{"redis-cluster://:pw-1@n1:7000/0", "database"},
		{"redis-cluster://:pw-1@n1:7000?addr=n2:7001", "addr"},
		{"redis-cluster://:pw-1@n1:7000,n2:x", "port"},
		{"redis-custer://:pw-1@n1:7000", "scheme"},
		{"redis://:pw-1@[::1", "well-formed"},
		{"pw-1", "scheme"},
	} {
		_, err := Parse(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.why) || strings.Contains(err.Error(), "pw-1") {
			t.Errorf("%s: %v; want a refusal naming %q, never the password", tc.url, err, tc.why)
		}
	}
}
