// Command docker-entrypoint starts PostgreSQL in the kit's locally built
// image. The image is FROM scratch (no shell), so the official image's shell
// entrypoint is replaced by this static program, which keeps the same
// contract: POSTGRES_USER (default postgres), POSTGRES_PASSWORD (required
// unless POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_DB (default the user) and
// PGDATA; on an empty PGDATA it runs initdb, opens TCP to every address with
// password authentication and creates the database; then it execs postgres
// with the arguments given. So the kit drives this image and the official one
// the same way.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

const bin = "/usr/lib/postgresql/15/bin"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "docker-entrypoint:", err)
		os.Exit(1)
	}
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run() error {
	args := os.Args[1:]
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		args = append([]string{"postgres"}, args...)
	}
	if args[0] != "postgres" {
		// Any other program of the image, as the official entrypoint allows.
		return exec1(args[0], args)
	}
	if os.Getuid() == 0 {
		// PostgreSQL refuses to run as root; the image sets USER 999.
		return fmt.Errorf("run this image as its own user (999), not root")
	}
	pgdata := env("PGDATA", "/var/lib/postgresql/data")
	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); os.IsNotExist(err) {
		if err := initialize(pgdata); err != nil {
			return err
		}
	}
	argv := append([]string{"postgres", "-D", pgdata, "-c", "listen_addresses=*", "-c", "unix_socket_directories=/tmp"}, args[1:]...)
	return exec1("postgres", argv)
}

func initialize(pgdata string) error {
	user := env("POSTGRES_USER", "postgres")
	db := env("POSTGRES_DB", user)
	pw := os.Getenv("POSTGRES_PASSWORD")
	method := env("POSTGRES_HOST_AUTH_METHOD", "scram-sha-256")
	if pw == "" && method != "trust" {
		return fmt.Errorf("POSTGRES_PASSWORD is empty; set it, or POSTGRES_HOST_AUTH_METHOD=trust")
	}
	if err := os.MkdirAll(pgdata, 0o700); err != nil {
		return err
	}
	pwfile := "/tmp/.pwfile"
	if err := os.WriteFile(pwfile, []byte(pw+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	initdb := []string{"initdb", "-D", pgdata, "--username=" + user, "--auth-local=trust", "--auth-host=" + method,
		"--encoding=UTF8", "--locale=C", "--no-instructions",
		// A test server: skipping the fsync of a fresh cluster saves seconds and
		// risks nothing the kit checks (a container restart keeps the page cache).
		"--no-sync"}
	if pw != "" {
		initdb = append(initdb, "--pwfile="+pwfile)
	}
	if err := runCmd(nil, initdb...); err != nil {
		return err
	}
	// initdb's pg_hba only admits loopback over TCP; a container is reached
	// through its published port, from any address.
	hba, err := os.OpenFile(filepath.Join(pgdata, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(hba, "host all all all %s\n", method)
	if err := hba.Close(); err != nil {
		return err
	}
	if db != "postgres" {
		// Single-user mode: no server, no socket, one statement from stdin.
		sql := fmt.Sprintf("CREATE DATABASE \"%s\";\n", strings.ReplaceAll(db, `"`, `""`))
		if err := runCmd([]byte(sql), "postgres", "--single", "-D", pgdata, "postgres"); err != nil {
			return err
		}
	}
	fmt.Println("PostgreSQL init process complete; ready for start up.")
	return nil
}

func runCmd(stdin []byte, argv ...string) error {
	c := exec.Command(filepath.Join(bin, argv[0]), argv[1:]...)
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}

func exec1(name string, argv []string) error {
	path := name
	if !strings.Contains(name, "/") {
		path = filepath.Join(bin, name)
	}
	return syscall.Exec(path, argv, os.Environ())
}
