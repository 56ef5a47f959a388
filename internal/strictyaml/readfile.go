package strictyaml

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ReadFile reads a file a user named (a profile, an endpoint description,
// a results.json) with bounds, so a hostile path cannot hang or exhaust the
// kit: it must be a regular file once symlinks are followed (a FIFO, a
// device such as /dev/zero, a directory or a socket is refused before it
// is read, and a FIFO swapped in after the check cannot block the open, which
// is non-blocking), and at most limit bytes are read (limit plus one, to
// tell a file past the limit, which is refused). what names the file in
// errors ("profile"). Every error is an *Error naming the file.
func ReadFile(path, what string, limit int64) ([]byte, error) {
	fail := func(format string, args ...any) error {
		return &Error{File: path, Msg: fmt.Sprintf(format, args...)}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fail("cannot read the %s: %v", what, pathErr(err))
	}
	if err := regular(fi, what, limit); err != nil {
		return nil, fail("%s", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fail("cannot read the %s: %v", what, pathErr(err))
	}
	defer f.Close()
	// The path may have been replaced between the Stat and the open.
	if fi, err = f.Stat(); err != nil {
		return nil, fail("cannot read the %s: %v", what, pathErr(err))
	}
	if err := regular(fi, what, limit); err != nil {
		return nil, fail("%s", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fail("cannot read the %s: %v", what, pathErr(err))
	}
	if int64(len(data)) > limit {
		return nil, fail("more than %s, the limit for the %s", byteSize(limit), what)
	}
	return data, nil
}

// regular refuses what is not a regular file of at most limit bytes.
func regular(fi fs.FileInfo, what string, limit int64) error {
	m := fi.Mode()
	if !m.IsRegular() {
		kind := "not a regular file"
		switch {
		case m.IsDir():
			kind = "a directory"
		case m&fs.ModeNamedPipe != 0:
			kind = "a named pipe (FIFO)"
		case m&fs.ModeCharDevice != 0:
			kind = "a character device"
		case m&fs.ModeDevice != 0:
			kind = "a block device"
		case m&fs.ModeSocket != 0:
			kind = "a socket"
		}
		return fmt.Errorf("is %s, not a regular file: the %s must be a file", kind, what)
	}
	if fi.Size() > limit {
		return fmt.Errorf("%d bytes, more than %s, the limit for the %s", fi.Size(), byteSize(limit), what)
	}
	return nil
}

// byteSize writes a limit for a message: "1048576 bytes (1 MiB)".
func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// pathErr drops the *PathError's repeat of the path (the *Error names it).
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
