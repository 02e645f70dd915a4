"""crashcells for Python: the adapter library (`crashcells.adapter`), the fork
server and warm process (`crashcells.forkserver`) and the pytest plugin
(`crashcells.pytest_plugin`) of the crashcells child protocol
(docs/PROTOCOL.md). Standard library only, Python 3.9+."""
