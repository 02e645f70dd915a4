module crashcells/examples/go-store

go 1.19

require (
	crashcells/sdk/go v0.0.0
	github.com/mattn/go-sqlite3 v1.14.16
)

// Built offline: the adapter library from this repository, and Debian's
// packaged SQLite driver (golang-github-mattn-go-sqlite3-dev), which links
// the system's libsqlite3. See ./build.
replace crashcells/sdk/go => ../../sdk/go

replace github.com/mattn/go-sqlite3 => /usr/share/gocode/src/github.com/mattn/go-sqlite3
