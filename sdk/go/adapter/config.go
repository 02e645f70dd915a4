package adapter

// The config home (docs/PROTOCOL.md §5): $CRASHCELLS_HOME/config.toml, a
// `[database]` table with `journal_mode` and `synchronous`. Anything else is
// refused before the ready record: a leg that ran in another mode than it
// asked would count as evidence for the wrong one.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

var journalModes = []string{"delete", "truncate", "persist", "memory", "wal", "off"}
var syncLevels = []string{"off", "normal", "full", "extra"}

// readConfig reads the config home named by $CRASHCELLS_HOME; no variable,
// no file or no key is "not asked".
func readConfig() (Config, error) {
	home, ok := os.LookupEnv("CRASHCELLS_HOME")
	if !ok {
		return Config{}, nil
	}
	if st, err := os.Stat(home); err == nil && !st.IsDir() {
		return Config{}, fmt.Errorf("%s: CRASHCELLS_HOME is not a folder", home)
	}
	path := filepath.Join(home, "config.toml")
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, err
	}
	c, err := parseConfig(string(text))
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// parseConfig reads the flat TOML the driver writes: tables, `key = "value"`
// lines and comments. A line it cannot read is an error, not a guess.
func parseConfig(text string) (Config, error) {
	var c Config
	table := ""
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(stripComment(raw))
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			table = strings.TrimSpace(line[1 : len(line)-1])
			if table != "database" {
				return c, fmt.Errorf("unknown table `%s`", table)
			}
			continue
		}
		key, value, err := keyValue(line)
		if err != nil {
			return c, err
		}
		if table != "database" {
			return c, fmt.Errorf("unknown key `%s` outside [database]", key)
		}
		switch key {
		case "journal_mode":
			c.JournalMode, err = known(value, journalModes, key)
		case "synchronous":
			c.Synchronous, err = known(value, syncLevels, key)
		default:
			err = fmt.Errorf("unknown key `%s` in [database]", key)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

func stripComment(line string) string {
	inString := false
	for i, r := range line {
		switch {
		case r == '"' || r == '\'':
			inString = !inString
		case r == '#' && !inString:
			return line[:i]
		}
	}
	return line
}

func keyValue(line string) (string, string, error) {
	eq := strings.IndexByte(line, '=')
	if eq < 0 {
		return "", "", fmt.Errorf("cannot read line `%s`", line)
	}
	key := strings.Trim(strings.TrimSpace(line[:eq]), `"`)
	value := strings.TrimSpace(line[eq+1:])
	if len(value) < 2 || (value[0] != '"' && value[0] != '\'') || value[len(value)-1] != value[0] {
		return "", "", fmt.Errorf("cannot read line `%s`: the value must be a string", line)
	}
	return key, value[1 : len(value)-1], nil
}

func known(value string, set []string, what string) (string, error) {
	v := strings.ToLower(value)
	if !oneOf(v, set) {
		return "", fmt.Errorf("unknown %s `%s` (expected one of %s)", what, value, strings.Join(set, "|"))
	}
	return v, nil
}
