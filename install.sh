#!/usr/bin/env bash
# Quick start, step 1: install everything isobench needs, then run the quick
# study and print its report (also written to results/RUN_ID.md).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/isobench run studies/quick.toml
