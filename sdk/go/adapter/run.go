package adapter

// Run: the command line read, the store opened, the operation dispatched,
// and every way it can end turned into the protocol's exit code and ONE
// line on stderr (docs/PROTOCOL.md §2): 0 done (or WON), 10 LOST, 2 bad
// input or a store that broke a rule of this package, 3 the store failed
// its operation (a finding, once the ready record is written), 69 an
// operation the store does not implement.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitLost        = 10
	ExitUsage       = 2
	ExitFailed      = 3
	ExitUnavailable = 69
)

// Run runs the operation named by os.Args and exits. newStore makes an
// unopened store; it is called once per operation and per database. Error
// lines start with the program's name.
func Run(newStore func() Store) {
	name := filepath.Base(os.Args[0])
	if len(os.Args) > 1 && os.Args[len(os.Args)-1] == "warm-pool" {
		os.Exit(warm(name, newStore))
	}
	if err := preload(newStore()); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, oneLine(err.Error()))
		os.Exit(exitCode(err))
	}
	os.Exit(Main(name, newStore, os.Args[1:], os.Stdout, os.Stderr))
}

// preload runs the store's Preload, if it has one.
func preload(s Store) error {
	if p, ok := s.(Preloader); ok {
		return guard("Preload", p.Preload)
	}
	return nil
}

// Main is Run without the exit: it returns the exit code, and its error
// lines start with name.
func Main(name string, newStore func() Store, argv []string, stdout, stderr io.Writer) int {
	code, err := dispatch(newStore, argv, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(err.Error()))
	}
	return code
}

// ruleError is a store that broke a rule of the protocol or of this
// package (a panic, a wrong state or mode): exit 2.
type ruleError struct{ method, rule string }

func (e ruleError) Error() string { return e.method + ": " + e.rule }

// unavailable is an operation the store does not implement: exit 69.
type unavailable struct{ op, needs string }

func (e unavailable) Error() string {
	return fmt.Sprintf("this store does not implement `%s` (its type is no adapter.%s)", e.op, e.needs)
}

func exitCode(err error) int {
	var u usageError
	var r ruleError
	var n unavailable
	switch {
	case errors.As(err, &u), errors.As(err, &r):
		return ExitUsage
	case errors.As(err, &n):
		return ExitUnavailable
	default:
		return ExitFailed
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func dispatch(newStore func() Store, argv []string, stdout io.Writer) (int, error) {
	a, err := parseArgs(argv)
	if err != nil {
		return ExitUsage, err
	}
	probe := newStore()
	if err := checkMethods(probe); err != nil {
		return ExitUsage, err
	}
	if needs := missing(probe, a.op); needs != "" {
		return ExitUnavailable, unavailable{a.op, needs}
	}
	if m := a.one("mutant"); m != "" && !oneOf(m, mutants(probe)) {
		return ExitUsage, usagef("unknown mutant `%s` (this store implements: %s)", m, strings.Join(mutants(probe), ", "))
	}
	r := runner{a: a, newStore: newStore, ops: operations(probe), stdout: stdout}
	code, err := r.run()
	if err != nil {
		return exitCode(err), err
	}
	return code, nil
}

// missing names the interface op needs that s lacks, or "".
func missing(s Store, op string) string {
	var ok bool
	switch op {
	case "rotate":
		_, ok = s.(Rotator)
		return unless(ok, "Rotator")
	case "park", "claim":
		_, ok = s.(Handoff)
		return unless(ok, "Handoff")
	case "fork":
		_, ok = s.(Forker)
		return unless(ok, "Forker")
	case "deliver", "catch-up":
		_, ok = s.(Outbox)
		return unless(ok, "Outbox")
	}
	return ""
}

func unless(ok bool, name string) string {
	if ok {
		return ""
	}
	return name
}

// operations is the ready record's list, from the interfaces s implements.
// The batches and shapes come with the operations: this package provides
// them for every store. co-append is the store's own Append run by several
// writers at once (cell 6): every store offers it, and cell 6 judges what
// its Append does then.
func operations(s Store) []string {
	ops := []string{"append", "co-append", "dump", "dump-batch"}
	if _, ok := s.(Preloader); ok {
		ops = append(ops, "warm-pool")
	}
	if _, ok := s.(Rotator); ok {
		ops = append(ops, "rotate", "rotate-shapes")
	}
	if _, ok := s.(Handoff); ok {
		ops = append(ops, "park", "claim")
	}
	if _, ok := s.(Forker); ok {
		ops = append(ops, "fork")
	}
	if _, ok := s.(Outbox); ok {
		ops = append(ops, "deliver", "catch-up", "catch-up-batch")
	}
	return ops
}

func mutants(s Store) []string {
	m, ok := s.(Mutator)
	if !ok {
		return nil
	}
	names := append([]string(nil), m.Mutants()...)
	sort.Strings(names)
	return names
}

// guard calls one method of the store: a panic becomes a ruleError naming
// it, a returned error an error naming it.
func guard(method string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = ruleError{method, fmt.Sprintf("panicked (%v); a method must return an error, never panic", p)}
		}
	}()
	if err := f(); err != nil {
		var r ruleError
		if errors.As(err, &r) {
			return err
		}
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}
