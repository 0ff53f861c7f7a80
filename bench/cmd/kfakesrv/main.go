// Command kfakesrv is an in-memory Kafka broker (franz-go's kfake) for the
// round-trip measurements of bench/roundtrip (issue 11.4): what a Produce
// round trip costs the gateway and the splice relay in system calls,
// context switches and CPU time, without the real broker (and its lock).
//
//	kfakesrv -port 29392 -partitions 1
//	kfakesrv -port 29395 -advertise 127.0.0.1:29396   # behind a splice relay on 29396
//
// It is also bench/run's broker with BENCH_BROKER=kfake (bench/cmd/harness,
// kfake.go): a fresh one per run.
//
//	kfakesrv -port 29195 -advertise 127.0.0.1:29196 -partitions 3 -sasl-user flexway
//
// It seeds the topics perf, acme.perf, big and acme.big, counts the Produce
// requests it handles, and prints "produces N" at each SIGUSR1 and at its
// end (SIGINT, SIGTERM). -advertise makes it tell clients another address (a
// relay's) than the one it listens on, as bench/run's RELAY listener does.
// -sasl-user makes every client authenticate with SASL PLAIN as that user
// (a superuser), its password from the environment (KFAKESRV_SASL_PASSWORD),
// as bench/run's RELAY listener asks of the relay's clients.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	port := flag.Int("port", 29392, "port to listen on (127.0.0.1)")
	parts := flag.Int("partitions", 1, "partitions of perf and acme.perf")
	adv := flag.String("advertise", "", "advertise this address instead of the listener's (a relay's)")
	version := flag.Bool("version", false, "print the kfake module's version and exit")
	saslUser := flag.String("sasl-user", "", "SASL PLAIN user every client must authenticate as (password: env KFAKESRV_SASL_PASSWORD)")
	flag.Parse()
	if *version {
		fmt.Println(kfakeVersion())
		return
	}
	var produces atomic.Int64
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port),
		kfake.SeedTopics(int32(*parts), "acme.perf", "perf", "big", "acme.big"),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil || *adv == "" {
				return ln, err
			}
			a, err := net.ResolveTCPAddr("tcp", *adv)
			if err != nil {
				ln.Close()
				return nil, err
			}
			return advertised{ln, a}, nil
		})}
	if *saslUser != "" {
		pass := os.Getenv("KFAKESRV_SASL_PASSWORD")
		if pass == "" {
			fmt.Fprintln(os.Stderr, "kfakesrv: -sasl-user without KFAKESRV_SASL_PASSWORD")
			os.Exit(2)
		}
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("PLAIN", *saslUser, pass))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakesrv:", err)
		os.Exit(1)
	}
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		produces.Add(1)
		return nil, nil, false // counted, then handled as usual
	})
	fmt.Println("kfakesrv: listening on", c.ListenAddrs())
	usr := make(chan os.Signal, 1)
	signal.Notify(usr, syscall.SIGUSR1)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	for {
		select {
		case <-usr:
			fmt.Println("produces", produces.Load())
		case <-stop:
			fmt.Println("produces", produces.Load())
			c.Close()
			return
		}
	}
}

// kfakeVersion is the version of the kfake module kfakesrv was built with.
func kfakeVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go/pkg/kfake" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

// advertised is a listener that reports another address than its own.
type advertised struct {
	net.Listener
	a net.Addr
}

func (l advertised) Addr() net.Addr { return l.a }
