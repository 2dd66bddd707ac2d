package hostile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/edgeload/edgeload/loader/format"
)

// Sentinels are the sentinel errors every loader error must wrap one of.
var Sentinels = []error{
	format.ErrMalformed, format.ErrTruncated, format.ErrUnsupportedVersion,
	format.ErrUnknownFormat, format.ErrNotFound, format.ErrClosed, format.ErrCompressed,
}

// CheckError returns nil when err is an acceptable error from opening a
// file of format formatName ("pte", "ptd", "rten"; "" for loader.Open,
// where the format may be any of them): a *format.FormatError of that
// format, or an error wrapping one of the Sentinels; and its text names
// the format. Otherwise it says what is wrong.
func CheckError(formatName string, err error) error {
	if err == nil {
		return errors.New("no error")
	}
	msg := err.Error()
	sentinel := false
	for _, s := range Sentinels {
		if errors.Is(err, s) {
			sentinel = true
			break
		}
	}
	if !sentinel {
		return fmt.Errorf("error %q (%T) wraps no sentinel", msg, err)
	}
	var fe *format.FormatError
	if errors.As(err, &fe) {
		if formatName != "" && fe.Format != formatName {
			return fmt.Errorf("error %q has format %q, want %q", msg, fe.Format, formatName)
		}
		if fe.Msg == "" {
			return fmt.Errorf("error %q has no message", msg)
		}
		if !strings.Contains(msg, fe.Format+": ") {
			return fmt.Errorf("error %q does not name its format %q", msg, fe.Format)
		}
		return nil
	}
	if formatName != "" {
		return fmt.Errorf("error %q (%T) is not a *format.FormatError", msg, err)
	}
	// loader.Open: an unknown format names the formats it tried.
	if errors.Is(err, format.ErrUnknownFormat) && !(strings.Contains(msg, "no format claims it (") && strings.Contains(msg, `pte: "ET.." at offset 4`) && strings.Contains(msg, `rten: "RTEN" at offset 0`) && strings.Contains(msg, `gguf: "GGUF" at offset 0`)) {
		return fmt.Errorf("unknown-format error %q does not name the formats tried", msg)
	}
	return nil
}
