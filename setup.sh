#!/usr/bin/env bash
# Set up the grader in .venv with the pinned dependencies from pyproject.toml.
# The same script serves a laptop, CI and Gradescope (where it runs as root in /autograder/source).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup.sh: $PYTHON is $("$PYTHON" --version 2>&1); the grader needs Python 3.11 or newer (set PYTHON=...)" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    if ! "$PYTHON" -m venv .venv 2>/dev/null; then
        # Debian and Ubuntu images (Gradescope's among them) ship Python without venv.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
            rm -rf .venv && "$PYTHON" -m venv .venv
        else
            echo "setup.sh: '$PYTHON -m venv' failed; install the venv module (e.g. apt-get install python3-venv)" >&2
            exit 1
        fi
    fi
fi

.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
echo "setup.sh: ready; run .venv/bin/autograder --help"
