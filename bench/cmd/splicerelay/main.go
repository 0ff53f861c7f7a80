// Command splicerelay is the benchmark's reference relay (issue 11, item 4):
// the physical limit of relaying a Kafka connection through a user process
// on this machine. It parses nothing: each accepted TCP connection gets one
// connection to its target, and the bytes are moved both ways by io.Copy
// between two *net.TCPConn, which on Linux is splice(2) through a pipe (net:
// TCPConn.ReadFrom -> spliceFrom -> pollSplice): the payload never enters the
// process's memory.
//
// One listening address per broker address:
//
//	splicerelay -map 127.0.0.1:29196=127.0.0.1:29195[,LISTEN=TARGET...]
//
// For clients to stay on the relay past the bootstrap, the broker must
// advertise the relay's address: bench/run gives its broker an extra
// listener (RELAY, 29195) whose advertised address is the relay's (29196).
//
// It prints "splicerelay: listening on A -> B" per pair once every listener
// is bound, and stops on SIGTERM or SIGINT.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	spec := flag.String("map", "", "LISTEN=TARGET pairs, comma-separated (e.g. 127.0.0.1:29196=127.0.0.1:29195)")
	flag.Parse()
	pairs, err := parseMap(*spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "splicerelay:", err)
		os.Exit(2)
	}
	var lns []net.Listener
	for _, p := range pairs {
		ln, err := net.Listen("tcp", p[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "splicerelay:", err)
			os.Exit(1)
		}
		lns = append(lns, ln)
	}
	for i, p := range pairs {
		fmt.Printf("splicerelay: listening on %s -> %s\n", lns[i].Addr(), p[1])
		go serve(lns[i], p[1])
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	for _, ln := range lns {
		ln.Close()
	}
}

func parseMap(s string) ([][2]string, error) {
	var out [][2]string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		l, t, ok := strings.Cut(f, "=")
		if !ok || l == "" || t == "" {
			return nil, fmt.Errorf("-map %q: want LISTEN=TARGET", f)
		}
		out = append(out, [2]string{l, t})
	}
	if len(out) == 0 {
		return nil, errors.New("-map: no LISTEN=TARGET pair")
	}
	return out, nil
}

func serve(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: wait a little rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go relay(c.(*net.TCPConn), target)
	}
}

// relay joins client to a new connection to target, one to one, until both
// directions have ended; a direction's end is passed on as a half close.
func relay(client *net.TCPConn, target string) {
	defer client.Close()
	d, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "splicerelay: %s: %v\n", target, err)
		return
	}
	up := d.(*net.TCPConn)
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src *net.TCPConn) {
		defer wg.Done()
		// *net.TCPConn to *net.TCPConn: splice(2) on Linux.
		if _, err := io.Copy(dst, src); err != nil {
			// A reset one way ends both.
			client.Close()
			up.Close()
			return
		}
		_ = dst.CloseWrite()
	}
	go pipe(up, client)
	go pipe(client, up)
	wg.Wait()
}
