// Package bench measures edgeload against what a Go user would write
// instead, in one run, on model files that the project's own writer
// generates (see BENCHMARKS.md at the repository root for the results and
// the commands that reproduce them).
//
// The loaders compared (see [Mode]):
//
//   - readfile: os.ReadFile, then the same parser over the heap copy
//     (mmapfile.NewBytes): the naive loader;
//   - xmmap: golang.org/x/exp/mmap, the parser over its io.ReaderAt
//     (mmapfile.NewReaderAt), and a fresh copy of every tensor's bytes;
//   - whole: edgeload, the whole file mapped once (mmapfile.ModeWhole);
//   - windowed: edgeload, a window mapped per range on demand
//     (mmapfile.ModeWindowed).
//
// The package itself holds what the benchmarks and the loadbench command
// share: the generated files ([Spec], [Standard]), the loaders ([Open]),
// touching ([TouchFirst], [TouchPages]) and what the kernel says about
// resident memory ([ReadSmaps], [ReadRollup]). Go's heap statistics do not see
// mapped pages, so resident bytes always come from /proc. [Evict], which
// the streambench command and the memlimit tests use too, drops a file from
// the page cache and reports what stays there (mincore).
package bench
