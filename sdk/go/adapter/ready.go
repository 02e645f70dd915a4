package adapter

// The ready record's store fields (docs/PROTOCOL.md §3), checked: the leg
// audit reads journal_mode and the resolver, and a record the driver cannot
// read is the harness's error, so a Journal or Resolver that breaks the
// shape stops here with a line naming the rule and the method.

import (
	"fmt"
	"strings"
)

func readyFields(j Journal, r *Resolver) ([]field, error) {
	bad := func(method, format string, v ...interface{}) ([]field, error) {
		return nil, ruleError{method, fmt.Sprintf(format, v...) + " (rule: PROTOCOL.md §3, the ready record)"}
	}
	if j.SQLiteVersion == "" {
		return bad("Journal", "SQLiteVersion is empty: it is sqlite3_libversion() of the library the store uses")
	}
	mode := strings.ToLower(j.JournalMode)
	if !oneOf(mode, journalModes) {
		return bad("Journal", "JournalMode %q is not one of %s: report what PRAGMA journal_mode says", j.JournalMode, strings.Join(journalModes, "|"))
	}
	sync := strings.ToLower(j.Synchronous)
	if sync != "" && !oneOf(sync, syncLevels) {
		return bad("Journal", "Synchronous %q is not one of %s (or empty)", j.Synchronous, strings.Join(syncLevels, "|"))
	}
	resolver, err := resolverValue(r)
	if err != nil {
		return bad("Open", "the resolver it returned: %v", err)
	}
	return []field{
		{"sqlite_version", j.SQLiteVersion},
		{"sqlite_source_id", orNull(j.SQLiteSourceID)},
		{"journal_mode", mode},
		{"synchronous", orNull(sync)},
		{"resolver", resolver},
	}, nil
}

// resolverValue is the resolver's JSON object, its fields in the
// protocol's order, or nil.
func resolverValue(r *Resolver) (interface{}, error) {
	if r == nil {
		return nil, nil
	}
	if r.Requested != "" && !oneOf(r.Requested, journalModes) {
		return nil, fmt.Errorf("Requested %q is not a journal mode", r.Requested)
	}
	if !oneOf(r.Applied, journalModes) {
		return nil, fmt.Errorf("Applied %q is not a journal mode", r.Applied)
	}
	if r.Synchronous != "" && !oneOf(r.Synchronous, syncLevels) {
		return nil, fmt.Errorf("Synchronous %q is not a level", r.Synchronous)
	}
	if r.DecidedBy == "" || r.Reason == "" {
		return nil, fmt.Errorf("DecidedBy and Reason must both be given")
	}
	return rawJSON(fmt.Sprintf(`{"requested":%s,"applied":%s,"synchronous":%s,"decided_by":%s,"reason":%s}`,
		nullable(r.Requested), quote(r.Applied), nullable(r.Synchronous), quote(r.DecidedBy), quote(r.Reason))), nil
}

// rawJSON is a value already serialized.
type rawJSON string

func orNull(s string) interface{} {
	if s == "" {
		return nil
	}
	return s
}
