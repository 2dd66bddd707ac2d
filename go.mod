module github.com/edgeload/edgeload

go 1.26.0

require (
	github.com/google/flatbuffers v25.12.19+incompatible
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e
	golang.org/x/sys v0.49.0
)
