//go:build !race

package hostile

const raceEnabled = false
