package containers

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPostgresImage is the official image name with the major version the
// kit is built against; scripts/build-images.sh builds it locally under this
// name from Debian's packages. TCK_POSTGRES_IMAGE overrides it.
const DefaultPostgresImage = "postgres:15"

// PostgresImage is the image to use: TCK_POSTGRES_IMAGE, else the default.
func PostgresImage() string {
	if v := os.Getenv("TCK_POSTGRES_IMAGE"); v != "" {
		return v
	}
	return DefaultPostgresImage
}

// PostgresOptions tune a PostgreSQL container.
type PostgresOptions struct {
	Image string // default PostgresImage()
	// Args are extra server arguments, e.g. "-c", "max_connections=200".
	Args []string
}

// Postgres is a PostgreSQL container.
type Postgres struct {
	*Container
	URL string // postgres://tck:PASSWORD@127.0.0.1:port/tck?sslmode=disable
}

// StartPostgres starts PostgreSQL with a fresh database "tck" owned by user
// "tck" with a random password, reached on loopback. It works with the
// kit's image and the official one alike (same environment contract).
func StartPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	if o.Image == "" {
		o.Image = PostgresImage()
	}
	pw := randomHex(12)
	c, err := Start(ctx, Spec{
		Role: "postgres", Image: o.Image, Module: postgresModule,
		Env:   map[string]string{"POSTGRES_USER": "tck", "POSTGRES_PASSWORD": pw, "POSTGRES_DB": "tck"},
		Cmd:   append([]string{"postgres"}, o.Args...),
		Ports: []string{"5432/tcp"},
		// The official image logs this line twice (a temporary server on a
		// socket, then the real one); Ready decides: ready means a session
		// ran SELECT 1 over TCP, the first thing every rule does.
		WaitLog: "database system is ready to accept connections",
		Ready: func(ctx context.Context, c *Container) error {
			return (&Postgres{URL: postgresURL(pw, c.Endpoint("5432/tcp"))}).Ready(ctx)
		},
	})
	if err != nil {
		return nil, err
	}
	return &Postgres{Container: c, URL: postgresURL(pw, c.Endpoint("5432/tcp"))}, nil
}

func postgresURL(pw, hostport string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("tck", pw), Host: hostport, Path: "/tck", RawQuery: "sslmode=disable"}
	return u.String()
}

// Ready succeeds once the server runs queries: after a kill PostgreSQL
// answers on its port (PostgresPing) while it still replays its log and
// refuses sessions ("the database system is starting up"), so a heal that
// waited only for the port would hand the next writer a server that cannot
// serve it yet.
func (p *Postgres) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// PostgresPing asks the server at hostport whether it speaks TLS (an
// SSLRequest): any one-byte answer, 'S' or 'N', proves PostgreSQL itself is
// listening, where a bare connect would only prove Docker's port proxy is.
func PostgresPing(ctx context.Context, hostport string) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	var req [8]byte
	binary.BigEndian.PutUint32(req[0:4], 8)
	binary.BigEndian.PutUint32(req[4:8], 80877103)
	if _, err := conn.Write(req[:]); err != nil {
		return err
	}
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return fmt.Errorf("no answer to SSLRequest: %w", err)
	}
	if b[0] != 'S' && b[0] != 'N' {
		return fmt.Errorf("unexpected answer %q to SSLRequest", b[0])
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// postgresModule runs the server through testcontainers-go's PostgreSQL
// module; the kit's command replaces the module's (which turns fsync off:
// the durability rules need the server's own setting).
func postgresModule(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (testcontainers.Container, error) {
	c, err := tcpostgres.Run(ctx, img, opts...)
	if c == nil {
		return nil, err
	}
	return c.Container, err
}
