package configs

import (
	"fmt"
	"io"
	"os"
)

// MaxFileBytes bounds every file Load reads: flexway.yaml, the AsyncAPI
// contract, the key store, and the files they name (secrets, CA
// certificates, certificates and keys, JSON Web Key Sets). The largest in
// use, a key store, holds about 20,000 keys in 4 MiB; a file above it is
// refused before it is read, never loaded whole to find out.
const MaxFileBytes ByteSize = 4 << 20

// readConfigFile reads a configuration file whole. It refuses, without opening it
// for reading, what is not a regular file (a directory; a pipe or a device,
// whose read could block Load or never end) and a file larger than
// MaxFileBytes; it reads at most MaxFileBytes+1 bytes, in case the file grows
// between the look and the read. Its errors name the cause, not the path
// (the caller says the path, once).
func readConfigFile(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("is a directory, not a file")
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("is not a regular file (%s)", fi.Mode().Type())
	case fi.Size() > int64(MaxFileBytes):
		return nil, tooLarge(fi.Size())
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(MaxFileBytes)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > int(MaxFileBytes) {
		return nil, tooLarge(int64(len(data)))
	}
	return data, nil
}

func tooLarge(size int64) error {
	return fmt.Errorf("%s, larger than the %s a configuration file may be", fmtSize(size), MaxFileBytes)
}

// fmtSize writes a file's size for a person: 100MiB, 4.5MiB, 812 bytes.
func fmtSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
