package leftovers

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StaleTempDirs lists the temporary folders a dead run of the kit left in
// root (os.TempDir()): a folder whose name starts with one of prefixes and
// that carries the kit's TempMarker (MkdirTemp wrote it: a name alone is
// never enough, a user's tck-mine is left alone), that no process holds open (no open file, working directory or mapped
// file inside it, as /proc shows) and where nothing changed for minAge. A
// run killed with SIGKILL cannot remove its own; `tck clean` removes these.
// Without /proc (not Linux) nothing is reported: a folder in use cannot be
// told from a stale one there.
func StaleTempDirs(root string, prefixes []string, minAge time.Duration) []string {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var candidates []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(e.Name(), p) && IsKitTemp(filepath.Join(root, e.Name())) {
				candidates = append(candidates, filepath.Join(root, e.Name()))
				break
			}
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	inUse := openPaths()
	cutoff := time.Now().Add(-minAge)
	var out []string
	for _, dir := range candidates {
		if used(dir, inUse) || changedSince(dir, cutoff) {
			continue
		}
		out = append(out, dir)
	}
	return out
}

// openPaths is every path a process has open, as its working directory, a
// file descriptor or a mapped file.
func openPaths() []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		base := filepath.Join("/proc", p.Name())
		if l, err := os.Readlink(filepath.Join(base, "cwd")); err == nil {
			out = append(out, l)
		}
		fds, _ := os.ReadDir(filepath.Join(base, "fd"))
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(base, "fd", fd.Name())); err == nil {
				out = append(out, l)
			}
		}
		if maps, err := os.ReadFile(filepath.Join(base, "maps")); err == nil {
			for _, line := range strings.Split(string(maps), "\n") {
				if i := strings.Index(line, " /"); i >= 0 {
					out = append(out, strings.TrimSpace(line[i:]))
				}
			}
		}
	}
	return out
}

func used(dir string, paths []string) bool {
	for _, p := range paths {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// changedSince says whether anything in dir was modified after t.
func changedSince(dir string, t time.Time) bool {
	changed := false
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(t) {
			changed = true
			return filepath.SkipAll
		}
		return nil
	})
	return changed
}
