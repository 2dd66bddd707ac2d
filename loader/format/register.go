package format

import (
	"cmp"
	"slices"
	"sync"

	"github.com/edgeload/edgeload/mmapfile"
)

// Registration is how a format plugs into package loader: a name, a sniff
// rule, an Open, and a phrase or two for the help texts that list the
// formats.
type Registration struct {
	// Name is the format's name ("pte", "gguf", ...), the value of
	// loader.Model.Format and of the command's "format".
	Name string
	// Files says in a phrase which files the format reads, for the
	// command's help: "ExecuTorch programs (.pte)".
	Files string
	// Order says in a phrase the order UseOrder gives, for the command's
	// help: "each method's instructions' first use".
	Order string
	// Magic says how the format's files start, for the error about a
	// file no format claims: `"ET.." at offset 4`.
	Magic string
	// Sniff reports whether the file's first bytes (up to a page; fewer for
	// a short file) are this format's. Sniffs of different formats must
	// not claim the same bytes.
	Sniff func(head []byte) bool
	// Fallback makes loader also try Open on a file no Sniff claims (a
	// headerless RTen V1 model has no magic to sniff); fallbacks are tried
	// in Name order.
	Fallback bool
	// Open opens the model in mf, which the loader keeps and closes.
	Open func(mf *mmapfile.File, c *Config) (Model, error)
	// DataFormat names the format of the files a model of this format can
	// link with loader.WithData ("ptd" for a program); "" when it links
	// none, and loader refuses data files for it.
	DataFormat string
	// Convert, when set, lays out a file of this format holding the
	// tensors ts of src (package repack's --to): each with its bytes and
	// a row-major layout, in src's order; the data on align. What the
	// format cannot hold (a dtype it has no code for) is an error.
	Convert func(src Model, ts []*Tensor, align int64) (*Layout, error)
}

// Config is what loader passes a format's Open besides the mapping.
type Config struct {
	// Head is the file's first bytes (up to a page), already read.
	Head []byte
	// Name is the path the model was opened from, or "" (for messages).
	Name string
	// Data are the files a caller gave to resolve external tensors
	// (loader.WithData), each of the format Registration.DataFormat names,
	// already opened. A format that takes none is never given any.
	Data []Model
	// Mmap are the caller's mapping options, for files a format opens
	// itself (the shards of a sharded checkpoint).
	Mmap []mmapfile.Option
}

var registry struct {
	sync.RWMutex
	regs []Registration // in Name order; replaced, never modified, by Register
}

// Register makes a format known to package loader, which sniffs files for
// it and opens them with it. A format package calls Register from its init
// function, as image/png registers with package image, so that importing
// the package is what makes loader read the format; package formats
// imports every built-in one.
//
// Register panics if r has no Name or no Open, if it neither sniffs nor
// is a Fallback, if it sniffs without a Magic, or if a format of the same
// Name is registered already.
func Register(r Registration) {
	if r.Name == "" || r.Open == nil || (r.Sniff == nil && !r.Fallback) || (r.Sniff != nil && r.Magic == "") {
		panic("format: Register: a format needs a Name, an Open, and a Sniff with its Magic or Fallback")
	}
	registry.Lock()
	defer registry.Unlock()
	i, found := slices.BinarySearchFunc(registry.regs, r.Name, func(x Registration, name string) int { return cmp.Compare(x.Name, name) })
	if found {
		panic("format: Register called twice for format " + r.Name)
	}
	registry.regs = slices.Insert(slices.Clip(registry.regs), i, r)
}

// Registered returns the registered formats in Name order, the order in
// which loader tries their Sniffs and then their Fallbacks. The slice is
// shared and must not be modified.
func Registered() []Registration {
	registry.RLock()
	defer registry.RUnlock()
	return registry.regs
}
