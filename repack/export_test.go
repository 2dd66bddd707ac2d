package repack

// SetKernelCopy turns the copy_file_range path on or off and returns a
// function that restores it.
func SetKernelCopy(on bool) (restore func()) {
	old := kernelCopy
	kernelCopy = on
	return func() { kernelCopy = old }
}
