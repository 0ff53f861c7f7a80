package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The start of flexway on files a user may hand it (issue 13.8): each ends
// with a clear error naming the file and what is wrong, and a non-zero exit,
// never a panic, a hang or memory spent on a file it should not read.

// runResult is what one run() gave.
type runResult struct {
	code           int
	stdout, stderr string
}

// runFlexway drives run() as main does, and fails the test on a panic or
// when run does not return within a minute.
func runFlexway(t *testing.T, args ...string) runResult {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan any, 1)
	code := -1
	go func() {
		defer func() { done <- recover() }()
		code = run(args, &out, &errb)
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("run(%q) panicked: %v\nstderr:\n%s", args, p, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("run(%q) did not return in a minute", args)
	}
	return runResult{code, out.String(), errb.String()}
}

// copyQuickstart copies configs/quickstart into a new folder and returns it.
func copyQuickstart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"flexway.yaml", "asyncapi.yaml", "api-keys.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../configs/quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeTestFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// bigFile makes a file of size bytes that starts as YAML (a sparse file:
// the disk holds none of it).
func bigFile(t *testing.T, name string, size int64) {
	t.Helper()
	writeTestFile(t, name, []byte("version: 1\n"))
	if err := os.Truncate(name, size); err != nil {
		t.Fatal(err)
	}
}

// anchorBomb is a "billion laughs": nine anchors, each a list of nine
// aliases of the one before, 9^9 values expanded from 600 bytes.
func anchorBomb(indent string) string {
	var b strings.Builder
	b.WriteString(indent + "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		a := "*l" + string(rune('0'+i-1))
		b.WriteString(indent + "l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [" + strings.Repeat(a+", ", 8) + a + "]\n")
	}
	return b.String()
}

// TestRunHostileFiles: flexway.yaml, the contract and the key store as no
// one should write them, each refused by run with and without -check: exit
// 1, and stderr names the file and says what is wrong (issue 13.8).
func TestRunHostileFiles(t *testing.T) {
	for _, tc := range append(hostileContentCases(), hostileFileCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyQuickstart(t)
			cfg := tc.setup(t, dir)
			for _, args := range [][]string{{"-check", "-config", cfg}, {"-config", cfg}} {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				r := runFlexway(t, args...)
				runtime.ReadMemStats(&after)
				if r.code == 0 {
					t.Errorf("%q: exit 0, stdout:\n%s", args, r.stdout)
				}
				for _, w := range tc.want {
					if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(r.stderr, w) {
						t.Errorf("%q: stderr lacks %q:\n%s", args, w, r.stderr)
					}
				}
				if strings.Contains(r.stderr, "panic") || strings.Contains(r.stdout, "configuration valid") {
					t.Errorf("%q: stdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
				}
				if alloc := (after.TotalAlloc - before.TotalAlloc) >> 20; tc.maxAlloc > 0 && alloc > tc.maxAlloc {
					t.Errorf("%q: run allocated %d MiB, want at most %d", args, alloc, tc.maxAlloc)
				}
			}
		})
	}
}

// hostileCase is one file as no one should write it, and what run must say.
type hostileCase struct {
	name string
	// setup writes the files in dir (a copy of the quickstart) and
	// returns the flexway.yaml to run.
	setup func(t *testing.T, dir string) string
	// want: in stderr, "DIR" standing for the folder.
	want []string
	// maxAlloc bounds what run may allocate, in MiB (0: not measured).
	maxAlloc uint64
}

// hostileContentCases: files whose content is hostile: empty, binary, a
// NUL, YAML bombs of anchors, nesting far past any configuration's.
func hostileContentCases() []hostileCase {
	return []hostileCase{
		{"an empty flexway.yaml", func(t *testing.T, dir string) string {
			writeTestFile(t, filepath.Join(dir, "flexway.yaml"), nil)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml: empty: nothing is configured"}, 0},
		{"a flexway.yaml of comments only", func(t *testing.T, dir string) string {
			writeTestFile(t, filepath.Join(dir, "flexway.yaml"), []byte("# to do\n\n# later\n"))
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml: empty: nothing is configured"}, 0},
		{"binary bytes", func(t *testing.T, dir string) string {
			b := make([]byte, 64<<10)
			r := rand.NewChaCha8([32]byte{13, 8})
			_, _ = r.Read(b)
			writeTestFile(t, filepath.Join(dir, "flexway.yaml"), b)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml:", "not YAML text: byte ", "(a binary file?)"}, 0},
		{"a NUL in the middle of YAML", func(t *testing.T, dir string) string {
			writeTestFile(t, filepath.Join(dir, "flexway.yaml"), []byte("version: 1\ncontracts:\n  asyncapi: ./async\x00api.yaml\n"))
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml:3: not YAML text: byte 41 is the control character 0x00 (a binary file?)"}, 0},
		{"a YAML bomb of anchors in flexway.yaml", func(t *testing.T, dir string) string {
			// Under a key the types decode into any (a policy's config):
			// the decoder would expand it.
			writeTestFile(t, filepath.Join(dir, "flexway.yaml"), []byte("version: 1\npolicies:\n  definitions:\n    plans:\n      type: quota\n      config:\n"+anchorBomb("        ")))
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml:14: its aliases expand to more than 1048576 values (anchors of aliases of anchors: a YAML bomb?)"}, 64},
		{"a YAML bomb of anchors in the contract", func(t *testing.T, dir string) string {
			b, _ := os.ReadFile(filepath.Join(dir, "asyncapi.yaml"))
			writeTestFile(t, filepath.Join(dir, "asyncapi.yaml"), append(b, []byte("x-laughs:\n"+anchorBomb("  "))...))
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/asyncapi.yaml:", "its aliases expand to more than 1048576 values"}, 64},
		{"a YAML bomb of anchors in the key store", func(t *testing.T, dir string) string {
			writeTestFile(t, filepath.Join(dir, "api-keys.yaml"), []byte("laughs:\n"+anchorBomb("  ")+"keys: []\n"))
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/api-keys.yaml:9: its aliases expand to more than 1048576 values"}, 64},
		{"40 KB of nested lists", func(t *testing.T, dir string) string {
			// goccy's parser spends 660 MB on this one, unguarded.
			writeTestFile(t, filepath.Join(dir, "flexway.yaml"), []byte("version: 1\nx: "+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+"\n"))
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml:2: nested more than 100 levels deep, far more than a configuration needs"}, 64},
		{"a key store nested by indentation", func(t *testing.T, dir string) string {
			var b strings.Builder
			b.WriteString("keys:\n")
			for i := 0; i < 200; i++ {
				b.WriteString(strings.Repeat(" ", i+1) + "- \n")
			}
			writeTestFile(t, filepath.Join(dir, "api-keys.yaml"), []byte(b.String()))
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/api-keys.yaml:", "nested more than 100 levels deep"}, 64},
	}
}

// hostileFileCases: files hostile by their size or kind: 100 MiB, a
// directory, no file, a symlink loop, a named pipe, /dev/zero; and an
// empty contract and key store.
func hostileFileCases() []hostileCase {
	return []hostileCase{
		{"a 100 MiB flexway.yaml", func(t *testing.T, dir string) string {
			bigFile(t, filepath.Join(dir, "flexway.yaml"), 100<<20)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml: cannot read: 100MiB, larger than the 4MiB a configuration file may be"}, 16},
		{"a 100 MiB contract", func(t *testing.T, dir string) string {
			bigFile(t, filepath.Join(dir, "asyncapi.yaml"), 100<<20)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml:14: contracts.asyncapi: cannot read DIR/asyncapi.yaml: 100MiB, larger than the 4MiB a configuration file may be"}, 16},
		{"a 100 MiB key store", func(t *testing.T, dir string) string {
			bigFile(t, filepath.Join(dir, "api-keys.yaml"), 100<<20)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"auth.api_keys.store: cannot read DIR/api-keys.yaml: 100MiB, larger than the 4MiB a configuration file may be"}, 16},
		{"a key store just over the bound", func(t *testing.T, dir string) string {
			bigFile(t, filepath.Join(dir, "api-keys.yaml"), 4<<20+1)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"auth.api_keys.store: cannot read DIR/api-keys.yaml: 4.0MiB, larger than the 4MiB a configuration file may be"}, 16},
		{"a contract path that is a directory", func(t *testing.T, dir string) string {
			if err := os.Mkdir(filepath.Join(dir, "contract.d"), 0o755); err != nil {
				t.Fatal(err)
			}
			replaceIn(t, filepath.Join(dir, "flexway.yaml"), "./asyncapi.yaml", "./contract.d")
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/flexway.yaml:14: contracts.asyncapi: cannot read DIR/contract.d: is a directory, not a file"}, 0},
		{"-config naming a directory", func(t *testing.T, dir string) string {
			return dir
		}, []string{"DIR: cannot read: is a directory, not a file"}, 0},
		{"-config naming no file", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "flexway.yml")
		}, []string{"DIR/flexway.yml: cannot read: no such file or directory"}, 0},
		{"a key store that is a symlink loop", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, "api-keys.yaml"))
			if err := os.Symlink("loop.yaml", filepath.Join(dir, "api-keys.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("api-keys.yaml", filepath.Join(dir, "loop.yaml")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"auth.api_keys.store: cannot read DIR/api-keys.yaml: too many levels of symbolic links"}, 0},
		{"a key store that is a named pipe (a read would block)", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, "api-keys.yaml"))
			if err := syscall.Mkfifo(filepath.Join(dir, "api-keys.yaml"), 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"auth.api_keys.store: cannot read DIR/api-keys.yaml: is not a regular file (p---------)"}, 0},
		{"a flexway.yaml that is /dev/zero (a read would never end)", func(t *testing.T, dir string) string {
			return "/dev/zero"
		}, []string{"/dev/zero: cannot read: is not a regular file (Dc---------)"}, 0},
		{"an empty contract", func(t *testing.T, dir string) string {
			writeTestFile(t, filepath.Join(dir, "asyncapi.yaml"), nil)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/asyncapi.yaml: empty: an AsyncAPI 3 contract is expected"}, 0},
		{"an empty key store", func(t *testing.T, dir string) string {
			writeTestFile(t, filepath.Join(dir, "api-keys.yaml"), nil)
			return filepath.Join(dir, "flexway.yaml")
		}, []string{"DIR/api-keys.yaml: empty: a store without keys is written keys: []"}, 0},
	}
}

func replaceIn(t *testing.T, name, old, new string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s holds no %q", name, old)
	}
	writeTestFile(t, name, bytes.Replace(b, []byte(old), []byte(new), 1))
}

// TestRunUnreadableKeyStore: a key store flexway may not read is refused,
// named, with the system's reason (issue 13.8). As root, file modes do not
// stop a read: run then goes in a copy of this test binary started as the
// user nobody.
func TestRunUnreadableKeyStore(t *testing.T) {
	if os.Geteuid() != 0 {
		dir := copyQuickstart(t)
		if err := os.Chmod(filepath.Join(dir, "api-keys.yaml"), 0); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"-check", "-config", filepath.Join(dir, "flexway.yaml")}, {"-config", filepath.Join(dir, "flexway.yaml")}} {
			r := runFlexway(t, args...)
			want := "auth.api_keys.store: cannot read " + filepath.Join(dir, "api-keys.yaml") + ": permission denied"
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%q: exit %d, stderr:\n%s\nwant %q", args, r.code, r.stderr, want)
			}
		}
		return
	}
	// A folder nobody can enter and read, but the key store: t.TempDir's
	// parents are private to root.
	dir, err := os.MkdirTemp("", "flexway-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"flexway.yaml", "asyncapi.yaml", "api-keys.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../configs/quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, f), b)
	}
	if err := os.Chmod(filepath.Join(dir, "api-keys.yaml"), 0); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "flexway.test")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-check", "-config", filepath.Join(dir, "flexway.yaml")}, {"-config", filepath.Join(dir, "flexway.yaml")}} {
		js, _ := json.Marshal(args)
		cmd := exec.Command(bin, "-test.run=^TestRunAsHelper$")
		cmd.Env = append(os.Environ(), "FLEXWAY_RUN_HELPER_ARGS="+string(js))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Skipf("running as root, where file modes do not stop a read, and cannot start a process as nobody (%v)", err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%q: %v, stdout:\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
		}
		want := "auth.api_keys.store: cannot read " + filepath.Join(dir, "api-keys.yaml") + ": permission denied"
		if ee.ExitCode() != 1 || !strings.Contains(errb.String(), want) || strings.Contains(errb.String(), "panic") {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant %q", args, ee.ExitCode(), errb.String(), want)
		}
	}
}

// TestRunAsHelper is not a test: TestRunUnreadableKeyStore starts this
// binary as another user to call run with FLEXWAY_RUN_HELPER_ARGS (a JSON
// list), and exits with its code.
func TestRunAsHelper(t *testing.T) {
	js := os.Getenv("FLEXWAY_RUN_HELPER_ARGS")
	if js == "" {
		t.Skip("the helper process of TestRunUnreadableKeyStore")
	}
	var args []string
	if err := json.Unmarshal([]byte(js), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

func copyExecutable(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// TestRunCheckConfigs: the configurations this repository ships, each under
// `flexway -check` as a user runs it: the exit status and what stdout or
// stderr says. Add a row for each new one; every configs/examples/*/
// flexway.yaml is checked too, and must pass (issue 13.1).
func TestRunCheckConfigs(t *testing.T) {
	type checkCase struct {
		name   string
		config string // flexway.yaml, from this folder
		code   int    // the exit status wanted
		stdout string // the whole of it
		stderr string // the whole of it
	}
	cases := []checkCase{
		{"the quickstart (make check, make run)", "../../configs/quickstart/flexway.yaml", 0,
			"../../configs/quickstart/flexway.yaml: configuration valid\n", ""},
		// Seed 001's full example, TLS and SASL towards its brokers included
		// (issue 9).
		{"seed 001's full example", "../../configs/testdata/seed001/flexway.yaml", 0,
			"../../configs/testdata/seed001/flexway.yaml: configuration valid\n", ""},
	}
	// Each example is checked as a user does after making its demo
	// certificates (its comment says so): a copy, with make-demo-certs.sh run.
	examples, _ := filepath.Glob("../../configs/examples/*/flexway.yaml")
	for _, ex := range examples {
		name := filepath.Base(filepath.Dir(ex))
		dir := filepath.Join(t.TempDir(), name)
		copyExample(t, filepath.Dir(ex), dir)
		if out, err := exec.Command("bash", "../../configs/examples/make-demo-certs.sh", dir).CombinedOutput(); err != nil {
			t.Fatalf("make-demo-certs.sh %s: %v\n%s", name, err, out)
		}
		cfg := filepath.Join(dir, "flexway.yaml")
		cases = append(cases, checkCase{"example " + name, cfg, 0, cfg + ": configuration valid\n", ""})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runFlexway(t, "-check", "-config", tc.config)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			if r.stdout != tc.stdout {
				t.Errorf("stdout %q, want %q", r.stdout, tc.stdout)
			}
			if r.stderr != tc.stderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, tc.stderr)
			}
		})
	}
}
