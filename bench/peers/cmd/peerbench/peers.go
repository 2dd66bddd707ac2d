package main

import (
	"fmt"
	"os"
	"syscall"

	gguf_parser "github.com/gpustack/gguf-parser-go"
	nlpst "github.com/nlpodyssey/safetensors"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// A goPeer is one in-process loader: prepare runs once per process (a
// mapping for the parse-only peers), open opens the file and looks the
// tensor up, returning what closes it.
type goPeer struct {
	prepare func(path string) error
	open    func(path, tensor string) (func(), error)
}

var premapped *mmapfile.File // the mapping of the edgeload parse peers
var premappedBytes []byte    // the mapping of nlpodyssey-parse

func premap(path string) error {
	mf, err := mmapfile.Open(path)
	premapped = mf
	return err
}

func premapBytes(path string) (err error) {
	premappedBytes, err = mmapBytes(path)
	return err
}

var errNotFound = fmt.Errorf("tensor not found")

// goPeers are the in-process peers by name.
var goPeers = map[string]goPeer{
	// edgeload through the format package over a mapping of the file.
	"edgeload-gguf": {open: func(path, name string) (func(), error) {
		mf, err := mmapfile.Open(path)
		if err != nil {
			return nil, err
		}
		f, err := gguf.NewFile(mf)
		if err != nil {
			mf.Close()
			return nil, err
		}
		if _, ok := f.Lookup(name); !ok {
			return nil, errNotFound
		}
		return func() { f.Close(); mf.Close() }, nil
	}},
	"edgeload-gguf-parse": {prepare: premap, open: func(path, name string) (func(), error) {
		f, err := gguf.NewFile(premapped)
		if err != nil {
			return nil, err
		}
		if _, ok := f.Lookup(name); !ok {
			return nil, errNotFound
		}
		return func() { f.Close() }, nil
	}},
	"edgeload-st": {open: func(path, name string) (func(), error) {
		mf, err := mmapfile.Open(path)
		if err != nil {
			return nil, err
		}
		f, err := safetensors.NewFile(mf)
		if err != nil {
			mf.Close()
			return nil, err
		}
		if _, ok := f.Lookup(name); !ok {
			return nil, errNotFound
		}
		return func() { f.Close(); mf.Close() }, nil
	}},
	"edgeload-st-parse": {prepare: premap, open: func(path, name string) (func(), error) {
		f, err := safetensors.NewFile(premapped)
		if err != nil {
			return nil, err
		}
		if _, ok := f.Lookup(name); !ok {
			return nil, errNotFound
		}
		return func() { f.Close() }, nil
	}},
	// edgeload through loader.Open: sniffing, any format.
	"edgeload-loader": {open: func(path, name string) (func(), error) {
		m, err := loader.Open(path)
		if err != nil {
			return nil, err
		}
		if _, ok := m.Tensor(name); !ok {
			m.Close()
			return nil, errNotFound
		}
		return func() { m.Close() }, nil
	}},
	// gguf-parser-go as its README shows it: ParseGGUFFile reads the file
	// through an *os.File.
	"gguf-parser-go": {open: func(path, name string) (func(), error) {
		gf, err := gguf_parser.ParseGGUFFile(path)
		if err != nil {
			return nil, err
		}
		if _, ok := gf.TensorInfos.Get(name); !ok {
			return nil, errNotFound
		}
		return func() {}, nil
	}},
	// gguf-parser-go reading through its own mapping (UseMMap).
	"gguf-parser-go-mmap": {open: func(path, name string) (func(), error) {
		gf, err := gguf_parser.ParseGGUFFile(path, gguf_parser.UseMMap())
		if err != nil {
			return nil, err
		}
		if _, ok := gf.TensorInfos.Get(name); !ok {
			return nil, errNotFound
		}
		return func() {}, nil
	}},
	// nlpodyssey/safetensors: Deserialize over a mapping of the file.
	"nlpodyssey": {open: func(path, name string) (func(), error) {
		b, err := mmapBytes(path)
		if err != nil {
			return nil, err
		}
		st, err := nlpst.Deserialize(b)
		if err != nil {
			syscall.Munmap(b)
			return nil, err
		}
		if _, ok := st.Tensor(name); !ok {
			syscall.Munmap(b)
			return nil, errNotFound
		}
		return func() { syscall.Munmap(b) }, nil
	}},
	"nlpodyssey-parse": {prepare: premapBytes, open: func(path, name string) (func(), error) {
		st, err := nlpst.Deserialize(premappedBytes)
		if err != nil {
			return nil, err
		}
		if _, ok := st.Tensor(name); !ok {
			return nil, errNotFound
		}
		return func() {}, nil
	}},
}

// goLookups are the peers' lookups on an open file, for counting a
// lookup's allocations.
func lookupFunc(peer, path, name string) (func() bool, func(), error) {
	switch peer {
	case "edgeload-gguf", "edgeload-gguf-parse":
		mf, err := mmapfile.Open(path)
		if err != nil {
			return nil, nil, err
		}
		f, err := gguf.NewFile(mf)
		if err != nil {
			return nil, nil, err
		}
		return func() bool { _, ok := f.Lookup(name); return ok }, func() { mf.Close() }, nil
	case "edgeload-st", "edgeload-st-parse":
		mf, err := mmapfile.Open(path)
		if err != nil {
			return nil, nil, err
		}
		f, err := safetensors.NewFile(mf)
		if err != nil {
			return nil, nil, err
		}
		return func() bool { _, ok := f.Lookup(name); return ok }, func() { mf.Close() }, nil
	case "edgeload-loader":
		m, err := loader.Open(path)
		if err != nil {
			return nil, nil, err
		}
		return func() bool { _, ok := m.Tensor(name); return ok }, func() { m.Close() }, nil
	case "gguf-parser-go", "gguf-parser-go-mmap":
		gf, err := gguf_parser.ParseGGUFFile(path)
		if err != nil {
			return nil, nil, err
		}
		return func() bool { _, ok := gf.TensorInfos.Get(name); return ok }, func() {}, nil
	case "nlpodyssey", "nlpodyssey-parse":
		b, err := mmapBytes(path)
		if err != nil {
			return nil, nil, err
		}
		st, err := nlpst.Deserialize(b)
		if err != nil {
			return nil, nil, err
		}
		return func() bool { _, ok := st.Tensor(name); return ok }, func() { syscall.Munmap(b) }, nil
	}
	return nil, nil, fmt.Errorf("unknown peer %q", peer)
}

// mmapBytes maps the file at path read-only.
func mmapBytes(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
}
