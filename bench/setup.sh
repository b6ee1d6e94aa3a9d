#!/usr/bin/env bash
# Creates .venv-bench with Fairway (editable) and the peer workers the benchmarks compare against.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-bench/bin/python ]; then python3 -m venv .venv-bench; fi
.venv-bench/bin/python -m pip install -q --disable-pip-version-check -e . -r bench/requirements.txt
.venv-bench/bin/python -m pip install -q --disable-pip-version-check --no-deps arq
echo "bench environment ready: .venv-bench/bin/python bench/<benchmark>.py"
