//go:build edgeload_checked

package pte

// checkedLoads: see loads.go.
const checkedLoads = true
