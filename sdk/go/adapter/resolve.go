package adapter

// The reference resolver (docs/PROTOCOL.md §5), for a store whose journal
// policy it is (a store with none applies the config and says
// DecidedBy "config"): WAL by default, the config's mode when asked, and WAL refused
// on a SQLite with the WAL-reset bug (3.7.0 <= v < 3.51.3, but the
// backports 3.44.6 <= v < 3.45.0 and 3.50.7 <= v < 3.51.0), DELETE applied
// instead, unless the file is already in WAL.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Resolve decides the journal mode for config on the SQLite of version
// sqliteVersion, the database file at db.
func Resolve(config Config, sqliteVersion, db string) Resolver {
	r := Resolver{Requested: config.JournalMode, Synchronous: config.Synchronous}
	wanted := config.JournalMode
	if wanted == "" {
		wanted = "wal"
	}
	switch {
	case wanted == "wal" && walResetAffected(sqliteVersion) && headerIsWAL(db):
		r.Applied, r.DecidedBy = "wal", "already-wal"
		r.Reason = fmt.Sprintf("SQLite %s has the WAL-reset bug, but the file is already in WAL and stays WAL", sqliteVersion)
	case wanted == "wal" && walResetAffected(sqliteVersion):
		r.Applied, r.DecidedBy = "delete", "wal-reset-gate"
		r.Reason = fmt.Sprintf("WAL-reset gate: SQLite %s is affected (3.7.0 <= v < 3.51.3 without the 3.44.6/3.50.7 backports), so WAL is refused and DELETE applied", sqliteVersion)
	case config.JournalMode != "":
		r.Applied, r.DecidedBy, r.Reason = wanted, "config", "config asked for "+wanted
	default:
		r.Applied, r.DecidedBy, r.Reason = wanted, "default", "nothing asked; resolver default "+wanted
	}
	return r
}

func walResetAffected(version string) bool {
	v := versionNumber(version)
	within := func(lo, hi int) bool { return lo <= v && v < hi }
	return within(3007000, 3051003) && !within(3044006, 3045000) && !within(3050007, 3051000)
}

// versionNumber is "3.40.1" as 3040001, as SQLITE_VERSION_NUMBER is.
func versionNumber(version string) int {
	n := 0
	parts := strings.SplitN(version, ".", 4)
	for i := 0; i < 3; i++ {
		p := 0
		if i < len(parts) {
			p, _ = strconv.Atoi(parts[i])
		}
		n = n*1000 + p
	}
	return n
}

// headerIsWAL: bytes 18 and 19 of the database header are 2 in WAL.
func headerIsWAL(db string) bool {
	f, err := os.Open(db)
	if err != nil {
		return false
	}
	defer f.Close()
	h := make([]byte, 20)
	n, _ := f.Read(h)
	return n == 20 && h[18] == 2 && h[19] == 2
}
