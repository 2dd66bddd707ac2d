//go:build !unix

package rten_test

import (
	"errors"
	"os"
)

func statBlocks(os.FileInfo) int64 { return -1 }

func memstatRSS() (int64, error) { return 0, errors.ErrUnsupported }
