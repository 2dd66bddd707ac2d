//go:build !amd64 || purego

package pte

// laneAsm: see lane_amd64.go. Elsewhere the lane is Go's (arm64 has
// registers enough for it).
const laneAsm = false

func laneLoop(*laneRun) { panic("pte: no assembly lane on this platform") }
