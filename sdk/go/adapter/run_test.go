package adapter

// Run end to end, in this process, on stores held in memory: the protocol's
// files (ack journal, transport, dump's stdout), its exit codes and its
// one-line errors, for stores that keep the rules and stores that break one.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// memory is one database of the in-memory stores, by path.
type memory struct {
	sessions    map[string]*Session
	messages    []Message
	obligations []Obligation
}

var memories = map[string]*memory{}

type fake struct {
	Base
	m *memory
}

func (f *fake) Open(db string, c Config) (*Resolver, error) {
	if memories[db] == nil {
		memories[db] = &memory{sessions: map[string]*Session{}}
		os.WriteFile(db, nil, 0o644)
	}
	f.m = memories[db]
	r := Resolve(c, "3.40.1", db)
	return &r, nil
}

func (f *fake) Journal() (Journal, error) {
	return Journal{JournalMode: "delete", Synchronous: "full", SQLiteVersion: "3.40.1"}, nil
}

func (f *fake) Append(session, role, content string) error {
	if f.m.sessions[session] == nil {
		f.m.sessions[session] = &Session{ID: session}
	}
	f.m.sessions[session].MessageCount++
	f.m.messages = append(f.m.messages, Message{session, role, content, nil, false})
	return nil
}

func (f *fake) State(db string) (State, error) {
	m := memories[db]
	st := State{Integrity: "ok", Messages: m.messages, Obligations: m.obligations}
	for _, s := range m.sessions {
		st.Sessions = append(st.Sessions, *s)
	}
	return st, nil
}

// withOutbox keeps obligations.
type withOutbox struct{ fake }

func (f *withOutbox) Record(key, payload string) error {
	f.m.obligations = append(f.m.obligations, Obligation{key, payload, "recorded"})
	return nil
}
func (f *withOutbox) Attempting(key string) error { return f.move(key, "recorded", "attempting") }
func (f *withOutbox) Delivered(key string) error  { return f.move(key, "attempting", "delivered") }
func (f *withOutbox) move(key, from, to string) error {
	for i := range f.m.obligations {
		if o := &f.m.obligations[i]; o.Key == key && o.State == from {
			o.State = to
			return nil
		}
	}
	return fmt.Errorf("%s is not %s", key, from)
}
func (f *withOutbox) Pending() ([]Obligation, error) {
	var out []Obligation
	for _, o := range f.m.obligations {
		if o.State != "delivered" {
			out = append(out, o)
		}
	}
	return out, nil
}
func (f *withOutbox) Mutants() []string { return []string{"resend-on-catch-up"} }

// Stores that break a rule.
type panicky struct{ fake }

func (f *panicky) Append(string, string, string) error { panic("index out of range") }

type failing struct{ fake }

func (f *failing) Append(string, string, string) error { return errors.New("disk I/O error") }

type misspelt struct{ fake }

func (f *misspelt) Rewnd(session string, keep, i int) error { return nil }

type halfHandoff struct{ fake }

func (f *halfHandoff) Park(session string) error { return nil }

type wrongSignature struct{ fake }

func (f *wrongSignature) Rewind(session string, keep int) error { return nil }

type twice struct{ fake }

func (f *twice) State(string) (State, error) {
	return State{Integrity: "ok", Sessions: []Session{{ID: "main"}, {ID: "main"}}}, nil
}

type corrupt struct{ fake }

func (f *corrupt) State(string) (State, error) {
	return State{}, errors.New("database disk image is malformed")
}

type ackEarly struct{ fake }

func (f *ackEarly) Append(session, role, content string) error {
	f.AckNow()
	return f.fake.Append(session, role, content)
}
func (f *ackEarly) Mutants() []string { return []string{"ack-before-commit"} }

// call runs Main with store and argv (paths under dir), returning the exit
// code, stdout and stderr.
func call(t *testing.T, newStore func() Store, argv ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main("test-store", newStore, argv, &out, &errs)
	if strings.Count(errs.String(), "\n") > 1 {
		t.Errorf("stderr must be one line: %q", errs.String())
	}
	return code, out.String(), errs.String()
}

func lines(t *testing.T, path string) []map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]interface{}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var v map[string]interface{}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

func newFake() Store     { return &fake{} }
func newOutbox() Store   { return &withOutbox{} }
func newAckEarly() Store { return &ackEarly{} }

func TestAppendWritesReadyThenAnAckPerAppend(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CRASHCELLS_HOME", dir)
	db, acks := filepath.Join(dir, "s.db"), filepath.Join(dir, "acks")
	code, _, errs := call(t, newFake, "append", "--db", db, "--acks", acks, "--stop-after", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got := lines(t, acks)
	ready := got[0]
	if ready["kind"] != "ready" || ready["protocol"] != 2.0 || ready["op"] != "append" || ready["journal_mode"] != "delete" {
		t.Fatalf("ready record: %v", ready)
	}
	if ops := fmt.Sprint(ready["operations"]); ops != "[append co-append dump dump-batch]" {
		t.Fatalf("operations derived from the interfaces: got %s", ops)
	}
	if r := ready["resolver"].(map[string]interface{}); r["decided_by"] != "wal-reset-gate" {
		t.Fatalf("resolver: %v", r)
	}
	for i, a := range got[1:] {
		if a["kind"] != "ack" || a["op"] != "append" || a["i"] != float64(i) {
			t.Fatalf("ack %d: %v", i, a)
		}
	}
	if len(got) != 4 {
		t.Fatalf("%d lines, want ready and 3 acks", len(got))
	}
	code, out, _ := call(t, newFake, "dump", "--db", db)
	if code != 0 || !strings.Contains(out, `"messages":[{"session_id":"main","role":"user","content":"m0"}`) {
		t.Fatalf("dump: exit %d, %s", code, out)
	}
}

// Two writers of co-append: the first waits at the barrier the test holds,
// acking nothing, until the test drops it; each then acks its own
// numbered messages from 0, and the store holds both writers' in order.
func TestCoAppendWaitsAtTheBarrierThenAcksEachWritersMessages(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CRASHCELLS_HOME", dir)
	db, barrier := filepath.Join(dir, "s.db"), filepath.Join(dir, "barrier")
	held, err := os.Create(barrier)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	writer := func(name string) (int, string) {
		code, _, errs := call(t, newFake, "co-append", "--db", db, "--acks", filepath.Join(dir, name), "--writer", name, "--barrier", barrier, "--stop-after", "3")
		return code, errs
	}
	done := make(chan string, 1)
	go func() {
		code, errs := writer("r0")
		done <- fmt.Sprintf("exit %d %s", code, errs)
	}()
	// Ready, then held: its journal holds the ready record and no ack.
	deadline := time.Now().Add(30 * time.Second)
	for !fileHas(filepath.Join(dir, "r0"), `"kind":"ready"`) {
		if time.Now().After(deadline) {
			t.Fatal("r0 wrote no ready record within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if got := lines(t, filepath.Join(dir, "r0")); len(got) != 1 || got[0]["op"] != "co-append" {
		t.Fatalf("r0 wrote %v through the held barrier", got)
	}
	syscall.Flock(int(held.Fd()), syscall.LOCK_UN)
	select {
	case end := <-done:
		if end != "exit 0 " {
			t.Fatalf("r0: %s", end)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("r0 did not end within 30 s of the barrier's release")
	}
	if code, errs := writer("r1"); code != 0 {
		t.Fatalf("r1: exit %d %s", code, errs)
	}
	for _, name := range []string{"r0", "r1"} {
		got := lines(t, filepath.Join(dir, name))
		for i, a := range got[1:] {
			if a["kind"] != "ack" || a["op"] != "co-append" || a["i"] != float64(i) {
				t.Fatalf("%s ack %d: %v", name, i, a)
			}
		}
		if len(got) != 4 {
			t.Fatalf("%s: %d lines, want ready and 3 acks", name, len(got))
		}
	}
	var contents []string
	for _, m := range memories[db].messages {
		contents = append(contents, m.Content)
	}
	if got := strings.Join(contents, " "); got != "r0-m0 r0-m1 r0-m2 r1-m0 r1-m1 r1-m2" {
		t.Fatalf("the store holds %s", got)
	}
}

func fileHas(path, text string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), text)
}

func TestAckNowWritesTheAckOnceBeforeTheMethodReturns(t *testing.T) {
	dir := t.TempDir()
	acks := filepath.Join(dir, "acks")
	code, _, errs := call(t, newAckEarly, "append", "--db", filepath.Join(dir, "s.db"), "--acks", acks, "--stop-after", "3", "--mutant", "ack-before-commit")
	if code != 0 || len(lines(t, acks)) != 4 {
		t.Fatalf("exit %d (%s), %d lines; want ready and 3 acks", code, errs, len(lines(t, acks)))
	}
}

func TestAnOperationTheStoreLacksExits69BeforeWritingAnything(t *testing.T) {
	dir := t.TempDir()
	acks := filepath.Join(dir, "acks")
	code, _, errs := call(t, newFake, "rotate", "--db", filepath.Join(dir, "s.db"), "--acks", acks)
	if code != ExitUnavailable || !strings.Contains(errs, "adapter.Rotator") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(acks); err == nil {
		t.Fatal("the journal must not be written")
	}
}

func TestBrokenRulesExit2WithOneLineNamingTheMethod(t *testing.T) {
	dir := t.TempDir()
	db, acks := filepath.Join(dir, "s.db"), filepath.Join(dir, "acks")
	appendArgs := []string{"append", "--db", db, "--acks", acks, "--stop-after", "1"}
	for _, c := range []struct {
		name  string
		store func() Store
		argv  []string
		code  int
		want  string
	}{
		{"panic", func() Store { return &panicky{} }, appendArgs, 2, "test-store: Append: panicked (index out of range)"},
		{"error", func() Store { return &failing{} }, appendArgs, 3, "test-store: Append: disk I/O error"},
		{"misspelt", func() Store { return &misspelt{} }, appendArgs, 2, "Rewnd: no such method in the adapter API; did you mean Rewind?"},
		{"signature", func() Store { return &wrongSignature{} }, appendArgs, 2, "Rewind: its signature func(string, int) error is not adapter.Forker's func(string, int, int) error"},
		{"half", func() Store { return &halfHandoff{} }, appendArgs, 2, "Park: adapter.Handoff needs all of Claim, Park"},
		{"mutant", newFake, append(appendArgs, "--mutant", "racy-claim"), 2, "unknown mutant `racy-claim`"},
		{"state", func() Store { return &twice{} }, []string{"dump", "--db", db}, 2, "State: session \"main\" appears twice"},
	} {
		code, _, errs := call(t, c.store, c.argv...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %q; want exit %d saying %q", c.name, code, errs, c.code, c.want)
		}
	}
}

func TestABadConfigHomeIsRefusedBeforeTheReadyRecord(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CRASHCELLS_HOME", dir)
	os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[database]\njournal_mode = \"wall\"\n"), 0o644)
	acks := filepath.Join(dir, "acks")
	code, _, errs := call(t, newFake, "append", "--db", filepath.Join(dir, "s.db"), "--acks", acks)
	if code != 2 || !strings.Contains(errs, "unknown journal_mode `wall`") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(acks); err == nil {
		t.Fatal("no ready record may be written")
	}
}

func TestDumpBatchChecksEveryFileFirstAndPrintsCorruption(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.db")
	call(t, newFake, "append", "--db", a, "--acks", filepath.Join(dir, "acks"), "--stop-after", "1")
	code, out, _ := call(t, newFake, "dump", "--db", a, "--db", filepath.Join(dir, "missing.db"))
	if code == 0 || out != "" {
		t.Fatalf("a batch with a missing file: exit %d, stdout %q", code, out)
	}
	code, out, _ = call(t, newFake, "dump", "--db", a, "--db", a)
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("a batch of two: exit %d, %q", code, out)
	}
	code, out, _ = call(t, func() Store { return &corrupt{} }, "dump", "--db", a)
	want := `{"protocol":2,"integrity":"corrupt: database disk image is malformed","sessions":[],"messages":[]}` + "\n"
	if code != 0 || out != want {
		t.Fatalf("a corrupt file: exit %d, %q", code, out)
	}
}

func TestDeliverThenCatchUpSendsEachObligationOnce(t *testing.T) {
	for _, c := range []struct {
		mutant []string
		want   string
	}{
		{nil, "o0 o1 o2"},
		{[]string{"--mutant", "resend-on-catch-up"}, "o0 o0 o1 o2"},
	} {
		dir := t.TempDir()
		db, transport := filepath.Join(dir, "s.db"), filepath.Join(dir, "transport")
		code, _, errs := call(t, newOutbox, "deliver", "--db", db, "--acks", filepath.Join(dir, "acks"), "--transport", transport, "--stop-after", "1")
		if code != 0 {
			t.Fatalf("deliver: exit %d: %s", code, errs)
		}
		// As a kill would leave them: o0 sent but attempting, o1 attempting
		// and never sent, o2 recorded.
		m := memories[db]
		m.obligations[0].State = "attempting"
		m.obligations = append(m.obligations, Obligation{"o1", "effect of o1", "attempting"}, Obligation{"o2", "effect of o2", "recorded"})
		code, _, errs = call(t, newOutbox, append([]string{"catch-up", "--db", db, "--transport", transport}, c.mutant...)...)
		if code != 0 {
			t.Fatalf("catch-up: exit %d: %s", code, errs)
		}
		var keys []string
		for _, l := range lines(t, transport) {
			keys = append(keys, l["key"].(string))
		}
		if got := strings.Join(keys, " "); got != c.want {
			t.Errorf("mutant %v: the transport holds %s, want %s", c.mutant, got, c.want)
		}
		for _, o := range m.obligations {
			if o.State != "delivered" {
				t.Errorf("%s left %s", o.Key, o.State)
			}
		}
	}
}

func TestJournalLinesAreWholeAndCanonical(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acks")
	j, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.ack("rotate", 1, field{"parent", "c0"}, field{"child", "c1"}, field{"carried", 2})
	j.record(field{"reason", "3.7.0 <= v & more"})
	j.close()
	data, _ := os.ReadFile(path)
	want := `{"kind":"ack","op":"rotate","i":1,"parent":"c0","child":"c1","carried":2}` + "\n" + `{"reason":"3.7.0 <= v & more"}` + "\n"
	if string(data) != want {
		t.Fatalf("got %q", data)
	}
}

type preloading struct {
	fake
	err error
}

func (f *preloading) Preload() error { return f.err }

func TestAPreloaderGetsTheWarmPool(t *testing.T) {
	if ops := fmt.Sprint(operations(&preloading{})); ops != "[append co-append dump dump-batch warm-pool]" {
		t.Fatalf("got %s", ops)
	}
	err := preload(&preloading{err: errors.New("no driver")})
	if err == nil || err.Error() != "Preload: no driver" || exitCode(err) != ExitFailed {
		t.Fatalf("a failed preload: %v", err)
	}
}
