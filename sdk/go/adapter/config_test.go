package adapter

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseConfig(t *testing.T) {
	c, err := parseConfig("# the leg\n[database]\njournal_mode = \"WAL\"  # asked\nsynchronous = 'full'\n")
	if err != nil || c != (Config{JournalMode: "wal", Synchronous: "full"}) {
		t.Fatalf("got %+v, %v", c, err)
	}
	if c, err := parseConfig(""); err != nil || c != (Config{}) {
		t.Fatalf("an empty file: %+v, %v", c, err)
	}
	for text, want := range map[string]string{
		"[database]\njournal_mode = \"wall\"\n": "unknown journal_mode `wall`",
		"[database]\nsync = \"full\"\n":         "unknown key `sync`",
		"[db]\n":                                "unknown table `db`",
		"journal_mode = \"wal\"\n":              "outside [database]",
		"[database]\njournal_mode = wal\n":      "must be a string",
		"[database]\njournal_mode\n":            "cannot read line",
	} {
		if _, err := parseConfig(text); err == nil || !contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
}

func TestReadConfigFromTheHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CRASHCELLS_HOME", home)
	if c, err := readConfig(); err != nil || c != (Config{}) {
		t.Fatalf("no file: %+v, %v", c, err)
	}
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[database]\nsynchronous = \"extra\"\n"), 0o644)
	if c, err := readConfig(); err != nil || c.Synchronous != "extra" {
		t.Fatalf("got %+v, %v", c, err)
	}
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[database]\njournal_mode = \"wall\"\n"), 0o644)
	if _, err := readConfig(); err == nil || !contains(err.Error(), "config.toml") {
		t.Fatalf("a bad value must be refused naming the file: %v", err)
	}
}

func TestResolveGatesWALOnAffectedSQLite(t *testing.T) {
	for _, c := range []struct {
		version, asked, applied, by string
	}{
		{"3.40.1", "", "delete", "wal-reset-gate"},
		{"3.40.1", "truncate", "truncate", "config"},
		{"3.51.3", "", "wal", "default"},
		{"3.44.6", "wal", "wal", "config"},
		{"3.6.23", "wal", "wal", "config"},
	} {
		r := Resolve(Config{JournalMode: c.asked}, c.version, filepath.Join(t.TempDir(), "none.db"))
		if r.Applied != c.applied || r.DecidedBy != c.by || r.Reason == "" {
			t.Errorf("%s asking %q: got %+v, want %s by %s", c.version, c.asked, r, c.applied, c.by)
		}
	}
}
