package registry

import "testing"

// A docker rm that failed only on containers already on their way out
// (docker's own --rm removal in progress, or gone) is read again, not
// reported; any other error is.
func TestRemovingServiceContainers(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"Error response from daemon: removal of container 817e178004a7 is already in progress", true},
		{"4f2a9c1d0e3b\nError response from daemon: No such container: 817e178004a7", true},
		{"Error response from daemon: removal of container 817e178004a7 is already in progress\nError response from daemon: cannot remove container: permission denied", false},
		{"Cannot connect to the Docker daemon at unix:///var/run/docker.sock", false},
		{"", false},
	} {
		if got := removing(c.out); got != c.want {
			t.Errorf("removing(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}
