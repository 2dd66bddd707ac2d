//go:build !linux

// Command decodebench measures decode time per token under memory cgroups;
// see main_linux.go.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "decodebench: needs Linux (memory cgroups, drop_caches)")
	os.Exit(2)
}
