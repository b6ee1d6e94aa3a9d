"""The queue runtime: job documents, Redis keys and Lua scripts, the producer, the worker loop.

Redis I/O lives in `producer`, `fetch`, `inspector` and `admin` (all through `scripts` and
`connection`); `job`, `keys`, `calls`, `scheduling` and `figures` are pure.
"""
