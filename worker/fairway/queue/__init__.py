"""The queue: everything between a producer and a handler, in three layers (an import-linter contract
keeps each importing only those below it):

- `protocol`: the wire contract, pure but for running scripts: job documents and their limits,
  the key table, each Lua script's KEYS/ARGV and the scripts themselves, the weighted draw, the job
  context a handler sees.
- `access`: the producer, admin and read side: writing jobs, pausing, retrying failed jobs, and the
  figures people and the balancer read.
- `runtime`: the worker: fetching, running, settling, housekeeping, stopping.

`connection` (connecting, and which errors are outages) sits below all three.
"""
