// Command edgeload inspects, verifies, streams and rewrites model files
// without copying them, in every format package formats registers
// (`edgeload help` lists them).
//
// Usage:
//
//	edgeload inspect [--json] [--sha256] [--order] [--data FILE.ptd]... FILE
//	edgeload verify [--data FILE.ptd]... FILE...
//	edgeload verify --signature BUNDLE (--key PEM | --cert-chain PEM | --trusted-root JSON --identity ID --identity-provider URL) [--ignore-unsigned-files] [--ignore-paths PATH]... MODEL
//	edgeload repack [--align N] [--tensor-align N] [--externalize F.ptd] [--rten-v2] [--to FORMAT] [--verify-bytes] [--sync] [--data F.ptd]... IN OUT
//	edgeload repack --check [--data F.ptd]... IN OUT
//	edgeload resident [--width N] FILE
//	edgeload stream [--budget SIZE] [--passes N] [--retain SIZE|auto] [--reader auto|mapped|direct] [--method NAME] [--data FILE.ptd]... [--json] [--drop-cache] [--signature BUNDLE (--key PEM | --cert-chain PEM | ...)] FILE
//	edgeload version
//	edgeload help [COMMAND]
//
// inspect shows what a file holds (--json as JSON, --order with its use
// orders); verify checks every structure and reads every byte, or with
// --signature checks a model against its OpenSSF Model Signing signature;
// repack rewrites a file realigned, externalized or converted (--check
// compares two); resident shows how much of each segment is in the page
// cache; stream reads every weight in use order under a memory budget,
// once or pass after pass. 'edgeload help COMMAND' describes each.
//
// Wherever a FILE is accepted (--data included), ARCHIVE!/ENTRY names an
// entry stored uncompressed in a zip archive or APK, mapped in place.
//
// Exit status: 0 on success, 1 when a file is invalid (with one line on
// standard error beginning "edgeload: "), 2 for a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	_ "github.com/edgeload/edgeload/formats" // the formats the command reads
	"github.com/edgeload/edgeload/loader/format"
)

// Exit codes.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
)

func main() {
	os.Exit(safeRun(os.Args[1:], os.Stdout, os.Stderr))
}

// safeRun is run with a last line of defence: a panic (a bug: the
// libraries are built not to panic on any input) becomes one line on
// stderr and exit status 1, never a stack trace.
func safeRun(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "edgeload: internal error: %s\n", oneLine(fmt.Sprint(r)))
			code = exitInvalid
		}
	}()
	return run(args, stdout, stderr)
}

// command is a subcommand.
type command struct {
	name    string
	args    string // the synopsis after the flags
	summary string
	run     func(c *cli, args []string) int
}

var commands []*command

func init() {
	commands = []*command{
		{"inspect", "[--json] [--sha256] [--order] [--data FILE.ptd]... FILE", "show what a model file (or ARCHIVE!/ENTRY) holds", runInspect},
		{"verify", "[--data FILE.ptd]... FILE... | --signature BUNDLE (--key PEM | --cert-chain PEM | --trusted-root JSON --identity ID --identity-provider URL) [--ignore-unsigned-files] MODEL", "verify files fully, or a model against its OMS signature", runVerify},
		{"repack", "[--align N] [--tensor-align N] [--externalize F.ptd] [--rten-v2] [--to FORMAT] [--verify-bytes] [--sync] [--data F.ptd]... IN OUT | --check [--data F.ptd]... IN OUT", "rewrite a model file realigned, externalized, upgraded or converted", runRepack},
		{"resident", "[--width N] FILE", "show how much of each segment is in the page cache", runResident},
		{"stream", "[--budget SIZE] [--passes N] [--retain SIZE|auto] [--reader auto|mapped|direct] [--method NAME] [--data FILE.ptd]... [--json] [--drop-cache] [--signature BUNDLE (--key PEM | --cert-chain PEM | ...)] FILE", "read every weight in use order under a memory budget, once or pass after pass", runStream},
		{"version", "", "print the version", runVersion},
		{"help", "[COMMAND]", "show help for a command", runHelp},
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// cli carries the output streams of one run.
type cli struct {
	stdout, stderr io.Writer
}

// errorf prints one "edgeload: ..." line on stderr.
func (c *cli) errorf(format string, args ...any) {
	fmt.Fprintf(c.stderr, "edgeload: %s\n", oneLine(fmt.Sprintf(format, args...)))
}

// oneLine joins a multi-line message (errors.Join) into one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}

// run runs the command line args (without the program name) and returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "-version", "--version":
		return runVersion(c, nil)
	}
	cmd := lookup(args[0])
	if cmd == nil {
		if strings.HasPrefix(args[0], "-") {
			c.errorf("unknown flag %s before the command; run 'edgeload -h' for usage", args[0])
		} else {
			c.errorf("unknown command %q; run 'edgeload -h' for usage", args[0])
		}
		return exitUsage
	}
	return cmd.run(c, args[1:])
}

// usage prints the command overview.
func usage(w io.Writer) {
	fmt.Fprintf(w, "edgeload opens model files without copying them. It reads:\n\n")
	formatTable(w, func(r format.Registration) string { return r.Files })
	fmt.Fprintf(w, "\nUsage:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n", strings.TrimSpace("edgeload "+c.name+" "+c.args))
	}
	fmt.Fprintf(w, "\nCommands:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'edgeload COMMAND -h' for a command's flags.\n"+
		"Exit status: 0 ok, 1 invalid input, 2 usage error.\n")
}

// formatTable writes a line per registered format: its name and what
// field says of it.
func formatTable(w io.Writer, field func(format.Registration) string) {
	tw := newTable(w)
	for _, r := range format.Registered() {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Name, field(r))
	}
	tw.Flush()
}

// newFlags returns the flag set of a subcommand, whose usage text is the
// synopsis, the description and the flag defaults.
func newFlags(cmd *command, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("edgeload "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: edgeload %s %s\n\n%s\n", cmd.name, cmd.args, about)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(w, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses a subcommand's arguments, allowing flags after the
// positional arguments (up to a "--"). It returns the positional arguments,
// or an exit status (ok is false) when the command should stop: 0 after -h
// (usage on stdout), 2 after a bad flag (message and usage on stderr).
func parse(c *cli, fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(c.stdout)
			fs.Usage()
			return nil, exitOK, false
		}
		if err != nil {
			c.errorf("%s: %v", cmdName(fs), err)
			shortUsage(c, fs)
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError reports a wrong number of arguments.
func usageError(c *cli, fs *flag.FlagSet, msg string) int {
	c.errorf("%s: %s", cmdName(fs), msg)
	shortUsage(c, fs)
	return exitUsage
}

// shortUsage prints the synopsis of a subcommand and where to find more.
func shortUsage(c *cli, fs *flag.FlagSet) {
	cmd := lookup(cmdName(fs))
	fmt.Fprintf(c.stderr, "usage: %s\nRun 'edgeload %s -h' for help.\n", strings.TrimSpace(fs.Name()+" "+cmd.args), cmd.name)
}

// cmdName is the subcommand's name, e.g. "inspect".
func cmdName(fs *flag.FlagSet) string { return strings.TrimPrefix(fs.Name(), "edgeload ") }

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func runHelp(c *cli, args []string) int {
	fs := newFlags(lookup("help"), "Show the overview, or the help of one command.")
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	switch len(pos) {
	case 0:
		usage(c.stdout)
		return exitOK
	case 1:
		cmd := lookup(pos[0])
		if cmd == nil {
			c.errorf("help: unknown command %q", pos[0])
			return exitUsage
		}
		return cmd.run(c, []string{"-h"})
	}
	return usageError(c, fs, "too many arguments")
}

// version is the version the command reports; set it with
// -ldflags "-X main.version=v1.2.3". Empty means the module version from
// the build information.
var version = ""

func runVersion(c *cli, args []string) int {
	fs := newFlags(lookup("version"), "Print edgeload's version and the Go version it was built with.")
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(c, fs, "no arguments expected")
	}
	v, goVersion := version, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	fmt.Fprintf(c.stdout, "edgeload %s (%s)\n", v, goVersion)
	return exitOK
}
