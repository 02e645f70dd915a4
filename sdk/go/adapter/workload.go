package adapter

// The workloads of docs/PROTOCOL.md §2: what each operation does, in which
// order, and when it acks. The store's methods make the changes; this file
// owns the rules the driver replays (the messages' contents, the rotation
// shapes, the fork's rewind rule) and the ack after each method returned:
// an ack on disk is a promise the store must keep.

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

const (
	// appendSession is the session append and fork write to.
	appendSession = "main"
	// forkEvery: fork's operation i is a rewind when i % forkEvery == 3.
	forkEvery = 4
	// carried is how many messages a carrying rotation copies.
	carried = 2
	// The mutants the library plays (the reference's numbers,
	// protocol/corpus/mutants.json). stallAfter: stall blocks at this
	// append, having acked the ones before it. dropEvery, dropFirst:
	// drop-append acks without writing one append in dropEvery, from the
	// second (m1, m65, ...).
	stallAfter = 5
	dropEvery  = 64
	dropFirst  = 1
)

type runner struct {
	a        args
	newStore func() Store
	ops      []string
	stdout   io.Writer
	config   Config
}

// opened is a store open for an operation, with its journal.
type opened struct {
	s        Store
	base     *Base
	resolver *Resolver
	j        *journal
}

func (r *runner) run() (int, error) {
	if r.a.op == "dump" {
		return ExitOK, r.dump()
	}
	c, err := readConfig()
	if err != nil {
		return ExitUsage, usagef("%v", err)
	}
	r.config = c
	switch r.a.op {
	case "park":
		return ExitOK, r.park()
	case "claim":
		return r.claim()
	case "catch-up":
		return ExitOK, r.catchUp()
	case "co-append":
		return ExitOK, r.coAppend()
	}
	o, err := r.start()
	if err != nil {
		return 0, err
	}
	defer o.j.close()
	if err := r.workload(o); err != nil {
		closeStore(o.s)
		return 0, err
	}
	return ExitOK, closeStore(o.s)
}

func (r *runner) workload(o *opened) error {
	switch r.a.op {
	case "append":
		return r.appendLoop(o)
	case "rotate":
		return r.rotateLoop(o)
	case "fork":
		return r.forkLoop(o)
	default:
		return r.deliverLoop(o)
	}
}

// fresh is a new store value, its Base (if it embeds one) filled in.
func (r *runner) fresh(op string) (Store, *Base) {
	s := r.newStore()
	e, ok := s.(embedsBase)
	if !ok {
		return s, nil
	}
	b := e.base()
	b.op, b.mutant, b.writer = op, r.a.one("mutant"), r.a.one("writer")
	return s, b
}

// open opens a new store on db for the operation.
func (r *runner) open(db string) (*opened, error) {
	s, b := r.fresh(r.a.op)
	o := &opened{s: s, base: b}
	err := guard("Open", func() (err error) { o.resolver, err = s.Open(db, r.config); return err })
	return o, err
}

func closeStore(s Store) error {
	if c, ok := s.(closer); ok {
		return guard("Close", c.Close)
	}
	return nil
}

// start opens the store, creates main where the operation writes to it,
// opens the ack journal and writes the ready record.
func (r *runner) start() (*opened, error) {
	o, err := r.open(r.a.one("db"))
	if err == nil && (r.a.op == "append" || r.a.op == "fork" || r.a.op == "co-append") {
		if c, ok := o.s.(SessionCreator); ok {
			err = guard("CreateSession", func() error { return c.CreateSession(appendSession) })
		}
	}
	if err == nil {
		o.j, err = openJournal(r.a.one("acks"))
	}
	if err == nil {
		err = r.ready(o)
	}
	if err != nil {
		closeStore(o.s)
		if o.j != nil {
			o.j.close()
		}
		return nil, err
	}
	return o, nil
}

func (r *runner) ready(o *opened) error {
	var j Journal
	if err := guard("Journal", func() (err error) { j, err = o.s.Journal(); return err }); err != nil {
		return err
	}
	fields, err := readyFields(j, o.resolver)
	if err != nil {
		return err
	}
	head := []field{{"kind", "ready"}, {"protocol", Protocol}, {"pid", os.Getpid()}, {"op", r.a.op}}
	return o.j.record(append(append(head, fields...), field{"operations", r.ops})...)
}

// acked calls one step of the workload, then writes its ack, unless the
// store wrote it already with AckNow (the ack-before-commit mutant).
func (o *opened) acked(method string, i int, call func() error, ack func() error) error {
	written := false
	write := func() error {
		if written {
			return nil
		}
		written = true
		return ack()
	}
	if o.base != nil {
		o.base.index = i
		o.base.ackNow = write
		defer func() { o.base.ackNow = nil }()
	}
	if err := guard(method, call); err != nil {
		return err
	}
	return write()
}

// dropsAppend is whether drop-append acks append i without writing it.
func dropsAppend(i int) bool { return i%dropEvery == dropFirst }

// stallsAt is whether stall blocks at append i, before writing or acking it.
func stallsAt(i int) bool { return i >= stallAfter }

func (r *runner) appendLoop(o *opened) error {
	mutant := r.a.one("mutant")
	return r.a.count(func(i int) error {
		if mutant == "stall" && stallsAt(i) {
			for {
				time.Sleep(time.Hour) // the driver's deadline ends it
			}
		}
		call := func() error { return o.s.Append(appendSession, "user", fmt.Sprintf("m%d", i)) }
		if mutant == "drop-append" && dropsAppend(i) {
			call = func() error { return nil } // acked, never written
		}
		return o.acked("Append", i, call, func() error { return o.j.ack("append", i) })
	})
}

// rotation is rotation k: its parent, its child, how many it carries, by
// the rule of docs/PROTOCOL.md `rotate` (with shapes, odd rotations rotate
// the last continuation again; rotations 1 and 2 of every four carry).
func rotation(k int, shapes bool) (parent, child string, carry int) {
	parent = fmt.Sprintf("p%d", k)
	if shapes && k%2 == 1 {
		parent = fmt.Sprintf("c%d", k-1)
	}
	if shapes && (k%4 == 1 || k%4 == 2) {
		carry = carried
	}
	return parent, fmt.Sprintf("c%d", k), carry
}

func (r *runner) rotateLoop(o *opened) error {
	rot := o.s.(Rotator)
	shapes := r.a.one("shapes") == "on"
	return r.a.count(func(k int) error {
		parent, child, carry := rotation(k, shapes)
		work := []Turn{{"user", fmt.Sprintf("work %d", k)}}
		if shapes {
			work = append(work, Turn{"assistant", fmt.Sprintf("reply %d", k)})
		}
		newParent := parent[0] == 'p'
		call := func() error { return rot.Rotate(parent, child, work, carry, newParent) }
		return o.acked("Rotate", k, call, func() error {
			more := []field{{"parent", parent}, {"child", child}}
			if shapes {
				more = append(more, field{"carried", carry})
			}
			return o.j.ack("rotate", k, more...)
		})
	})
}

func (r *runner) park() error {
	o, err := r.open(r.a.one("db"))
	if err == nil {
		err = guard("Park", func() error { return o.s.(Handoff).Park(r.a.one("session")) })
	}
	if err != nil {
		closeStore(o.s)
		return err
	}
	return closeStore(o.s)
}

// claim: the barrier opened, the store opened, the ready record written,
// then a shared flock(2) on the barrier, which blocks while the driver
// holds its exclusive lock and releases every claimant at once.
func (r *runner) claim() (int, error) {
	barrier, err := os.Open(r.a.one("barrier"))
	if err != nil {
		return 0, fmt.Errorf("the barrier: %w", err)
	}
	defer barrier.Close()
	o, err := r.start()
	if err != nil {
		return 0, err
	}
	defer o.j.close()
	if err := flockShared(int(barrier.Fd())); err != nil {
		closeStore(o.s)
		return 0, fmt.Errorf("the barrier's lock: %w", err)
	}
	var won bool
	call := func() (err error) {
		won, err = o.s.(Handoff).Claim(r.a.one("session"), r.a.one("claimant"))
		return err
	}
	if err := o.acked("Claim", 0, call, func() error { return o.j.ack("claim", 0) }); err != nil {
		closeStore(o.s)
		return 0, err
	}
	if err := closeStore(o.s); err != nil {
		return 0, err
	}
	if won {
		return ExitOK, nil
	}
	return ExitLost, nil
}

// coAppend is one of several writers on session main (docs/PROTOCOL.md
// §2, co-append): the barrier opened, the store opened (main made to
// exist: another writer may be making it at the same moment), the ready
// record written, then a shared flock(2) on the barrier, which blocks
// until the driver releases every writer at once; then the store's own
// Append of "<writer>-m<i>", each acked after it returned.
func (r *runner) coAppend() error {
	barrier, err := os.Open(r.a.one("barrier"))
	if err != nil {
		return fmt.Errorf("the barrier: %w", err)
	}
	defer barrier.Close()
	o, err := r.start()
	if err != nil {
		return err
	}
	defer o.j.close()
	if err := flockShared(int(barrier.Fd())); err != nil {
		closeStore(o.s)
		return fmt.Errorf("the barrier's lock: %w", err)
	}
	writer := r.a.one("writer")
	err = r.a.count(func(i int) error {
		call := func() error { return o.s.Append(appendSession, "user", fmt.Sprintf("%s-m%d", writer, i)) }
		return o.acked("Append", i, call, func() error { return o.j.ack("co-append", i) })
	})
	if err != nil {
		closeStore(o.s)
		return err
	}
	return closeStore(o.s)
}

func flockShared(fd int) error {
	for {
		err := syscall.Flock(fd, syscall.LOCK_SH)
		if err != syscall.EINTR {
			return err
		}
	}
}

// forkStep is operation i of a fork run on a live transcript of length
// messages: a rewind keeping k, or (rewind false) an append.
func forkStep(seed uint64, i, length int) (k int, rewind bool) {
	if i%forkEvery == forkEvery-1 && length >= 2 {
		return rewindKeep(seed, i, length), true
	}
	return 0, false
}

// rewindKeep is fork's rule: (seed + i) mod (length - 1), exact (no
// wrap-around at 2^64).
func rewindKeep(seed uint64, i, length int) int {
	m := uint64(length - 1)
	return int((seed%m + uint64(i)%m) % m)
}

func (r *runner) forkLoop(o *opened) error {
	f := o.s.(Forker)
	return r.a.count(func(i int) error {
		length, err := r.liveLength(o.s)
		if err != nil {
			return err
		}
		if k, rewind := forkStep(r.a.seed, i, length); rewind {
			call := func() error { return f.Rewind(appendSession, k, i) }
			return o.acked("Rewind", i, call, func() error { return o.j.ack("rewind", i, field{"k", k}) })
		}
		call := func() error { return o.s.Append(appendSession, "user", fmt.Sprintf("m%d", i)) }
		return o.acked("Append", i, call, func() error { return o.j.ack("append", i) })
	})
}

// liveLength is the length of main's live transcript before an operation:
// the store's LiveLength, else counted in its State. The rule counts what
// the store holds, not what this run meant to write.
func (r *runner) liveLength(s Store) (int, error) {
	if l, ok := s.(LiveLengther); ok {
		var n int
		err := guard("LiveLength", func() (err error) { n, err = l.LiveLength(appendSession); return err })
		return n, err
	}
	fresh, _ := r.fresh("dump")
	st, err := inspect(fresh, r.a.one("db"))
	if err != nil {
		return 0, err
	}
	n, err := st.liveLen(appendSession)
	if err != nil {
		return 0, ruleError{"State", err.Error()}
	}
	return n, nil
}
