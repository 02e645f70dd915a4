package adapter

// `deliver` and `catch-up` (docs/PROTOCOL.md §2): each step of an
// obligation is its own transaction, and the send (one line on the
// transport, one write(2)) sits between attempting and delivered, where a
// kill leaves the provider holding an obligation the store does not know
// arrived. Catch-up asks the transport before it resends one left
// attempting, so nothing is ever sent twice (but by the
// resend-on-catch-up mutant, for a store that names it).

import "fmt"

const (
	recorded   = "recorded"
	attempting = "attempting"
)

func (r *runner) deliverLoop(o *opened) error {
	out := o.s.(Outbox)
	transport := r.a.one("transport")
	return r.a.count(func(n int) error {
		key := fmt.Sprintf("o%d", n)
		payload := "effect of " + key
		steps := []func() error{
			func() error { return guard("Record", func() error { return out.Record(key, payload) }) },
			func() error { return guard("Attempting", func() error { return out.Attempting(key) }) },
			func() error { return send(transport, key, payload) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		call := func() error { return out.Delivered(key) }
		return o.acked("Delivered", n, call, func() error { return o.j.ack("deliver", n, field{"key", key}) })
	})
}

// catchUp finishes each store's obligations through its own transport, in
// order, each store opened and closed before the next.
func (r *runner) catchUp() error {
	dbs, transports := r.a.flags["db"], r.a.flags["transport"]
	ask := r.a.one("mutant") != "resend-on-catch-up"
	for i := range dbs {
		if err := r.catchUpOne(dbs[i], transports[i], ask); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) catchUpOne(db, transport string, ask bool) error {
	o, err := r.open(db)
	if err == nil {
		err = finish(o.s.(Outbox), transport, ask)
	}
	if err != nil {
		closeStore(o.s)
		return err
	}
	return closeStore(o.s)
}

func finish(out Outbox, transport string, ask bool) error {
	there, err := arrived(transport)
	if err != nil {
		return err
	}
	var pending []Obligation
	if err := guard("Pending", func() (err error) { pending, err = out.Pending(); return err }); err != nil {
		return err
	}
	for _, o := range pending {
		switch o.State {
		case recorded:
			if err := guard("Attempting", func() error { return out.Attempting(o.Key) }); err != nil {
				return err
			}
		case attempting:
		default:
			return ruleError{"Pending", fmt.Sprintf("listed obligation %q as %q: it lists only recorded or attempting ones (rule: sdk/API.md)", o.Key, o.State)}
		}
		// One left attempting may have reached the provider: send it only
		// if the transport does not hold its key.
		if !(ask && o.State == attempting && there[o.Key]) {
			if err := send(transport, o.Key, o.Payload); err != nil {
				return err
			}
		}
		if err := guard("Delivered", func() error { return out.Delivered(o.Key) }); err != nil {
			return err
		}
	}
	return nil
}
