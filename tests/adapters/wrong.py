"""Children that do not speak the protocol, for the tests of the driver's
refusal. The first argument says how this one is wrong:

- `version`: a well-formed ready record that says protocol 3 (a version the driver does not speak);
- `stdout`: prints garbage on stdout and writes no journal at all;
- `journal`: writes a line of garbage where the ready record belongs.
"""

import json, os, sys

how, argv = sys.argv[1], sys.argv[2:]
flags = {argv[i][2:]: argv[i + 1] for i in range(1, len(argv) - 1, 2)}
if how == "stdout":
    print("hello from a store that never heard of crashcells")
    sys.exit(0)
if "acks" in flags:
    with open(flags["acks"], "a") as f:
        if how == "version":
            f.write(json.dumps({"kind": "ready", "protocol": 3, "pid": os.getpid(), "op": argv[0], "sqlite_version": "3.99.0", "journal_mode": "wal"}) + "\n")
        else:
            f.write("READY!!\n")
