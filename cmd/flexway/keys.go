package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flexway/flexway/configs"
)

const keysUsage = `usage: flexway keys new --id ID --tenant T --operations a,b [--expires 90d] [--config flexway.yaml]

Prints a fresh random API key, once, and the entry to paste under "keys:" in
the key store (auth.api_keys.store). The store holds the key's SHA-256 only:
the key itself is kept nowhere, give it to the client now (SPEC I1).
`

// runKeys is "flexway keys ...": only "new" for now. It returns the exit
// status: 0, 1 when the key cannot be made, 2 for a usage error.
func runKeys(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "new" {
		fmt.Fprint(stderr, keysUsage)
		return 2
	}
	fs := flag.NewFlagSet("flexway keys new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, keysUsage+"\n")
		fs.PrintDefaults()
	}
	id := fs.String("id", "", "the key's id: the SASL PLAIN user name")
	tenant := fs.String("tenant", "", "the tenant the key belongs to (letters, digits and '-')")
	ops := fs.String("operations", "", "the operations the key opens, comma-separated")
	expires := fs.String("expires", "", "the key's lifetime: 90d, or a Go duration like 720h (default: no expiry)")
	config := fs.String("config", "", "a flexway.yaml whose contract must serve the operations (optional check)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flexway keys new: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var opList []string
	if *ops != "" {
		for _, op := range strings.Split(*ops, ",") {
			opList = append(opList, strings.TrimSpace(op))
		}
	}
	var life time.Duration
	if *expires != "" {
		var err error
		if life, err = configs.ParseExpiry(*expires); err != nil {
			fmt.Fprintf(stderr, "flexway keys new: --expires %v\n", err)
			return 2
		}
	}
	if *config != "" {
		snap, err := configs.Load(*config)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		for _, op := range opList {
			if snap.Operations[op] == nil {
				fmt.Fprintf(stderr, "flexway keys new: --operations: %q is not served to Kafka clients by %s\n", op, snap.ContractPath)
				return 1
			}
		}
	}
	key, entry, err := configs.NewKeyEntry(*id, *tenant, opList, life)
	if err != nil {
		fmt.Fprintf(stderr, "flexway keys new: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "# The key, shown once and kept nowhere: the client's SASL PLAIN password (user name %s).\n", *id)
	fmt.Fprintln(stdout, key)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "# The entry to paste under keys: in the store (auth.api_keys.store); it holds the key's hash only.")
	fmt.Fprint(stdout, entry)
	return 0
}
