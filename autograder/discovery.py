"""Find the notebook and the evidence files anywhere in an upload, never changing it."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from autograder.declaration import Assignment

#: Folders that hold copies made by tools, never the student's own work.
IGNORED_DIRS = frozenset({".ipynb_checkpoints", "__MACOSX", "__pycache__", ".git", ".venv", "node_modules"})
#: Largest file the grader will read; an upload bigger than this is not an evidence file.
MAX_FILE_BYTES = 20 * 1024 * 1024
#: Stop walking after this many entries so a hostile upload cannot stall discovery.
MAX_ENTRIES = 20_000

# "name (1).json", "name(2).json", "name - Copy.json", "Copy of name.json": what browsers,
# file managers and Drive do to a file downloaded or copied twice.
_DUPLICATE_SUFFIX = re.compile(r"(\s*\(\d+\)|\s+-\s+copy(\s*\(\d+\))?|\s+copy(\s*\d+)?)$", re.IGNORECASE)
_COPY_PREFIX = re.compile(r"^copy of\s+", re.IGNORECASE)


def canonical_name(filename: str) -> str:
    """The name a file had before a download or copy decorated it, lower-cased."""
    stem, dot, suffix = filename.rpartition(".")
    if not dot:
        stem, suffix = filename, ""
    stem = _COPY_PREFIX.sub("", stem.strip())
    stem = _DUPLICATE_SUFFIX.sub("", stem).strip()
    return f"{stem}.{suffix}".lower() if suffix else stem.lower()


@dataclass(frozen=True)
class Found:
    """Where one expected file was found, and which other candidates were passed over."""

    key: str
    filename: str
    path: Path | None
    ignored: tuple[Path, ...] = ()

    @property
    def present(self) -> bool:
        return self.path is not None


@dataclass(frozen=True)
class Upload:
    """Everything discovery learned about one upload."""

    root: Path
    notebook: Path | None
    other_notebooks: tuple[Path, ...]
    files: dict[str, Found]
    notes: tuple[str, ...] = field(default=())

    def missing(self) -> list[str]:
        names = [found.filename for found in self.files.values() if not found.present]
        if self.notebook is None:
            names.insert(0, "your notebook (.ipynb, or a .py export of it)")
        return names

    def relative(self, path: Path | None) -> str:
        if path is None:
            return "(not found)"
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.name


def walk(root: Path) -> list[Path]:
    """Regular files under root, skipping tool folders and symlinks, in a stable order."""
    files: list[Path] = []
    seen = 0
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.startswith("."))
        for name in sorted(names):
            seen += 1
            if seen > MAX_ENTRIES:
                return files
            path = Path(current) / name
            if path.is_file() and not path.is_symlink():
                files.append(path)
    return files


def _rank(path: Path, filename: str, root: Path) -> tuple[int, int, int, str]:
    """Smaller is better: exact name first, then the shallowest, then an undecorated copy."""
    exact = 0 if path.name == filename else 1 if path.name.lower() == filename.lower() else 2
    depth = len(path.relative_to(root).parts)
    return (exact, depth, len(path.name), path.as_posix())


def choose(candidates: Sequence[Path], filename: str, root: Path) -> tuple[Path | None, tuple[Path, ...]]:
    """Pick one file among copies, preferring one that is not empty."""
    usable = [p for p in candidates if 0 < p.stat().st_size <= MAX_FILE_BYTES] or list(candidates)
    ranked = sorted(usable, key=lambda p: _rank(p, filename, root))
    if not ranked:
        return None, ()
    chosen = ranked[0]
    return chosen, tuple(p for p in candidates if p != chosen)


def find_evidence(files: Iterable[Path], assignment: Assignment, root: Path) -> dict[str, Found]:
    by_name: dict[str, list[Path]] = {}
    for path in files:
        by_name.setdefault(canonical_name(path.name), []).append(path)
    found = {}
    for key, spec in assignment.files.items():
        chosen, ignored = choose(by_name.get(spec.filename.lower(), []), spec.filename, root)
        found[key] = Found(key, spec.filename, chosen, ignored)
    return found


def notebook_candidates(files: Iterable[Path], globs: Sequence[str], evidence: set[Path]) -> list[Path]:
    return [
        path
        for path in files
        if path not in evidence
        and any(fnmatch.fnmatch(path.name.lower(), pattern.lower()) for pattern in globs)
        and path.stat().st_size <= MAX_FILE_BYTES
    ]


def _defines_score(path: Path, names: Sequence[str]) -> int:
    """How many graded names the file appears to define: a cheap textual look, nothing run."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return sum(1 for name in names if re.search(rf"(def\s+{re.escape(name)}\b|\b{re.escape(name)}\s*=)", text))


def pick_notebook(candidates: Sequence[Path], names: Sequence[str], root: Path) -> Path | None:
    """The notebook that defines most graded names; a real .ipynb wins a tie over a .py export."""
    if not candidates:
        return None

    def key(path: Path) -> tuple[int, int, int, str]:
        return (-_defines_score(path, names), 0 if path.suffix == ".ipynb" else 1, len(path.relative_to(root).parts), path.as_posix())

    return sorted(candidates, key=key)[0]


def discover(root: Path, assignment: Assignment) -> Upload:
    """Find what the assignment needs under root. Reads, never writes."""
    files = walk(root)
    evidence = find_evidence(files, assignment, root)
    taken = {found.path for found in evidence.values() if found.path} | {
        path for found in evidence.values() for path in found.ignored
    }
    candidates = notebook_candidates(files, assignment.submission.notebook_globs, taken)
    notebook = pick_notebook(candidates, assignment.submission.names, root)
    upload = Upload(
        root=root,
        notebook=notebook,
        other_notebooks=tuple(p for p in candidates if p != notebook),
        files=evidence,
    )
    return _with_notes(upload)


def _with_notes(upload: Upload) -> Upload:
    notes = []
    for found in upload.files.values():
        if found.ignored:
            others = ", ".join(upload.relative(p) for p in found.ignored)
            notes.append(f"Several copies of {found.filename}: graded {upload.relative(found.path)}, ignored {others}.")
    if upload.notebook and upload.other_notebooks:
        others = ", ".join(upload.relative(p) for p in upload.other_notebooks[:5])
        notes.append(f"Graded the notebook {upload.relative(upload.notebook)}; also found {others}.")
    return Upload(upload.root, upload.notebook, upload.other_notebooks, upload.files, tuple(notes))
