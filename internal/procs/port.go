package procs

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a TCP port free on 127.0.0.1 right now, for a server the
// kit starts (and may restart) on a port it names. The port is taken below
// the kernel's ephemeral range when there is room: a port from that range
// is handed out again as the source port of any outgoing connection, so a
// server killed and restarted on it (a nemesis heal, API-1.5's restart)
// could find it taken by one of the kit's own clients.
func FreePort() (int, error) {
	if low := ephemeralLow(); low > minPort+1000 {
		for range 64 {
			port := minPort + rand.IntN(low-minPort)
			if free(port) {
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("listener address %v is not TCP", l.Addr())
	}
	return a.Port, nil
}

// minPort is the lowest port FreePort picks: above the well-known and the
// usual registered servers' ports.
const minPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// when it cannot be read (not Linux).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
