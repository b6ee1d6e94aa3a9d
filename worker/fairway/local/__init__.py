"""Local tooling: `fairway up` (a supervisor's pools as local processes), a private Redis, the demo."""
