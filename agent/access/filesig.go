package access

import (
	"os"
	"syscall"
	"time"
)

// FileSig is what tells a changed file from the one read before: its
// size, modification time, inode and device. A Kubernetes Secret or
// ConfigMap volume updates by swapping a symlink to a new directory, which
// changes the inode even when the size and time do not.
type FileSig struct {
	size  int64
	mtime time.Time
	ino   uint64
	dev   uint64
}

type fileSig = FileSig

// StatFile returns path's signature (following symlinks).
func StatFile(path string) (FileSig, error) { return statSig(path) }

func statSig(path string) (FileSig, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileSig{}, err
	}
	s := FileSig{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino, s.dev = st.Ino, uint64(st.Dev)
	}
	return s, nil
}
