"""The implementation process protocol, version 1 (`process`; docs/implementation-protocol.md).

An implementation in any language, as a child process speaking JSON lines over stdin/stdout, many requests in
flight. A room of its own so the wire format has one owner, below the runners: a plug-in (the journal's
`exec`) speaks it without them.
"""
