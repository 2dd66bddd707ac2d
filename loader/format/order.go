package format

// FileOrderer is implemented by a Model whose format records no order of
// use (safetensors, .ptd): FileOrder reports true when UseOrder is file
// order.
type FileOrderer interface {
	FileOrder() bool
}
