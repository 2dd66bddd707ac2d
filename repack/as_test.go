package repack_test

import "github.com/edgeload/edgeload/loader"

// as is loader.As without its ok: the zero T when m holds none.
func as[T any](m *loader.Model) T {
	t, _ := loader.As[T](m)
	return t
}
