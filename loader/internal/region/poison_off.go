//go:build !edgeload_checked

package region

// poison: see the package comment.
const poison = false
