// Command kfakebroker is the kit's stand-in for a Kafka image: franz-go's
// kfake (an emulator, not Kafka) configured from the environment the
// official apache/kafka image reads, so broker/kafka=container can be
// tested on a host with no registry (scripts/build-images.sh builds it into
// onceproof/kfake-broker:local, FROM scratch). It reads:
//
//	KAFKA_LISTENERS             the PLAINTEXT listener's port (PLAINTEXT://:9092)
//	KAFKA_ADVERTISED_LISTENERS  the PLAINTEXT host:port metadata names
//	KAFKA_LOG_DIRS              kfake's data directory (default /tmp/kraft-combined-logs),
//	                            so a container stopped and started keeps its records
//	CLUSTER_ID                  the cluster id metadata reports (optional)
//
// The KRaft settings (roles, controller quorum, replication factors) mean
// nothing to kfake and are ignored. SIGTERM closes the cluster, which
// writes its state to the data directory.
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
}

func run() error {
	port, err := listenerPort(os.Getenv("KAFKA_LISTENERS"))
	if err != nil {
		return err
	}
	adv := plaintext(os.Getenv("KAFKA_ADVERTISED_LISTENERS"))
	if adv == "" {
		adv = net.JoinHostPort("localhost", strconv.Itoa(port))
	}
	dir := os.Getenv("KAFKA_LOG_DIRS")
	if dir == "" {
		dir = "/tmp/kraft-combined-logs"
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.DataDir(dir),
		// kfake listens on 127.0.0.1 only and advertises its listener's
		// address: listen on every interface of the container instead, and
		// report the advertised address as the listener's.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, net.JoinHostPort("", strconv.Itoa(port)))
			if err != nil {
				return nil, err
			}
			return advertised{ln, adv}, nil
		}),
	}
	if id := os.Getenv("CLUSTER_ID"); id != "" {
		opts = append(opts, kfake.ClusterID(id))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	fmt.Printf("kfakebroker: kfake listening on :%d, advertising %s, data in %s\n", port, adv, dir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
	fmt.Println("kfakebroker: stopped")
	return nil
}

// listenerPort is the port of the PLAINTEXT listener in KAFKA_LISTENERS
// (9092 when it is unset).
func listenerPort(listeners string) (int, error) {
	hp := plaintext(listeners)
	if hp == "" {
		return 9092, nil
	}
	_, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return 0, fmt.Errorf("KAFKA_LISTENERS %q: %w", listeners, err)
	}
	return strconv.Atoi(ps)
}

// plaintext is the host:port of the PLAINTEXT entry of a listener list.
func plaintext(list string) string {
	for _, l := range strings.Split(list, ",") {
		if hp, ok := strings.CutPrefix(strings.TrimSpace(l), "PLAINTEXT://"); ok {
			return hp
		}
	}
	return ""
}

// advertised is a listener whose address is the advertised one: kfake puts
// its listener's address in metadata.
type advertised struct {
	net.Listener
	addr string
}

func (a advertised) Addr() net.Addr { return advAddr(a.addr) }

type advAddr string

func (advAddr) Network() string  { return "tcp" }
func (a advAddr) String() string { return string(a) }
