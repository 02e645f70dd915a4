package adapter

// Each operation's command line (docs/PROTOCOL.md §2): `<op> --flag value
// ...`, flags as two arguments, in any order. A flag the operation does not
// take, a missing one, a repeated one (but `dump`'s and `catch-up`'s
// batches) or a value that is not one is a usage error: exit 2, one line.

import (
	"fmt"
	"strconv"
	"strings"
)

type flagSpec struct {
	required []string
	optional []string
	repeated bool // --db (and --transport) may come more than once
}

var specs = map[string]flagSpec{
	"append":    {required: []string{"db", "acks"}, optional: []string{"mutant", "stop-after"}},
	"rotate":    {required: []string{"db", "acks"}, optional: []string{"mutant", "stop-after", "shapes"}},
	"park":      {required: []string{"db", "session"}},
	"claim":     {required: []string{"db", "acks", "session", "barrier", "claimant"}, optional: []string{"mutant"}},
	"fork":      {required: []string{"db", "acks", "seed"}, optional: []string{"mutant", "stop-after"}},
	"deliver":   {required: []string{"db", "acks", "transport"}, optional: []string{"mutant", "stop-after"}},
	"catch-up":  {required: []string{"db", "transport"}, optional: []string{"mutant"}, repeated: true},
	"co-append": {required: []string{"db", "acks", "writer", "barrier"}, optional: []string{"mutant", "stop-after"}},
	"dump":      {required: []string{"db"}, repeated: true},
}

// args is one operation's command line, read.
type args struct {
	op    string
	flags map[string][]string
	stop  int // --stop-after, or -1 when absent
	seed  uint64
}

func (a args) one(name string) string {
	if v := a.flags[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// usageError is bad input: exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, v ...interface{}) error { return usageError{fmt.Sprintf(format, v...)} }

func parseArgs(argv []string) (args, error) {
	if len(argv) == 0 {
		return args{}, usagef("no operation given (expected one of append, rotate, park, claim, fork, deliver, catch-up, co-append, dump)")
	}
	a := args{op: argv[0], flags: map[string][]string{}, stop: -1}
	spec, ok := specs[a.op]
	if !ok {
		return a, usagef("unknown operation `%s`", a.op)
	}
	rest := argv[1:]
	for len(rest) > 0 {
		name := strings.TrimPrefix(rest[0], "--")
		if name == rest[0] || !oneOf(name, append(spec.required, spec.optional...)) {
			return a, usagef("%s does not take `%s`", a.op, rest[0])
		}
		if len(rest) < 2 {
			return a, usagef("%s: `--%s` needs a value", a.op, name)
		}
		repeats := spec.repeated && (name == "db" || name == "transport")
		if len(a.flags[name]) > 0 && !repeats {
			return a, usagef("%s: `--%s` given twice", a.op, name)
		}
		a.flags[name] = append(a.flags[name], rest[1])
		rest = rest[2:]
	}
	for _, name := range spec.required {
		if len(a.flags[name]) == 0 {
			return a, usagef("%s needs `--%s`", a.op, name)
		}
	}
	return a, a.parseValues()
}

func (a *args) parseValues() error {
	if v := a.one("stop-after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return usagef("%s: `--stop-after %s` is not a count", a.op, v)
		}
		a.stop = n
	}
	if v := a.one("seed"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return usagef("%s: `--seed %s` is not an unsigned 64-bit integer", a.op, v)
		}
		a.seed = n
	}
	if v := a.one("shapes"); v != "" && v != "on" {
		return usagef("rotate: `--shapes %s`: the only value is `on`", v)
	}
	// The writer's name starts every content it appends (r1-m0): an empty
	// one would make two writers' messages look alike.
	if a.op == "co-append" && a.one("writer") == "" {
		return usagef("co-append: `--writer` needs a name")
	}
	if a.op == "catch-up" && len(a.flags["db"]) != len(a.flags["transport"]) {
		return usagef("catch-up: --db and --transport come in pairs (%d and %d given)", len(a.flags["db"]), len(a.flags["transport"]))
	}
	return nil
}

// count runs body for i = 0, 1, ... until --stop-after, or for ever.
func (a args) count(body func(i int) error) error {
	for i := 0; a.stop < 0 || i < a.stop; i++ {
		if err := body(i); err != nil {
			return err
		}
	}
	return nil
}
