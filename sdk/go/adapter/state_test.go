package adapter

import "testing"

func TestCanonicalIsProtocolExample(t *testing.T) {
	// docs/PROTOCOL.md §4's example, with the store's sessions given out of order.
	s := State{
		Integrity: "ok",
		Sessions: []Session{
			{ID: "p0", Ended: true, EndReason: "compression", MessageCount: 1, HandoffState: "compressing"},
			{ID: "c0", ParentSessionID: "p0", MessageCount: 1},
		},
		Messages: []Message{{"p0", "user", "work 0", nil, false}, {"c0", "system", "continued from p0", nil, false}},
	}
	want := `{"protocol":2,"integrity":"ok","sessions":[{"id":"c0","parent_session_id":"p0","ended":false,"end_reason":null,"message_count":1,"handoff_state":null},{"id":"p0","parent_session_id":null,"ended":true,"end_reason":"compression","message_count":1,"handoff_state":"compressing"}],"messages":[{"session_id":"p0","role":"user","content":"work 0"},{"session_id":"c0","role":"system","content":"continued from p0"}]}` + "\n"
	if got := string(s.Canonical()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalOptionalFieldsAndOutboxOrder(t *testing.T) {
	s := State{
		Integrity:    "ok",
		Sessions:     []Session{{ID: "main~3", BranchOf: "main"}, {ID: "main"}},
		Messages:     []Message{{"main", "user", "m0", nil, true}, {"main~3", "user", "m1", nil, false}},
		Obligations:  []Obligation{{Key: "o1", State: "attempting"}, {Key: "o0", State: "delivered"}},
		DeriveCounts: true,
	}
	want := `{"protocol":2,"integrity":"ok","sessions":[{"id":"main","parent_session_id":null,"ended":false,"end_reason":null,"message_count":1,"handoff_state":null},{"id":"main~3","parent_session_id":null,"ended":false,"end_reason":null,"message_count":1,"handoff_state":null,"branch_of":"main"}],"messages":[{"session_id":"main","role":"user","content":"m0","active":false},{"session_id":"main~3","role":"user","content":"m1"}],"outbox":[{"key":"o0","state":"delivered"},{"key":"o1","state":"attempting"}]}` + "\n"
	if got := string(s.Canonical()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalPositionFollowsContentWhenGiven(t *testing.T) {
	zero, seven := int64(0), int64(7)
	s := State{
		Integrity:    "ok",
		Sessions:     []Session{{ID: "main"}},
		Messages:     []Message{{"main", "user", "r0-m0", &zero, false}, {"main", "user", "r1-m0", &seven, true}, {"main", "user", "m2", nil, false}},
		DeriveCounts: true,
	}
	want := `{"protocol":2,"integrity":"ok","sessions":[{"id":"main","parent_session_id":null,"ended":false,"end_reason":null,"message_count":3,"handoff_state":null}],"messages":[{"session_id":"main","role":"user","content":"r0-m0","position":0},{"session_id":"main","role":"user","content":"r1-m0","position":7,"active":false},{"session_id":"main","role":"user","content":"m2"}]}` + "\n"
	if got := string(s.Canonical()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestQuoteEscapesOnlyWhatTheProtocolSays(t *testing.T) {
	got := quote("a\"b\\c\n\t\r\b\f\x01\x1f/<>&é\u2028")
	want := `"a\"b\\c\n\t\r\b\f\u0001\u001f/<>&é` + "\u2028" + `"`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestCheckNamesTheBrokenRule(t *testing.T) {
	cases := map[string]State{
		"integrity is empty":  {},
		"appears twice":       {Integrity: "ok", Sessions: []Session{{ID: "a"}, {ID: "a"}}},
		"empty session":       {Integrity: "ok", Messages: []Message{{Role: "user"}}},
		"not one of":          {Integrity: "ok", Obligations: []Obligation{{Key: "o0", State: "sent"}}},
		"negative":            {Integrity: "ok", Sessions: []Session{{ID: "a", MessageCount: -1}}},
		"a session has an em": {Integrity: "ok", Sessions: []Session{{}}},
	}
	for want, s := range cases {
		err := s.Check()
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("%+v: got %v, want an error saying %q", s, err, want)
		}
	}
	if err := (State{Integrity: "ok"}).Check(); err != nil {
		t.Fatalf("the empty state: %v", err)
	}
}

func TestLiveLenFollowsBranchesAndSkipsSoftDeleted(t *testing.T) {
	s := State{
		Integrity: "ok",
		Sessions:  []Session{{ID: "main"}, {ID: "b1", BranchOf: "main"}, {ID: "b2", BranchOf: "b1"}},
		Messages:  []Message{{"main", "user", "m0", nil, false}, {"b2", "user", "m0", nil, false}, {"b2", "user", "m1", nil, true}, {"b2", "user", "m2", nil, false}},
	}
	if n, err := s.liveLen("main"); err != nil || n != 2 {
		t.Fatalf("got %d, %v; want 2", n, err)
	}
	s.Sessions = append(s.Sessions, Session{ID: "b3", BranchOf: "b1"})
	if _, err := s.liveLen("main"); err == nil {
		t.Fatal("two branches of one session must be refused")
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}
