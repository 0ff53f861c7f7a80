package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestZZAcks0(t *testing.T) {
	env := newTestEnv(t, "")
	for r := 0; r < 3; r++ {
		var in strings.Builder
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&in, "run%d-%d\n", r, i)
		}
		args := env.kcatArgs("acme-app", "-P", "-t", "orders", "-p", "0", "-X", "acks=0", "-d", "broker,protocol,msg")
		_, stderr, err := runExt(t, 30*time.Second, in.String(), "/usr/bin/kcat", args...)
		got := directValues(t, env, env.phys("acme", "orders"), (r+1)*10, 2*time.Second)
		t.Logf("run %d: err %v, broker holds %d", r, err, len(got))
		if len(got) < (r+1)*10 {
			t.Logf("kcat stderr:\n%s", stderr)
			break
		}
	}
}
