"""tiny.py, the protocol-1 child written from docs/PROTOCOL.md alone, without
`rotate`: version 1 has no `operations` list to leave it out of, so the child
answers `rotate` with the protocol's "unsupported operation" exit code, 69
(docs/PROTOCOL.md §2), before it writes anything."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny  # noqa: E402  (beside this file)

UNSUPPORTED = 69

if __name__ == "__main__":
    if sys.argv[1] == "rotate":
        print("tiny: rotate is not implemented here", file=sys.stderr)
        sys.exit(UNSUPPORTED)
    sys.exit(tiny.main(sys.argv[1], tiny.flags(sys.argv[2:])))
