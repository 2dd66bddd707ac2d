module github.com/edgeload/edgeload/bench/peers

go 1.26.0

require (
	github.com/edgeload/edgeload v0.0.0
	github.com/gpustack/gguf-parser-go v0.28.1
	github.com/nlpodyssey/safetensors v0.0.0-20250209183917-bfb01cc25f7c
)

require (
	github.com/google/flatbuffers v25.12.19+incompatible // indirect
	github.com/henvic/httpretty v0.1.4 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/smallnest/ringbuffer v0.0.0-20241116012123-461381446e3d // indirect
	golang.org/x/crypto v0.29.0 // indirect
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
	gonum.org/v1/gonum v0.15.1 // indirect
)

replace github.com/edgeload/edgeload => ../..
