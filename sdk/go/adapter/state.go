package adapter

// What a store holds, as `dump` prints it (docs/PROTOCOL.md §4), and its
// canonical serialization: the two recovery passes of a crash state must
// print the same bytes, so the order of fields, the sorting and the
// escaping are fixed here, not left to encoding/json (which escapes <, >, &
// and U+2028 where the protocol does not).

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Protocol is the version of the child protocol this package speaks.
const Protocol = 2

// State is what a store holds, in the protocol's terms.
type State struct {
	// Integrity is the rows of PRAGMA integrity_check joined with "; ".
	Integrity string
	// Sessions in any order: Canonical sorts them by ID.
	Sessions []Session
	// Messages in commit order.
	Messages []Message
	// Obligations in any order: Canonical sorts them by key.
	Obligations []Obligation
	// DeriveCounts: every session's message_count is the number of its
	// messages here (a store that keeps no counter, PROTOCOL.md §4
	// "Checkpoint-shaped stores"); MessageCount is then ignored.
	DeriveCounts bool
}

// Session is one session; an empty string field is JSON null (BranchOf:
// absent).
type Session struct {
	ID              string
	ParentSessionID string
	Ended           bool
	EndReason       string
	MessageCount    int
	HandoffState    string // "pending", "running", the store's own word, or ""
	BranchOf        string // the session a rewind branched this one from
}

// Message is one message of a session.
type Message struct {
	SessionID string
	Role      string // user, assistant, system, tool
	Content   string
	// Position is the message's place in its session as the store numbers
	// it (a sequence or index column it orders by; docs/PROTOCOL.md §4), or
	// nil for a store that keeps none. A row id shared by every session is
	// none: the other sessions' rows would look like holes.
	Position *int64
	// Inactive is true only for a message a rewind soft-deleted.
	Inactive bool
}

// Obligation is an effect of the outbox; `dump` shows Key and State,
// Pending gives Payload too.
type Obligation struct {
	Key     string
	Payload string
	State   string // recorded, attempting or delivered
}

var obligationStates = []string{"recorded", "attempting", "delivered"}

// Empty is the state of a store that holds nothing.
func Empty(integrity string) State {
	return State{Integrity: integrity}
}

// Check says which rule of the state's shape s breaks, or nil.
func (s State) Check() error {
	if s.Integrity == "" {
		return fmt.Errorf("integrity is empty: it must be PRAGMA integrity_check's rows joined with \"; \" (\"ok\" for a healthy file)")
	}
	seen := map[string]bool{}
	for _, x := range s.Sessions {
		if x.ID == "" {
			return fmt.Errorf("a session has an empty id")
		}
		if seen[x.ID] {
			return fmt.Errorf("session %q appears twice", x.ID)
		}
		seen[x.ID] = true
		if x.MessageCount < 0 {
			return fmt.Errorf("session %q has a negative message_count %d", x.ID, x.MessageCount)
		}
	}
	for i, m := range s.Messages {
		if m.SessionID == "" || m.Role == "" {
			return fmt.Errorf("message %d has an empty session or role", i)
		}
	}
	keys := map[string]bool{}
	for _, o := range s.Obligations {
		if o.Key == "" || keys[o.Key] {
			return fmt.Errorf("obligation %q is empty or appears twice", o.Key)
		}
		keys[o.Key] = true
		if !oneOf(o.State, obligationStates) {
			return fmt.Errorf("obligation %q has state %q, not one of %s", o.Key, o.State, strings.Join(obligationStates, "|"))
		}
	}
	return nil
}

// Canonical is the one line `dump` prints for s, newline included.
func (s State) Canonical() []byte {
	sessions := append([]Session(nil), s.Sessions...)
	if s.DeriveCounts {
		counts := map[string]int{}
		for _, m := range s.Messages {
			counts[m.SessionID]++
		}
		for i := range sessions {
			sessions[i].MessageCount = counts[sessions[i].ID]
		}
	}
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].ID < sessions[j].ID })
	outbox := append([]Obligation(nil), s.Obligations...)
	sort.Slice(outbox, func(i, j int) bool { return outbox[i].Key < outbox[j].Key })

	var b strings.Builder
	fmt.Fprintf(&b, `{"protocol":%d,"integrity":%s,"sessions":[`, Protocol, quote(s.Integrity))
	for i, x := range sessions {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%s,"parent_session_id":%s,"ended":%t,"end_reason":%s,"message_count":%d,"handoff_state":%s`,
			quote(x.ID), nullable(x.ParentSessionID), x.Ended, nullable(x.EndReason), x.MessageCount, nullable(x.HandoffState))
		if x.BranchOf != "" {
			fmt.Fprintf(&b, `,"branch_of":%s`, quote(x.BranchOf))
		}
		b.WriteByte('}')
	}
	b.WriteString(`],"messages":[`)
	for i, m := range s.Messages {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"session_id":%s,"role":%s,"content":%s`, quote(m.SessionID), quote(m.Role), quote(m.Content))
		if m.Position != nil {
			fmt.Fprintf(&b, `,"position":%d`, *m.Position)
		}
		if m.Inactive {
			b.WriteString(`,"active":false`)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	// Omitted when empty, so that a store without obligations prints
	// version 1's bytes.
	if len(outbox) > 0 {
		b.WriteString(`,"outbox":[`)
		for i, o := range outbox {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"key":%s,"state":%s}`, quote(o.Key), quote(o.State))
		}
		b.WriteByte(']')
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

func nullable(s string) string {
	if s == "" {
		return "null"
	}
	return quote(s)
}

// quote escapes only `"`, `\` and control characters, as the protocol's
// canonical form does; everything else is written as it is.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c < 0x20:
			b.WriteString(`\u00`)
			h := strconv.FormatInt(int64(c), 16)
			if len(h) < 2 {
				b.WriteByte('0')
			}
			b.WriteString(h)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// liveLen is the length of session's live transcript (docs/PROTOCOL.md §4):
// follow branch_of to the head, count its messages not soft-deleted.
func (s State) liveLen(session string) (int, error) {
	branched := map[string]string{}
	for _, x := range s.Sessions {
		if x.BranchOf == "" {
			continue
		}
		if other, ok := branched[x.BranchOf]; ok {
			return 0, fmt.Errorf("sessions %q and %q both branch from %q", other, x.ID, x.BranchOf)
		}
		branched[x.BranchOf] = x.ID
	}
	head := session
	for steps := 0; ; steps++ {
		next, ok := branched[head]
		if !ok {
			break
		}
		if steps > len(s.Sessions) {
			return 0, fmt.Errorf("the branches of %q form a cycle", session)
		}
		head = next
	}
	n := 0
	for _, m := range s.Messages {
		if m.SessionID == head && !m.Inactive {
			n++
		}
	}
	return n, nil
}

func oneOf(s string, set []string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}
