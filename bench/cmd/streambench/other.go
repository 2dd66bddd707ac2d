//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "streambench: needs Linux (memory cgroups, mincore, fadvise)")
	os.Exit(2)
}
