package signing

import (
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// Model is the files a manifest is checked against: one file, or every
// regular file under a folder, as the signature's serialization lists
// them (ignored paths left out, symbolic links as it allows).
type Model struct {
	Path   string // the file or folder given
	Files  []File // sorted by Name
	single bool   // Path is one file
}

// File is one file of a model.
type File struct {
	// Name is the file's path relative to the model's folder, with "/"
	// between elements; a single-file model's one file is named by its
	// base name.
	Name string
	Size int64
	path string      // the file to open, when r is nil
	r    io.ReaderAt // the file's bytes, when given as a reader
}

// gitNames are left out of every folder model, at its top level only.
var gitNames = []string{".git", ".gitattributes", ".github", ".gitignore"}

// NewFileModel returns a single-file model whose bytes are read from r
// (size bytes), for a model that is not a file of its own: an entry
// stored in an archive, a section of a larger file. name is its base name.
func NewFileModel(name string, r io.ReaderAt, size int64) *Model {
	return &Model{Path: name, Files: []File{{Name: path.Base(name), Size: size, r: r}}, single: true}
}

// Model lists the files at p as the manifest's serialization says: p
// itself when it is a file; otherwise the regular files under it,
// recursively, without the top-level .git, .gitattributes, .github and
// .gitignore, the manifest's ignore_paths or the extra paths ignore
// (relative to p, "/"-separated; a folder leaves out what is under it). A
// symbolic link below p is an error unless the serialization allows them;
// then one to a file counts as that file, and one to a folder is not
// followed (as model-signing does). p itself is followed if it is a link.
func (m *Manifest) Model(p string, ignore ...string) (*Model, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.Mode().IsRegular() {
		return &Model{Path: p, Files: []File{{Name: filepath.Base(p), Size: fi.Size(), path: p}}, single: true}, nil
	}
	if !fi.IsDir() {
		return nil, &Error{Op: "model", File: p, Msg: "is neither a file nor a folder", Err: ErrUnsigned}
	}
	skip := make(map[string]bool)
	for _, q := range slices.Concat(gitNames, m.Serialization.IgnorePaths, ignore) {
		// an ignore path that names nothing inside the model is dropped
		if c := path.Clean(q); c != "." && fs.ValidPath(c) {
			skip[c] = true
		}
	}
	md := &Model{Path: p}
	if err := md.walk(p, "", skip, m.Serialization.AllowSymlinks); err != nil {
		return nil, err
	}
	if len(md.Files) == 0 {
		return nil, &Error{Op: "model", File: p, Msg: "holds no file to verify", Err: ErrMissing}
	}
	slices.SortFunc(md.Files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return md, nil
}

// walk adds the files under the folder dir (named rel in the model).
func (md *Model) walk(dir, rel string, skip map[string]bool, symlinks bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if rel != "" {
			name = rel + "/" + name
		}
		if skip[name] {
			continue
		}
		if !utf8.ValidString(name) {
			return &Error{Op: "model", File: quoteShort(name), Msg: "the name is not valid UTF-8, which OMS names cannot hold", Err: ErrUnsigned}
		}
		full := filepath.Join(dir, e.Name())
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 {
			if !symlinks {
				return &Error{Op: "model", File: name, Msg: "is a symbolic link, and the signature does not allow them (allow_symlinks is false)", Err: ErrUnsigned}
			}
			fi, err := os.Stat(full)
			if err != nil {
				return &Error{Op: "model", File: name, Msg: "is a symbolic link that leads nowhere: " + err.Error(), Err: ErrMissing}
			}
			if fi.IsDir() {
				continue
			}
			typ = fi.Mode().Type()
		}
		switch {
		case typ.IsDir():
			if err := md.walk(full, name, skip, symlinks); err != nil {
				return err
			}
		case typ.IsRegular():
			fi, err := os.Stat(full)
			if err != nil {
				return err
			}
			md.Files = append(md.Files, File{Name: name, Size: fi.Size(), path: full})
		default:
			return &Error{Op: "model", File: name, Msg: "is not a regular file (" + typ.String() + ")", Err: ErrUnsigned}
		}
	}
	return nil
}
