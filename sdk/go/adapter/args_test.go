package adapter

import "testing"

func TestParseArgsRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{nil, "no operation"},
		{[]string{"appendd"}, "unknown operation"},
		{[]string{"append", "--db=x", "--acks", "a"}, "does not take `--db=x`"},
		{[]string{"append", "--acks", "a"}, "needs `--db`"},
		{[]string{"append", "--db", "x", "--acks"}, "needs a value"},
		{[]string{"append", "--db", "x", "--db", "y", "--acks", "a"}, "given twice"},
		{[]string{"append", "--db", "x", "--acks", "a", "--stop-after", "-1"}, "not a count"},
		{[]string{"fork", "--db", "x", "--acks", "a", "--seed", "-3"}, "not an unsigned"},
		{[]string{"rotate", "--db", "x", "--acks", "a", "--shapes", "off"}, "the only value is `on`"},
		{[]string{"park", "--db", "x", "--session", "h", "--mutant", "m"}, "does not take `--mutant`"},
		{[]string{"catch-up", "--db", "x", "--db", "y", "--transport", "t"}, "come in pairs"},
		{[]string{"co-append", "--db", "x", "--acks", "a", "--barrier", "b"}, "needs `--writer`"},
		{[]string{"co-append", "--db", "x", "--acks", "a", "--writer", "r0"}, "needs `--barrier`"},
		{[]string{"co-append", "--db", "x", "--acks", "a", "--writer", "", "--barrier", "b"}, "`--writer` needs a name"},
		{[]string{"append", "--db", "x", "--acks", "a", "--writer", "r0"}, "does not take `--writer`"},
	} {
		_, err := parseArgs(c.argv)
		if _, usage := err.(usageError); !usage || !contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error saying %q", c.argv, err, c.want)
		}
	}
}

func TestParseArgsTakesBatchesAndAnyOrder(t *testing.T) {
	a, err := parseArgs([]string{"dump", "--db", "a", "--db", "b"})
	if err != nil || len(a.flags["db"]) != 2 {
		t.Fatalf("got %+v, %v", a, err)
	}
	a, err = parseArgs([]string{"fork", "--seed", "18446744073709551615", "--acks", "a", "--stop-after", "0", "--db", "x"})
	if err != nil || a.seed != 1<<64-1 || a.stop != 0 {
		t.Fatalf("got %+v, %v", a, err)
	}
}

func TestRotationShapesByTheRule(t *testing.T) {
	// docs/PROTOCOL.md `rotate`: p0 → c0, c0 → c1 (2), p2 → c2 (2), c2 → c3.
	want := [][3]interface{}{{"p0", "c0", 0}, {"c0", "c1", 2}, {"p2", "c2", 2}, {"c2", "c3", 0}, {"p4", "c4", 0}}
	for k, w := range want {
		p, c, n := rotation(k, true)
		if p != w[0] || c != w[1] || n != w[2] {
			t.Errorf("rotation %d: got %s → %s (%d), want %v", k, p, c, n, w)
		}
	}
	if p, c, n := rotation(1, false); p != "p1" || c != "c1" || n != 0 {
		t.Errorf("without shapes: got %s → %s (%d)", p, c, n)
	}
}

func TestRewindKeepIsExactPast64Bits(t *testing.T) {
	// PROTOCOL.md's example: seed 8, operation 3 of 3 messages keeps 1; 7 of 4 keeps 0.
	if k := rewindKeep(8, 3, 3); k != 1 {
		t.Fatalf("got %d, want 1", k)
	}
	if k := rewindKeep(8, 7, 4); k != 0 {
		t.Fatalf("got %d, want 0", k)
	}
	// (2^64 - 1 + 3) mod 4 = (2^64 + 2) mod 4 = 2; a wrapped sum would give 1.
	if k := rewindKeep(1<<64-1, 3, 5); k != 2 {
		t.Fatalf("got %d, want 2", k)
	}
}
