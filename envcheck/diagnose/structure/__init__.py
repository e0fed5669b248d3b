"""The log's structure, not only its lines: tracebacks, faulthandler dumps, launcher summaries, compiler/linker
output, NCCL and NVRM/Xid lines, installer and version-check errors, read from the scan's excerpt into typed
Events with line numbers (see `events.analyse`)."""
