package repack

import (
	"errors"

	"golang.org/x/sys/unix"
)

// copyFileChunk bounds one copy_file_range call, so that progress is
// reported as the copy goes.
const copyFileChunk = 64 << 20

// copyFile copies n bytes at offset off of the file src (a descriptor) to
// the end of w with copy_file_range: the kernel copies from the page
// cache, with no copy through user space. It returns how many bytes it copied and whether the
// system can do it at all for these files (if not, the caller copies the
// rest through the mapping).
func copyFile(r *run, w *outFile, src uintptr, off, n int64) (copied int64, ok bool, err error) {
	for copied < n {
		roff := off + copied
		k, err := unix.CopyFileRange(int(src), &roff, int(w.f.Fd()), nil, int(min(n-copied, copyFileChunk)), 0)
		if err != nil {
			if copied == 0 && (errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) ||
				errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM)) {
				return 0, false, nil
			}
			return copied, true, err
		}
		if k == 0 {
			return copied, true, errShortCopy
		}
		copied += int64(k)
		w.pos += int64(k)
		w.kick()
		r.progress(int64(k))
	}
	return copied, true, nil
}
