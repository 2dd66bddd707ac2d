//go:build amd64 && !purego

package pte

// laneAsm says that laneLoop is the lane's loop in assembly. On amd64 the
// Go loop carries more values than Go gives registers, and spends a
// quarter of its instructions moving them to and from the stack; the
// assembly keeps the hot ones in registers and compares the others in
// memory. Build with -tags purego for the Go loop alone.
const laneAsm = true

// laneLoop reads values a.v ... a.hi-1 the lane way (see laneRun).
//
//go:noescape
func laneLoop(a *laneRun)
