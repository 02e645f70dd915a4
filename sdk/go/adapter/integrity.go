package adapter

// State's integrity field (docs/PROTOCOL.md §4): the rows of PRAGMA
// integrity_check joined with "; ". The library opens no database itself
// (the store brings its driver), so it offers the query through
// database/sql, which every Go SQLite driver serves.

import (
	"database/sql"
	"strings"
)

// Querier is a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	Query(query string, args ...interface{}) (*sql.Rows, error)
}

// IntegrityCheck runs PRAGMA integrity_check on q and joins its rows with
// "; " ("ok" for a healthy file).
func IntegrityCheck(q Querier) (string, error) {
	rows, err := q.Query("PRAGMA integrity_check")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		out = append(out, line)
	}
	return strings.Join(out, "; "), rows.Err()
}
