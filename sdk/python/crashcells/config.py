"""The config home (docs/PROTOCOL.md §5) and the reference resolver.

The driver writes `$CRASHCELLS_HOME/config.toml` per matrix leg. A value the
store cannot honour is an error before the ready record, never a silent
fallback: a leg that ran in another mode would count as evidence for the
wrong one.
"""

import collections
import os

JOURNAL_MODES = ("delete", "truncate", "persist", "memory", "wal", "off")
SYNC_LEVELS = ("off", "normal", "full", "extra")
DECIDERS = ("config", "default", "wal-reset-gate", "already-wal", "store")

# What the config home asks for: each a lowercase name, or None for "your default".
Config = collections.namedtuple("Config", "journal_mode synchronous")


class ConfigError(Exception):
    """A config home the store cannot honour: exit 2 before any ready record."""


def read_config(environ=None):
    """The Config of $CRASHCELLS_HOME; no variable or no file is the default."""
    home = (os.environ if environ is None else environ).get("CRASHCELLS_HOME")
    if home is None:
        return Config(None, None)
    if os.path.exists(home) and not os.path.isdir(home):
        raise ConfigError("%s: CRASHCELLS_HOME is not a folder" % home)
    path = os.path.join(home, "config.toml")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return Config(None, None)
    try:
        return parse_config(text)
    except ConfigError as e:
        raise ConfigError("config %s: %s" % (path, e))


def parse_config(text):
    """The `[database]` table of config.toml: tomllib where there is one
    (Python 3.11+), else a reader for the flat `key = "value"` lines the
    driver writes."""
    try:
        import tomllib
    except ImportError:
        data = parse_flat_toml(text)
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(str(e))
    unknown = set(data) - {"database"}
    if unknown:
        raise ConfigError("unknown table or key `%s`" % sorted(unknown)[0])
    db = data.get("database", {})
    if not isinstance(db, dict):
        raise ConfigError("`database` is not a table")
    unknown = set(db) - {"journal_mode", "synchronous"}
    if unknown:
        raise ConfigError("unknown key `%s` in [database]" % sorted(unknown)[0])
    return Config(
        check_value(db.get("journal_mode"), JOURNAL_MODES, "journal_mode"),
        check_value(db.get("synchronous"), SYNC_LEVELS, "synchronous"),
    )


def parse_flat_toml(text):
    data = {}
    table = data
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            table = data.setdefault(line[1:-1].strip(), {})
            continue
        key, sep, value = line.partition("=")
        value = value.strip()
        if not sep or len(value) < 2 or value[0] != '"' or value[-1] != '"':
            raise ConfigError("cannot read line `%s`" % raw)
        table[key.strip()] = value[1:-1]
    return data


def check_value(value, known, what):
    if value is None:
        return None
    if not isinstance(value, str) or value.lower() not in known:
        raise ConfigError("unknown %s `%s` (expected one of %s)" % (what, value, "|".join(known)))
    return value.lower()


def wal_reset_affected(version):
    """The WAL-reset bug: 3.7.0 <= v < 3.51.3, except the backports
    3.44.6 <= v < 3.45.0 and 3.50.7 <= v < 3.51.0."""

    def within(lo, hi):
        return lo <= version < hi

    return (
        within((3, 7, 0), (3, 51, 3))
        and not within((3, 44, 6), (3, 45, 0))
        and not within((3, 50, 7), (3, 51, 0))
    )


def header_is_wal(path):
    """Bytes 18 and 19 of the database header say 2 in WAL."""
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2 and header[19] == 2


def resolve(config, db, sqlite_version, default="wal"):
    """The reference resolver (the reference store's): the journal mode to
    apply for `config` on the file `db`, and why, as the ready record's
    `resolver`. WAL is refused on a SQLite with the WAL-reset bug unless the
    file is already in WAL."""
    version = tuple(int(p) for p in sqlite_version.split(".")[:3])
    wanted = config.journal_mode or default
    if wanted == "wal" and wal_reset_affected(version):
        if header_is_wal(db):
            applied, by = "wal", "already-wal"
            why = "SQLite %s has the WAL-reset bug, but the file is already in WAL and stays WAL" % sqlite_version
        else:
            applied, by = "delete", "wal-reset-gate"
            why = (
                "WAL-reset gate: SQLite %s is affected (3.7.0 <= v < 3.51.3 without the "
                "3.44.6/3.50.7 backports), so WAL is refused and DELETE applied" % sqlite_version
            )
    elif config.journal_mode is not None:
        applied, by, why = wanted, "config", "config asked for %s" % wanted
    else:
        applied, by, why = wanted, "default", "nothing asked; resolver default %s" % wanted
    return {
        "requested": config.journal_mode,
        "applied": applied,
        "synchronous": config.synchronous,
        "decided_by": by,
        "reason": why,
    }
