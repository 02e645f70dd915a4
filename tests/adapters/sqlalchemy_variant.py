"""A variant of the SQLAlchemy example store (examples/sqlalchemy-store/store.py)
for tests/sqlalchemy.rs: the store as an author first writes it, without
`store_errors`. SQLAlchemy then raises classes the library was not told
about; the library must still name a failure of SQLite under them as the
store's (exit 3), from the error they were raised from, and not as the
adapter's mistake (exit 2).

  PYTHON sqlalchemy_variant.py no-store-errors <op> [flags]

PYTHON is an interpreter with SQLAlchemy, as for the store.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "sqlalchemy_store", os.path.join(HERE, "..", "..", "examples", "sqlalchemy-store", "store.py")
)
store = importlib.util.module_from_spec(spec)
sys.modules["sqlalchemy_store"] = store
spec.loader.exec_module(store)


class WithoutStoreErrors(store.SqlAlchemyStore):
    # The library's default: sqlite3's and the OS's errors, not SQLAlchemy's.
    store_errors = store.adapter.Store.store_errors


VARIANTS = {"no-store-errors": WithoutStoreErrors}

if __name__ == "__main__":
    variant = sys.argv.pop(1) if len(sys.argv) > 1 else None
    if variant not in VARIANTS:
        print("sqlalchemy_variant.py: unknown variant %r (one of %s)" % (variant, ", ".join(VARIANTS)), file=sys.stderr)
        sys.exit(2)
    store.adapter.run(VARIANTS[variant])
