package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/tlsmat/tlstest"
	"github.com/onceproof/tck/internal/verdict"
)

// Unusable trust material is a usage error before anything starts: one
// line naming the flag and the file, never a byte of the key.
func TestBadInputTLSMaterialExit3(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	cases := [][]string{
		{"--tls-ca", filepath.Join(dir, "missing.pem")},
		{"--tls-ca", p.ClientKey},
		{"--tls-cert", p.ClientCert},
		{"--tls-cert", p.ClientCert, "--tls-key", p.ClientCert},
	}
	for _, c := range cases {
		args := append([]string{"run", "--target", "broker/nats=tls://127.0.0.1:1", "--out", filepath.Join(dir, "never")}, c...)
		code, stdout, stderr := tck(t, args...)
		if code != reports.ExitUsage {
			t.Errorf("%v: exit %d, want 3 (stderr %q)", c, code, stderr)
		}
		if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 || !strings.Contains(stderr, "--tls-") {
			t.Errorf("%v: want one line naming the flag, got %q", c, stderr)
		}
		if strings.Contains(stdout+stderr, "PRIVATE") || strings.Contains(stdout+stderr, key) {
			t.Errorf("%v: the output shows the key", c)
		}
	}
	// Material for a target that would not use it is refused, naming it.
	for _, tg := range []string{"broker/kafka-share=kafka://127.0.0.1:1"} {
		code, _, stderr := tck(t, "run", "--target", tg, "--tls-ca", p.CA, "--out", filepath.Join(dir, "never"))
		name, _, _ := strings.Cut(tg, "=")
		if code != reports.ExitUsage || !strings.Contains(stderr, name) || !strings.Contains(stderr, "not supported") {
			t.Errorf("%s with --tls-ca: exit %d, stderr %q; want 3 naming the target", tg, code, stderr)
		}
	}
}

// natsTLS starts a nats-server of the test's own that requires TLS with
// the PKI's server certificate (and, with verify, a client certificate),
// JetStream on, and, with an nkey user, that user only. It returns the
// host:port.
func natsTLS(t *testing.T, p *tlstest.PKI, verify bool, nkeyUser string) string {
	t.Helper()
	opts := &server.Options{
		ServerName: "onceproof-tls-test", Host: "127.0.0.1", Port: -1,
		JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		TLSConfig: p.ServerConfig(t, verify), TLSVerify: verify, TLSTimeout: 5,
	}
	if nkeyUser != "" {
		opts.Nkeys = []*server.NkeyUser{{Nkey: nkeyUser}}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("the TLS nats-server did not become ready")
	}
	return s.Addr().String()
}

// runBroker runs two broker rules against a NATS target and returns the
// exit, the output and every report file's content, for the secret grep.
func runBroker(t *testing.T, addr string, flags ...string) (int, string) {
	t.Helper()
	code, stderr, all := tckAll(t, append([]string{"run", "--suite", "broker", "--target", "broker/nats=" + addr,
		"--rule", "BR-1.1", "--rule", "BR-2.1"}, flags...)...)
	if code != reports.ExitConformant {
		t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
		if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 {
			t.Errorf("exit %d: stderr is %d lines, want one: %q", code, n+1, stderr)
		}
		if !strings.Contains(stderr, "broker/nats") {
			t.Errorf("exit %d: stderr does not name the target: %q", code, stderr)
		}
	}
	return code, all
}

func TestTLSNATSWithTheCAPassesAndWithoutIsExit4(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	other := tlstest.New(t, dir, "b")
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	addr := natsTLS(t, p, true, "")

	code, all := runBroker(t, "tls://"+addr, "--tls-ca", p.CA, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey)
	if code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
		t.Fatalf("with the CA and the client certificate: exit %d, want 0 and both rules passed:\n%s", code, all)
	}
	code, all = runBroker(t, "tls://"+addr)
	if code != reports.ExitUnavailable || !strings.Contains(all, "certificate signed by unknown authority") {
		t.Errorf("without --tls-ca: exit %d, want 4 naming the unknown authority:\n%s", code, all)
	}
	code, all = runBroker(t, "tls://"+addr, "--tls-ca", p.CA, "--tls-cert", other.ClientCert, "--tls-key", other.ClientKey)
	if code != reports.ExitUnavailable {
		t.Errorf("a client certificate of another CA: exit %d, want 4:\n%s", code, all)
	}
	code, all = runBroker(t, "tls://"+addr, "--tls-ca", p.CA)
	if code != reports.ExitUnavailable {
		t.Errorf("no client certificate where the server verifies clients: exit %d, want 4:\n%s", code, all)
	}
	if strings.Contains(all, key) || strings.Contains(all, "PRIVATE KEY") {
		t.Error("a key appears in an output")
	}
}

func TestTLSNATSWithAnNkeySeed(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(dir, "other.nk")
	if err := os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := natsTLS(t, p, false, pub)

	var outputs []string
	code, all := runBroker(t, "tls://"+addr+"?nkey="+seedFile, "--tls-ca", p.CA)
	outputs = append(outputs, all)
	if code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
		t.Fatalf("with the seed: exit %d, want 0 and both rules passed:\n%s", code, all)
	}
	code, all = runBroker(t, "tls://"+addr+"?nkey="+otherFile, "--tls-ca", p.CA)
	outputs = append(outputs, all)
	if code != reports.ExitUnavailable || !strings.Contains(strings.ToLower(all), "authorization") {
		t.Errorf("a seed the server does not know: exit %d, want 4 naming the refused authorization:\n%s", code, all)
	}
	code, all = runBroker(t, "tls://"+addr, "--tls-ca", p.CA)
	outputs = append(outputs, all)
	if code != reports.ExitUnavailable {
		t.Errorf("no credential: exit %d, want 4:\n%s", code, all)
	}
	// The seed itself where a file is wanted is refused without echoing it.
	code, all = runBroker(t, "tls://"+addr+"?nkey="+string(seed), "--tls-ca", p.CA)
	outputs = append(outputs, all)
	if code != reports.ExitUnavailable || !strings.Contains(all, "not the seed itself") {
		t.Errorf("a bare seed in the URL: exit %d, want 4 saying a file is wanted:\n%s", code, all)
	}
	for i, o := range outputs {
		if strings.Contains(o, string(seed)) || strings.Contains(o, string(otherSeed)) {
			t.Errorf("run %d: a seed appears in an output", i)
		}
	}
}

// A NATS account as production runs it: an operator, an account with
// JetStream signed by it, a user signed by the account; the kit is given
// the user's credentials file (JWT and seed) as ?creds=FILE.
func TestTLSNATSWithACredsFile(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	addr, good, bad, goodSeed, badSeed := natsOperator(t, dir, p)

	var outputs []string
	code, all := runBroker(t, "tls://"+addr+"?creds="+good, "--tls-ca", p.CA)
	outputs = append(outputs, all)
	if code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
		t.Fatalf("with the credentials file: exit %d, want 0 and both rules passed:\n%s", code, all)
	}
	code, all = runBroker(t, "tls://"+addr+"?creds="+bad, "--tls-ca", p.CA)
	outputs = append(outputs, all)
	if code != reports.ExitUnavailable || !strings.Contains(strings.ToLower(all), "authorization") {
		t.Errorf("a user of an account the operator never signed: exit %d, want 4 naming the refused authorization:\n%s", code, all)
	}
	code, all = runBroker(t, "tls://"+addr+"?creds="+p.CA, "--tls-ca", p.CA)
	outputs = append(outputs, all)
	if code != reports.ExitUnavailable || !strings.Contains(all, "not a NATS credentials file") {
		t.Errorf("a file that is no credentials file: exit %d, want 4 saying so:\n%s", code, all)
	}
	for i, o := range outputs {
		for _, secret := range []string{string(goodSeed), string(badSeed), "BEGIN NATS USER JWT", "NKEY SEED"} {
			if strings.Contains(o, secret) {
				t.Errorf("run %d: the output holds %q-like credential material", i, secret[:8])
			}
		}
	}
}

// The reference api service behind a TLS front of the test's own (a
// private CA): with --tls-ca the rules pass (API-3.1 through the kit's
// fault proxy, which speaks TLS to the service); without it, exit 4 and
// one line naming the unknown authority.
func TestTLSAPIHTTPSWithAPrivateCA(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	srv, err := reference.Start(t.Context(), apidesc.Reject409)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	back, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(back))
	front.TLS = p.ServerConfig(t, false)
	front.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the test's own
	front.StartTLS()
	defer front.Close()
	if !strings.HasPrefix(front.URL, "https://") {
		t.Fatalf("the front is not https: %s", front.URL)
	}
	run := func(flags ...string) (int, string) {
		args := append([]string{"run", "--suite", "api", "--target", "api/http=" + front.URL,
			"--rule", "API-1.1", "--rule", "API-1.2", "--rule", "API-3.1", "--out", t.TempDir(), "--quiet"}, flags...)
		code, stdout, stderr := tck(t, args...)
		if code != reports.ExitConformant {
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			requireOneLine(t, "api over TLS", stderr)
		}
		return code, stdout + stderr
	}
	if code, out := run("--tls-ca", p.CA); code != reports.ExitConformant || !strings.Contains(out, "3 pass") {
		t.Fatalf("with the CA: exit %d, want 0 and three rules passed:\n%s", code, out)
	}
	if code, out := run(); code != reports.ExitUnavailable || !strings.Contains(out, "api/http") || !strings.Contains(out, "certificate signed by unknown authority") {
		t.Errorf("without the CA: exit %d, want 4 naming the target and the unknown authority:\n%s", code, out)
	}
	other := tlstest.New(t, dir, "b")
	if code, out := run("--tls-ca", other.CA); code != reports.ExitUnavailable {
		t.Errorf("another CA: exit %d, want 4:\n%s", code, out)
	}
	if code, out := run("--tls-ca", p.CA, "--tls-server-name", "elsewhere.example"); code != reports.ExitUnavailable || !strings.Contains(out, "elsewhere.example") {
		t.Errorf("a server name the certificate does not hold: exit %d, want 4 naming it:\n%s", code, out)
	}
	// The same front with an expired certificate of the same CA.
	front.Close()
	expired := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(back))
	expired.TLS = p.ExpiredServer(t, dir)
	expired.Config.ErrorLog = log.New(io.Discard, "", 0)
	expired.StartTLS()
	defer expired.Close()
	code, stdout, stderr := tck(t, "run", "--suite", "api", "--target", "api/http="+expired.URL, "--rule", "API-1.1",
		"--tls-ca", p.CA, "--out", t.TempDir(), "--quiet")
	if code != reports.ExitUnavailable || !strings.Contains(stderr, "expired") {
		t.Errorf("an expired server certificate: exit %d, want 4 naming the expiry:\n%s%s", code, stdout, stderr)
	}
	requireOneLine(t, "expired", stderr)
}

// redisTLS starts a redis-server of the test's own from PATH that listens
// only on a TLS port with the PKI's server certificate, requires a client
// certificate of the PKI's CA and the password pw; it skips, saying why,
// where redis-server is missing or built without TLS.
func redisTLS(t *testing.T, p *tlstest.PKI, pw string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH: the rediss:// test needs one built with TLS")
	}
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", "0", "--tls-port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--tls-cert-file", p.ServerCert, "--tls-key-file", p.ServerKey, "--tls-ca-cert-file", p.CA,
		"--tls-auth-clients", "yes", "--requirepass", pw,
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no")
	var logBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; ; i++ {
		select {
		case <-exited:
			if strings.Contains(logBuf.String(), "tls-port") || strings.Contains(logBuf.String(), "TLS") {
				t.Skipf("this redis-server has no TLS support: %s", strings.TrimSpace(logBuf.String()))
			}
			t.Fatalf("redis-server exited: %s", logBuf.String())
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if i > 3000 { // a bound on polls, not on time: the machine may be slow
			t.Fatalf("redis-server does not listen on %s: %s", addr, logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTLSRedisWithTheCAPassesAndWithoutIsExit4(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	other := tlstest.New(t, dir, "b")
	const pw = "s3cr3t-redis-pw"
	addr := redisTLS(t, p, pw)
	key := string(tlstest.KeyBytes(t, p.ClientKey))
	run := func(url string, flags ...string) (int, string) {
		code, stderr, all := tckAll(t, append([]string{"run", "--suite", "broker", "--target", "broker/redis=" + url,
			"--rule", "BR-2.1", "--rule", "BR-2.3"}, flags...)...)
		if code != reports.ExitConformant {
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			requireOneLine(t, "redis over TLS", stderr)
			if !strings.Contains(stderr, "broker/redis") {
				t.Errorf("stderr does not name the target: %q", stderr)
			}
		}
		if strings.Contains(all, pw) || strings.Contains(all, key) {
			t.Errorf("%s %v: the password or the key appears in an output", url, flags)
		}
		return code, all
	}
	good := "rediss://:" + pw + "@" + addr + "/0"
	mine := []string{"--tls-ca", p.CA, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey}
	if code, all := run(good, mine...); code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
		t.Fatalf("with the CA: exit %d, want 0 and both rules passed:\n%s", code, all)
	}
	if code, all := run(good); code != reports.ExitUnavailable || !strings.Contains(all, "certificate signed by unknown authority") {
		t.Errorf("without the CA: exit %d, want 4 naming the unknown authority:\n%s", code, all)
	}
	if code, all := run(good, "--tls-ca", p.CA, "--tls-cert", other.ClientCert, "--tls-key", other.ClientKey); code != reports.ExitUnavailable {
		t.Errorf("a client certificate of another CA: exit %d, want 4:\n%s", code, all)
	}
	if code, all := run("rediss://:wrong-"+pw+"@"+addr+"/0", mine...); code != reports.ExitUnavailable || !strings.Contains(all, "refused the login") {
		t.Errorf("a wrong password: exit %d, want 4 naming the refused login:\n%s", code, all)
	}
	// The in-process reference consumer over the same TLS Redis.
	args := append([]string{"run", "--suite", "consumer", "--target", "consumer/reference", "--broker", "broker/redis=" + good,
		"--rule", "CO-1.1", "--out", t.TempDir(), "--quiet"}, mine...)
	code, stdout, stderr := tck(t, args...)
	if code != reports.ExitConformant || !strings.Contains(stdout, "1 pass") {
		t.Errorf("consumer/reference over TLS Redis: exit %d, want 0 and CO-1.1 passed:\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, pw) {
		t.Error("the password appears in the consumer run's output")
	}
}

// natsOperator starts a nats-server in operator mode that requires TLS
// with the PKI's server certificate: an operator, a system account, an
// account with JetStream; it returns the address, the credentials file of
// a user of that account and of a user of an account the operator never
// signed, and their seeds (for the secret grep).
func natsOperator(t *testing.T, dir string, p *tlstest.PKI) (addr, good, bad string, goodSeed, badSeed []byte) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	opKP, err := nkeys.CreateOperator()
	must(err)
	opPub, _ := opKP.PublicKey()
	// JetStream under an operator needs a system account.
	sysKP, err := nkeys.CreateAccount()
	must(err)
	sysPub, _ := sysKP.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	opClaims.SystemAccount = sysPub
	sysJWT, err := jwt.NewAccountClaims(sysPub).Encode(opKP)
	must(err)
	opJWT, err := opClaims.Encode(opKP)
	must(err)
	opClaims, err = jwt.DecodeOperatorClaims(opJWT)
	must(err)
	acKP, err := nkeys.CreateAccount()
	must(err)
	acPub, _ := acKP.PublicKey()
	ac := jwt.NewAccountClaims(acPub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	acJWT, err := ac.Encode(opKP)
	must(err)
	creds := func(name string, signer nkeys.KeyPair) (file string, seed []byte) {
		ukp, err := nkeys.CreateUser()
		must(err)
		uPub, _ := ukp.PublicKey()
		uc := jwt.NewUserClaims(uPub)
		uc.IssuerAccount = acPub
		uJWT, err := uc.Encode(signer)
		must(err)
		seed, _ = ukp.Seed()
		data, err := jwt.FormatUserConfig(uJWT, seed)
		must(err)
		file = filepath.Join(dir, name+".creds")
		must(os.WriteFile(file, data, 0o600))
		return file, seed
	}
	good, goodSeed = creds("good", acKP)
	stranger, _ := nkeys.CreateAccount() // an account the operator never signed
	bad, badSeed = creds("bad", stranger)

	resolver := &server.MemAccResolver{}
	must(resolver.Store(acPub, acJWT))
	must(resolver.Store(sysPub, sysJWT))
	s, err := server.NewServer(&server.Options{
		ServerName: "onceproof-creds-test", Host: "127.0.0.1", Port: -1,
		JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		TLSConfig: p.ServerConfig(t, false), TLSTimeout: 5,
		TrustedOperators: []*jwt.OperatorClaims{opClaims}, AccountResolver: resolver, SystemAccount: sysPub,
	})
	must(err)
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("the nats-server did not become ready")
	}
	return s.Addr().String(), good, bad, goodSeed, badSeed
}

// `tck run --profile` certifies a NATS server that requires TLS and a
// creds file: BR-6.1 reads the declared stream and consumer through the
// same material and passes as declared, and fails naming a setting the
// server does not have as declared.
func TestTLSNATSProfileWithACredsFile(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	addr, good, _, goodSeed, _ := natsOperator(t, dir, p)
	nc, err := natsgo.Connect("tls://"+addr, natsgo.UserCredentials(good), natsgo.RootCAs(p.CA))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: 3 * time.Second, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	consumer := func(maxDeliver int) {
		t.Helper()
		if _, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second, MaxDeliver: maxDeliver}); err != nil {
			t.Fatal(err)
		}
	}
	consumer(4)
	prof := filepath.Join(dir, "certify-nats.yaml")
	if err := os.WriteFile(prof, []byte(`schema: onceproof.profile/v1
name: certify-nats-tls
producers:
  - name: api
    broker: main
    stream: ORDERS
    subject: orders.created
    keepsMessageId: true
    retries: [1s]
brokers:
  - name: main
    kind: nats
    streams:
      - name: ORDERS
        subjects: [orders.>]
        duplicates: 3s
        consumers:
          - name: w
            ackWait: 2s
            maxDeliver: 4
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (int, verdict.Result, string) {
		t.Helper()
		out := t.TempDir()
		code, stdout, stderr := tck(t, "run", "--profile", prof, "--target", "broker/nats=tls://"+addr+"?creds="+good,
			"--tls-ca", p.CA, "--rule", "BR-6.1", "--out", out, "--quiet")
		rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatalf("exit %d, %s: %v", code, stderr, err)
		}
		all := stdout + stderr
		files, _ := filepath.Glob(filepath.Join(out, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			all += string(b)
		}
		if strings.Contains(all, string(goodSeed)) || strings.Contains(all, "BEGIN NATS USER JWT") {
			t.Error("the seed or the JWT appears in an output")
		}
		for _, r := range rep.Results {
			if r.Rule == "BR-6.1" {
				return code, r, all
			}
		}
		t.Fatalf("no BR-6.1 in the report (exit %d)", code)
		return 0, verdict.Result{}, ""
	}
	if code, r, _ := run(); code != reports.ExitConformant || r.Verdict != verdict.Pass {
		t.Fatalf("as declared: exit %d, BR-6.1 %s (%s)", code, r.Verdict, r.Reason)
	}
	consumer(7)
	if code, r, _ := run(); code != reports.ExitMustFailed || r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "max deliver: declared 4, server 7") {
		t.Errorf("max_deliver changed on the server: exit %d, BR-6.1 %s (%s); want exit 1 naming max deliver", code, r.Verdict, r.Reason)
	}
}

// The in-process reference consumer over a NATS broker that requires TLS
// and verifies clients: the broker target takes the run's material, and
// CO-1.1 passes over it; without the material the run is exit 4. A
// consumer service over Kafka with the material is refused.
func TestTLSConsumerOverTLSNATS(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	addr := natsTLS(t, p, true, "")
	mine := []string{"--tls-ca", p.CA, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey}
	run := func(flags ...string) (int, string) {
		args := append([]string{"run", "--suite", "consumer", "--target", "consumer/reference", "--broker", "broker/nats=tls://" + addr,
			"--rule", "CO-1.1", "--out", t.TempDir(), "--quiet"}, flags...)
		code, stdout, stderr := tck(t, args...)
		if code != reports.ExitConformant {
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
		}
		return code, stdout + stderr
	}
	if code, out := run(mine...); code != reports.ExitConformant || !strings.Contains(out, "1 pass") {
		t.Fatalf("with the material: exit %d, want 0 and CO-1.1 passed:\n%s", code, out)
	}
	if code, out := run(); code != reports.ExitUnavailable || !strings.Contains(out, "consumer/reference") {
		t.Errorf("without the material: exit %d, want 4 naming the target:\n%s", code, out)
	}
	// A consumer service takes the material over NATS and Redis
	// (tls_service_test.go), not over Kafka, whose frames its proxy reads.
	code, _, stderr := tck(t, "run", "--suite", "consumer", "--target", "consumer/process=cmd:true", "--broker", "broker/kafka=kafka://127.0.0.1:1",
		"--tls-ca", p.CA, "--out", filepath.Join(dir, "never"))
	if code != reports.ExitUsage || !strings.Contains(stderr, "consumer/process") {
		t.Errorf("a consumer service over Kafka with --tls-ca: exit %d, stderr %q; want 3 naming it", code, stderr)
	}
}

// Kafka over TLS with SASL: a kfake cluster that listens with TLS only and
// requires SASL PLAIN. BR-5.1 (the kit's own client loses a produce reply:
// its framing runs above TLS) and BR-5.3 pass with the CA; exit 4 without
// it and with a wrong password, one line naming the target; the password
// and the key appear in no output.
func TestTLSKafkaWithSASL(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, dir, "a")
	const pw = "s3cr3t-kafka-pw"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(p.ServerConfig(t, false)), kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", pw))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	key := string(tlstest.KeyBytes(t, p.ServerKey))
	run := func(url string, flags ...string) (int, string) {
		out := t.TempDir()
		args := append([]string{"run", "--suite", "broker", "--target", "broker/kafka=" + url,
			"--rule", "BR-5.1", "--rule", "BR-5.3", "--out", out, "--quiet"}, flags...)
		code, stdout, stderr := tck(t, args...)
		all := stdout + "\n" + stderr
		files, _ := filepath.Glob(filepath.Join(out, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			all += "\n" + string(b)
		}
		if code != reports.ExitConformant {
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			requireOneLine(t, "kafka over TLS", stderr)
			if !strings.Contains(stderr, "broker/kafka") {
				t.Errorf("stderr does not name the target: %q", stderr)
			}
		}
		if strings.Contains(all, pw) || strings.Contains(all, key) {
			t.Errorf("%s %v: the password or the key appears in an output", url, flags)
		}
		return code, all
	}
	good := "kafka://admin:" + pw + "@" + addr
	if code, all := run(good, "--tls-ca", p.CA); code != reports.ExitConformant || !strings.Contains(all, "2 pass") {
		t.Fatalf("with the CA: exit %d, want 0 and both rules passed:\n%s", code, all)
	}
	if code, all := run(good + "?tls=true"); code != reports.ExitUnavailable || !strings.Contains(all, "certificate signed by unknown authority") {
		t.Errorf("TLS without the CA: exit %d, want 4 naming the unknown authority:\n%s", code, all)
	}
	if code, all := run("kafka://admin:wrong-"+pw+"@"+addr, "--tls-ca", p.CA); code != reports.ExitUnavailable {
		t.Errorf("a wrong password: exit %d, want 4:\n%s", code, all)
	}
}

// tckAll runs tck with args and a report folder of its own, quiet, and
// returns the exit, stderr, and every output together (stdout, stderr and
// each report file's content), for the secret greps.
func tckAll(t *testing.T, args ...string) (code int, stderr, all string) {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr := tck(t, append(args, "--out", out, "--quiet")...)
	all = stdout + "\n" + stderr
	_ = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			all += "\n" + string(b)
		}
		return nil
	})
	return code, stderr, all
}
