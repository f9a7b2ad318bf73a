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

# The unprivileged users student code runs as (SECURITY.md): no home, no shell, no login.
# One per sandbox running at a time, so killing every process of a user never reaches another
# sandbox; Gradescope grades one upload per container and needs only the first.
if [ "$(id -u)" = 0 ]; then
    for slot in "" 1 2 3 4 5 6 7; do
        user="autograder-student${slot:+-$slot}"
        id -u "$user" >/dev/null 2>&1 && continue
        if command -v useradd >/dev/null; then
            useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
        else
            adduser --system --group --no-create-home --home /nonexistent --shell /usr/sbin/nologin --disabled-login "$user"
        fi
    done
    # Where the grader cannot build a private root for student code, file permissions are the
    # barrier: nobody but root reads the hidden suites, schemas, config or example uploads.
    chmod o-rwx . grading_tests schemas
fi

.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
echo "setup.sh: ready; run .venv/bin/autograder --help"
