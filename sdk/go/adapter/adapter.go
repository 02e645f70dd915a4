// Package adapter puts a Go session store under crashcells: it speaks the
// child protocol (docs/PROTOCOL.md) so that the store only implements its
// own operations, as sdk/API.md names them in every language.
//
// Crash model: the driver kills the process with SIGKILL at any instant and
// reads the store afterwards only through `dump`. The package keeps the
// protocol's promises that are not about the store: every ack is one
// write(2) on an O_APPEND descriptor, written only after the store's method
// returned; the ready record says what the store's connection reports;
// `dump` prints the canonical bytes of what the store holds. That each
// method is one transaction is the store's promise (docs/adapters/go.md).
//
// A store implements Store and, for each optional operation, one more
// interface that Run finds by type assertion: Rotator, Handoff, Forker,
// Outbox (and SessionCreator, LiveLengther, Mutator, io.Closer). The ready
// record's `operations` list is derived from them.
package adapter

// Config is what the config home ($CRASHCELLS_HOME/config.toml) asked for,
// already checked; an empty field was not asked (the store's default).
type Config struct {
	JournalMode string // delete|truncate|persist|memory|wal|off, or ""
	Synchronous string // off|normal|full|extra, or ""
}

// Store is what every store implements. Run makes a new value for each
// operation and each database (nothing carries over from one to the next).
type Store interface {
	// Open opens the store on db (created with its schema if missing) and
	// applies its journal mode as its own policy decides; a store with no
	// policy of its own applies config (Resolve is the reference policy).
	// It returns the decision, or nil.
	Open(db string, config Config) (*Resolver, error)
	// Journal says what the store's own connection reports after Open.
	Journal() (Journal, error)
	// Append, in one transaction: the message at the end of the session's
	// live transcript (a branching store appends to the head), creating the
	// session in that same transaction if it does not exist, and the
	// session's message_count one more. It returns once committed.
	Append(session, role, content string) error
	// State reads db for `dump`, on a value that was never opened: a fresh
	// connection, read-write, no pragma, no resolver (SQLite rolls back a
	// hot journal or replays the WAL as it reads), closed before it
	// returns. A file without the store's tables is an empty State.
	State(db string) (State, error)
}

// SessionCreator creates a session before `append` and `fork` write their
// ready record. A store that cannot create an empty session leaves it out.
type SessionCreator interface {
	CreateSession(session string) error
}

// Turn is one message a rotation's parent gets as its work.
type Turn struct{ Role, Content string }

// Rotator rotates (`rotate`, with shapes).
type Rotator interface {
	// Rotate makes parent ready (created when newParent, then work added;
	// any number of transactions), then publishes in ONE transaction:
	// child created with parent_session_id parent, its `system` message,
	// copies of the parent's last `carried` messages (same role and
	// content, in order), and parent ended with end_reason "compression".
	Rotate(parent, child string, work []Turn, carried int, newParent bool) error
}

// Handoff parks a handoff and claims it (`park`, `claim`).
type Handoff interface {
	// Park creates session with handoff_state "pending", committed.
	Park(session string) error
	// Claim, in ONE transaction: the handoff from pending to running only if
	// it is still pending at commit (a compare-and-set, not a read then a
	// write) and, for the winner, the message (system, "claimed by
	// <claimant>") in session. It says whether this claimant won.
	Claim(session, claimant string) (won bool, err error)
}

// Forker rewinds (`fork`).
type Forker interface {
	// Rewind, in ONE transaction: the session's live transcript becomes
	// exactly its first keep messages (soft-delete, branch or a new
	// snapshot); i is the operation's index.
	Rewind(session string, keep, i int) error
}

// LiveLengther counts the live transcript for fork's rewind rule; without
// it the count comes from State.
type LiveLengther interface {
	LiveLength(session string) (int, error)
}

// Outbox keeps obligations (`deliver`, `catch-up`); the package sends them
// and asks the transport on catch-up.
type Outbox interface {
	// Record stores obligation key as recorded, committed.
	Record(key, payload string) error
	// Attempting moves key from recorded to attempting, committed.
	Attempting(key string) error
	// Delivered moves key from attempting to delivered, committed.
	Delivered(key string) error
	// Pending lists the obligations not delivered, in the order recorded.
	Pending() ([]Obligation, error)
}

// Preloader does a store's slow start (what every operation does before it
// opens the store) ahead of need: a store that has one gets the warm pool
// (docs/PROTOCOL.md §10), whose processes call Preload before they say
// they are warm; an exec'd operation calls it first. It must open nothing
// the operations use: no database, no file of a trial.
type Preloader interface {
	Preload() error
}

// Mutator names the deliberately broken variants a store implements
// (docs/PROTOCOL.md, `--mutant`); Run refuses any other name. The store
// reads the one given with Base.Mutant.
type Mutator interface {
	Mutants() []string
}

// Journal is what the ready record says of the store's connection.
type Journal struct {
	JournalMode    string // PRAGMA journal_mode after Open applied the mode
	Synchronous    string // PRAGMA synchronous as off|normal|full|extra, or ""
	SQLiteVersion  string // sqlite3_libversion()
	SQLiteSourceID string // sqlite_source_id(), or ""
}

// Resolver is a store's decision on its journal mode (docs/PROTOCOL.md §3).
type Resolver struct {
	Requested   string // the journal_mode asked for, or ""
	Applied     string // the mode applied
	Synchronous string // the level asked for, or ""
	DecidedBy   string // config, default, wal-reset-gate, already-wal, store, ...
	Reason      string // one sentence
}

// Base, embedded in a store, gives it the operation, the mutant and
// AckNow. Run fills it in before Open.
type Base struct {
	op, mutant, writer string
	index              int
	ackNow             func() error
}

// Op is the operation being run (append, rotate, park, claim, fork,
// deliver, catch-up; dump for State).
func (b *Base) Op() string { return b.op }

// Mutant is the name given with --mutant, or "".
func (b *Base) Mutant() string { return b.mutant }

// Writer is which writer this process is: co-append's --writer (r0, r1,
// ...), "" for an operation with one writer. Two writers append to one
// session at once (cell 6): ids a store makes must be unique per writer.
func (b *Base) Writer() string { return b.writer }

// Index is the current acked step's index: the i of its ack (the append's,
// the rotation's, the delivery's), 0 outside one.
func (b *Base) Index() int { return b.index }

// AckNow writes the current operation's ack at once, inside the store's
// transaction, and not again after the method returns: it is how a store
// implements the ack-before-commit mutant. Outside an acked method it does
// nothing.
func (b *Base) AckNow() error {
	if b.ackNow == nil {
		return nil
	}
	return b.ackNow()
}

func (b *Base) base() *Base { return b }

type embedsBase interface{ base() *Base }

// SyncName names a PRAGMA synchronous value (0..3); "" for another.
func SyncName(level int) string {
	if level < 0 || level >= len(syncLevels) {
		return ""
	}
	return syncLevels[level]
}
