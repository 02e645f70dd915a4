package adapter

// `dump`, the recovery pass (docs/PROTOCOL.md §2, §4): each database read
// by State on a store value of its own (a fresh connection, no pragma),
// checked for the state's shape and printed canonically, one line per
// --db in the order given. Every file is checked before anything is
// printed, and the lines go out together at the end.

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Corrupt is an error a store's State returns for a file SQLite calls
// corrupt: `dump` prints the empty state with "corrupt: <Msg>", and the
// cell fires on it. SQLite's own messages ("database disk image is
// malformed", "file is not a database") are recognized without it.
type Corrupt struct{ Msg string }

func (c Corrupt) Error() string { return c.Msg }

func (r *runner) dump() error {
	dbs := r.a.flags["db"]
	for _, db := range dbs {
		if st, err := os.Stat(db); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("no database at %s", db)
		}
	}
	var out []byte
	for _, db := range dbs {
		s, _ := r.fresh("dump")
		st, err := inspect(s, db)
		if err != nil {
			return err
		}
		out = append(out, st.Canonical()...)
	}
	_, err := r.stdout.Write(out)
	return err
}

// inspect reads db; a file SQLite calls corrupt is a finding, not a failed
// pass: the empty state, saying so in integrity.
func inspect(s Store, db string) (State, error) {
	var st State
	err := guard("State", func() (err error) { st, err = s.State(db); return err })
	if err != nil {
		if msg := corruption(err); msg != "" {
			return Empty("corrupt: " + msg), nil
		}
		return st, err
	}
	if err := st.Check(); err != nil {
		return st, ruleError{"State", err.Error() + " (rule: PROTOCOL.md §4, the canonical dump)"}
	}
	return st, nil
}

// corruption is the message when err says the file is corrupt; else "".
func corruption(err error) string {
	var c Corrupt
	if errors.As(err, &c) {
		return c.Msg
	}
	for _, word := range []string{"database disk image is malformed", "file is not a database"} {
		if strings.Contains(err.Error(), word) {
			return word
		}
	}
	return ""
}
