package repack

// SetKernelCopy turns the copy_file_range path on or off and returns a
// function that restores it.
func SetKernelCopy(on bool) (restore func()) {
	old := kernelCopy
	kernelCopy = on
	return func() { kernelCopy = old }
}

// SetAfterWrite makes Repack call f with the path of each file it wrote
// before reading it back, and returns a function that restores it.
func SetAfterWrite(f func(path string)) (restore func()) {
	old := afterWrite
	afterWrite = f
	return func() { afterWrite = old }
}
