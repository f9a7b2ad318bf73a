"""Confine student processes: an unprivileged user, resource limits, namespaces, and kill-everything."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import math
import os
import platform
import pwd
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["Confinement", "Limits", "Machine", "machine"]

DEDICATED_USER = "autograder-student"
"""The user setup.sh creates; `autograder-student-1` … are extra slots for parallel grading."""
FALLBACK_USER = "nobody"
EXTRA_SLOTS = 16
LOCK_DIR = Path("/run/autograder-sandbox")
"""Root-only folder of per-user lock files: one sandbox per user at a time, so killing every
process of that user never touches another sandbox."""
CAPTURE_FILES = ("worker-output.txt", "call-stdout.txt", "call-stderr.txt")
"""The only files the student may write in its folder (the worker's output captures)."""
STRAY_CHECK_INTERVAL = 0.25
"""Seconds between checks for processes a call left behind (a /proc scan costs a few ms)."""
KILL_PATIENCE = 5.0

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Resource limits of every student process; soft and hard alike, so student code cannot raise them.

    Sized for a 2-core, 24 GB CI machine: `processes` × `address_space` = 16 GiB at worst.
    """

    cpu_seconds: int
    """CPU seconds per process: the load and the whole time budget, plus a margin."""
    address_space: int = 512 * MiB
    """Virtual memory per process; MemoryError beyond it."""
    processes: int = 32
    """Processes and threads of the sandbox user at once; a fork bomb stops here."""
    file_size: int = 16 * MiB
    """Largest file a student process may write (output captures included)."""
    open_files: int = 64
    core_size: int = 0
    """No core dumps."""
    nice: int = 19
    """Scheduling priority: runaway student processes yield the CPU to the grader."""

    @classmethod
    def for_budget(cls, load_timeout: float, total_seconds: float) -> Limits:
        return cls(cpu_seconds=math.ceil(load_timeout + total_seconds) + 10)

    def table(self) -> list[tuple[int, int]]:
        return [
            (resource.RLIMIT_CPU, self.cpu_seconds),
            (resource.RLIMIT_AS, self.address_space),
            (resource.RLIMIT_FSIZE, self.file_size),
            (resource.RLIMIT_NOFILE, self.open_files),
            (resource.RLIMIT_CORE, self.core_size),
        ]

    def report(self, processes: int | None) -> dict[str, int | None]:
        return {
            "cpu_seconds": self.cpu_seconds,
            "address_space_bytes": self.address_space,
            "processes": processes,
            "file_size_bytes": self.file_size,
            "open_files": self.open_files,
            "core_dump_bytes": self.core_size,
            "nice": self.nice,
        }


# --- system calls the standard library lacks (Python 3.11 has no os.unshare) ---------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217, "i686": 217}
NAMESPACES = {"mount": CLONE_NEWNS, "network": CLONE_NEWNET, "ipc": CLONE_NEWIPC, "uts": CLONE_NEWUTS}


def _check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_bytes(source), target.encode(), _bytes(kind), flags, _bytes(data)), f"mount {target}")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl {option}")


# --- the sandbox user -----------------------------------------------------------------------


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int

    @property
    def dedicated(self) -> bool:
        return self.name.startswith(DEDICATED_USER)


def _users() -> list[User]:
    """The dedicated users setup.sh made, in slot order; `nobody` when there are none."""
    names = [DEDICATED_USER] + [f"{DEDICATED_USER}-{n}" for n in range(1, EXTRA_SLOTS)]
    found = []
    for name in names:
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            if entry.pw_uid != 0:
                found.append(User(name, entry.pw_uid, entry.pw_gid))
    if not found:
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(FALLBACK_USER)
            found.append(User(FALLBACK_USER, entry.pw_uid, entry.pw_gid))
    return found


def _can(path: Path, user: User, bits: tuple[int, int, int]) -> bool:
    """Whether `user` (no supplementary groups) has a permission on `path`, from its mode bits."""
    try:
        info = path.stat()
    except OSError:
        return False
    owner, group, other = bits
    if info.st_uid == user.uid:
        return bool(info.st_mode & owner)
    if info.st_gid == user.gid:
        return bool(info.st_mode & group)
    return bool(info.st_mode & other)


_EXECUTE = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)
_READ = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)


def reachable(path: Path, user: User) -> bool:
    """Every folder above `path` can be traversed by `user`."""
    return all(_can(parent, user, _EXECUTE) for parent in path.parents)


def _python_for(user: User) -> str | None:
    """An interpreter of the grader's major.minor that `user` can run; the worker is stdlib-only."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [Path(os.path.realpath(sys.executable))]
    candidates += [Path(folder) / version for folder in ("/usr/local/bin", "/usr/bin", "/bin")]
    for candidate in candidates:
        real = Path(os.path.realpath(candidate))
        if real.name.startswith(version) and reachable(real, user) and _can(real, user, _EXECUTE):
            return str(real)
    return None


# --- what this machine allows, found out once per process -----------------------------------


@dataclass(frozen=True)
class Machine:
    """What isolation this process can set up; probed once."""

    root: bool
    users: tuple[User, ...] = ()
    python: str = sys.executable
    namespaces: tuple[str, ...] = ()
    private_root: bool = False
    """A fresh root file system (pivot_root) holding only /usr, /etc, a few devices, /proc, /tmp."""
    proc_option: str = ""
    seccomp: bool = False
    """A system-call filter refuses new namespaces, ptrace, bpf, io_uring, mounts, keyrings…"""
    problems: tuple[str, ...] = ()
    """Why some isolation is missing, for the instructor."""


_LEVELS: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("mount", "network", "ipc", "uts"), True),
    (("network", "ipc", "uts"), False),
    (("network",), False),
    ((), False),
)
"""Namespaces to try, strongest first, and whether to pivot into a private root with them."""


@functools.cache
def machine() -> Machine:
    """Probe once: are we root, which users exist, which namespaces, mounts and filters work."""
    if os.geteuid() != 0:
        return Machine(False, problems=("the grader does not run as root, so student code runs as the grader's own user",))
    users = tuple(_users())
    if not users:
        return Machine(True, problems=(f"neither {DEDICATED_USER} nor {FALLBACK_USER} exists",))
    python = _python_for(users[0])
    if python is None:
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        return Machine(True, users, problems=(f"no {version} that {users[0].name} can run (install one under /usr/bin)",))
    _become_subreaper()
    # Probed as a user whose slot we hold: another sandbox's kill-everything cannot hit the probe.
    user, lock = _lock_a_user(users)
    try:
        return _strongest(Machine(True, users, python), user)
    finally:
        _unlock(user, lock)


def _strongest(base: Machine, user: User) -> Machine:
    """The strongest confinement that starts an interpreter here, and what it lacks."""
    first_error = ""
    for namespaces, private in _LEVELS:
        options = ("hidepid=invisible", "hidepid=2") if private else ("",)
        filters = (True, False) if seccomp_available() else (False,)
        for proc_option, seccomp in [(option, f) for option in options for f in filters]:
            candidate = replace(base, namespaces=namespaces, private_root=private, proc_option=proc_option, seccomp=seccomp)
            error = _probe(candidate, user)
            if error is None:
                return replace(candidate, problems=_lacking(candidate, first_error))
            first_error = first_error or error
    return replace(base, problems=(f"student code cannot be started as {user.name} at all: {first_error}",))


def _lacking(plan: Machine, reason: str) -> tuple[str, ...]:
    problems = []
    if not plan.private_root:
        problems.append("no private root: file permissions alone keep student code from the hidden suites, and /tmp and /dev/shm are shared")
    if "network" not in plan.namespaces:
        problems.append("no network namespace: student code can reach the network")
    if not plan.seccomp:
        problems.append("no system-call filter: student code may create user namespaces and use ptrace, bpf, io_uring")
    if problems and reason:
        problems[0] += f" ({reason})"
    return tuple(problems)


def _probe(candidate: Machine, user: User) -> str | None:
    """Start a trivial interpreter under `candidate`'s confinement; the error text, or None."""
    with tempfile.TemporaryDirectory(prefix="autograder-probe-") as scratch:
        folder, mountpoint = Path(scratch) / "work", Path(scratch) / "root"
        folder.mkdir()
        mountpoint.mkdir()
        os.chmod(scratch, 0o755)
        os.chmod(folder, 0o755)
        errors_read, errors_write = os.pipe()
        enter = _enterer(candidate, user, Limits.for_budget(1, 1), folder, mountpoint, errors_write)
        try:
            subprocess.run(
                [candidate.python, "-I", "-S", "-c", "import os; os.listdir('.')"],
                cwd=folder, preexec_fn=enter, check=True, timeout=20, env={"PATH": "/usr/bin:/bin"},
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            return None
        except (OSError, subprocess.SubprocessError) as error:
            os.close(errors_write)
            errors_write = -1
            detail = os.read(errors_read, 500).decode(errors="replace")
            return detail or f"{type(error).__name__}: {error}"
        finally:
            if errors_write >= 0:
                os.close(errors_write)
            os.close(errors_read)


def _become_subreaper() -> None:
    # Orphaned student processes then re-parent to the grader, which reaps them; an unreaped
    # zombie still counts against the sandbox user's process limit.
    with contextlib.suppress(OSError):
        _prctl(PR_SET_CHILD_SUBREAPER, 1)


# --- entering the confinement: runs in the forked child, before exec ------------------------


def _enterer(
    plan: Machine, user: User, limits: Limits, folder: Path, mountpoint: Path, errors_fd: int = -1
) -> Callable[[], None]:
    """The preexec function: limits, namespaces and private root as root, then drop to `user`."""

    def enter() -> None:
        try:
            _set_limits(limits)
            os.setpriority(os.PRIO_PROCESS, 0, limits.nice)
            flags = 0
            for name in plan.namespaces:
                flags |= NAMESPACES[name]
            if flags:
                _check(_libc.unshare(flags), f"unshare {', '.join(plan.namespaces)}")
            if plan.private_root:
                _private_root(plan, folder, mountpoint)
            os.setgroups([])
            os.setresgid(user.gid, user.gid, user.gid)
            os.setresuid(user.uid, user.uid, user.uid)
            _prctl(PR_SET_NO_NEW_PRIVS, 1)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # cleared by setresuid, so set after it
            if plan.seccomp:
                _install_filter()
        except BaseException as error:
            if errors_fd >= 0:
                os.write(errors_fd, f"{type(error).__name__}: {error}"[:400].encode())
            raise

    return enter


def _set_limits(limits: Limits, processes: int | None = None) -> None:
    for kind, value in [*limits.table(), (resource.RLIMIT_NPROC, processes or limits.processes)]:
        hard = resource.getrlimit(kind)[1]
        if os.geteuid() != 0 and hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # only root may raise a hard limit
        resource.setrlimit(kind, (value, value))


def _limits_only(limits: Limits, processes: int) -> None:
    """The preexec function without root: what an unprivileged process may still do to itself."""
    _set_limits(limits, processes)
    os.setpriority(os.PRIO_PROCESS, 0, limits.nice)


def _private_root(plan: Machine, folder: Path, mountpoint: Path) -> None:
    """Pivot into a fresh tmpfs holding only what the worker needs; everything else is absent.

    The project tree (hidden suites, schemas, config), /autograder, uploads, results folders,
    home folders and the host's temp folders simply do not exist for the student.
    """
    root = str(mountpoint)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
    for top in ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        source = f"/{top}"
        if os.path.islink(source):
            os.symlink(os.readlink(source), f"{root}/{top}")
        elif os.path.isdir(source):
            _bind_read_only(source, f"{root}{source}")
    prefix = os.path.dirname(os.path.dirname(plan.python))
    if prefix != "/usr" and not prefix.startswith("/usr/"):
        _bind_read_only(prefix, f"{root}{prefix}")
    os.mkdir(f"{root}/dev")
    for device in ("null", "zero", "full", "random", "urandom"):
        open(f"{root}/dev/{device}", "w").close()
        _mount(f"/dev/{device}", f"{root}/dev/{device}", None, MS_BIND)
    os.symlink("/proc/self/fd", f"{root}/dev/fd")
    os.mkdir(f"{root}/proc")
    # A fresh /proc that shows only the sandbox user's own processes: not the grader's cmdline.
    _mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, plan.proc_option)
    os.mkdir(f"{root}/tmp")
    _mount("tmpfs", f"{root}/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777")
    os.makedirs(f"{root}{folder}", exist_ok=True)
    _mount(str(folder), f"{root}{folder}", None, MS_BIND)
    _mount(None, f"{root}{folder}", None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
    os.mkdir(f"{root}/.old")
    os.chdir(root)
    number = _PIVOT_ROOT.get(platform.machine())
    if number is not None:
        _check(_libc.syscall(number, b".", b".old"), "pivot_root")
        _check(_libc.umount2(b"/.old", MNT_DETACH), "umount the old root")
        os.rmdir("/.old")
    else:
        os.chroot(".")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(folder)


def _bind_read_only(source: str, target: str) -> None:
    os.makedirs(target, exist_ok=True)
    _mount(source, target, None, MS_BIND | MS_REC)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


# --- a system-call filter: no new namespaces, no debugging or kernel interfaces --------------

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
EPERM, ENOSYS = 1, 38
NEW_NAMESPACES = 0x10000000 | 0x00020000 | 0x20000000 | 0x40000000 | 0x08000000 | 0x04000000 | 0x02000000
"""CLONE_NEWUSER, NEWNS, NEWPID, NEWNET, NEWIPC, NEWUTS, NEWCGROUP."""

_DENIED = (
    "ptrace process_vm_readv process_vm_writev bpf perf_event_open userfaultfd keyctl add_key request_key "
    "mount umount2 pivot_root chroot setns open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr "
    "io_uring_setup io_uring_enter io_uring_register init_module finit_module delete_module kexec_load "
    "kexec_file_load acct swapon swapoff reboot syslog"
).split()
"""Refused with EPERM: kernel interfaces student code has no use for and exploits often do."""


@dataclass(frozen=True)
class _Arch:
    audit: int
    numbers: dict[str, int]


_ARCHES = {
    "x86_64": _Arch(0xC000003E, dict(zip(
        ["clone", "unshare", "clone3", *_DENIED],
        [56, 272, 435, 101, 310, 311, 321, 298, 323, 250, 248, 249, 165, 166, 155, 161, 308, 428, 429, 430, 431,
         432, 433, 442, 425, 426, 427, 175, 313, 176, 246, 320, 163, 167, 168, 169, 103],
    ))),
    "aarch64": _Arch(0xC00000B7, dict(zip(
        ["clone", "unshare", "clone3", *_DENIED],
        [220, 97, 435, 117, 270, 271, 280, 241, 282, 219, 217, 218, 40, 39, 41, 51, 268, 428, 429, 430, 431,
         432, 433, 442, 425, 426, 427, 105, 273, 106, 104, 294, 89, 224, 225, 142, 116],
    ))),
}


def seccomp_available() -> bool:
    return platform.machine() in _ARCHES


def _filter_program(arch: _Arch) -> list[tuple[int, int, int, int]]:
    """Classic BPF over struct seccomp_data (nr at 0, arch at 4, args[0] at 16)."""
    load, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    deny, allow, enosys = SECCOMP_RET_ERRNO | EPERM, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | ENOSYS
    program = [(load, 0, 0, 4), (jeq, 1, 0, arch.audit), (ret, 0, 0, deny), (load, 0, 0, 0)]
    program += [(jge, 0, 1, 0x40000000), (ret, 0, 0, deny)]  # the x32 ABI, another door to the same calls
    program += [(jeq, 0, 1, arch.numbers["clone3"]), (ret, 0, 0, enosys)]  # glibc then falls back to clone
    for name in _DENIED:
        program += [(jeq, 0, 1, arch.numbers[name]), (ret, 0, 0, deny)]
    program += [(jeq, 1, 0, arch.numbers["clone"]), (jeq, 0, 3, arch.numbers["unshare"])]
    program += [(load, 0, 0, 16), (jset, 0, 1, NEW_NAMESPACES), (ret, 0, 0, deny)]
    return program + [(ret, 0, 0, allow)]


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _install_filter() -> None:
    instructions = _filter_program(_ARCHES[platform.machine()])
    table = (_Filter * len(instructions))(*[_Filter(*i) for i in instructions])
    program = _Program(len(instructions), table)
    result = _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0)
    _check(result, "seccomp filter")


# --- finding and killing student processes --------------------------------------------------


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    group: int
    session: int
    state: str
    uid: int
    started: int
    """Clock ticks after boot."""
    threads: int

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


def processes() -> Iterator[Process]:
    """Every process in /proc, read from its stat (state, parent, group, session, start) and owner."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
            with open(f"/proc/{entry.name}/status", "rb") as handle:
                uid_line = next(line for line in handle if line.startswith(b"Uid:"))
        except (OSError, StopIteration):  # the process ended while we looked
            continue
        state, ppid, group, session, threads, started = (fields[i] for i in (0, 1, 2, 3, 17, 19))
        real_uid = int(uid_line.split()[1])
        yield Process(int(entry.name), int(ppid), int(group), int(session), state.decode(), real_uid, int(started), int(threads))


def _boot_ticks() -> int:
    with open("/proc/uptime") as handle:
        return int(float(handle.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _kill_user(user: User, exclude: Sequence[int], patience: float = KILL_PATIENCE) -> bool:
    """As `user`, kill(-1, SIGKILL) until no live process of `user` remains; True when none does.

    A process that setuids to the user may signal exactly that user's processes, whatever
    session or process group they moved to.
    """
    give_up = time.monotonic() + patience
    while True:
        killer = os.fork()
        if killer == 0:
            _kill_everything_as(user.uid)
        os.waitpid(killer, 0)
        _reap(user.uid, exclude)
        if not any(p.uid == user.uid and p.alive for p in processes()):
            return True
        if time.monotonic() > give_up:
            return False
        time.sleep(0.002)


def _kill_everything_as(uid: int) -> None:
    """Body of the forked killer; never returns."""
    try:
        os.setresuid(uid, uid, uid)
        for _ in range(100):
            os.kill(-1, signal.SIGKILL)  # every process of uid but this one
    except ProcessLookupError:  # nothing left to signal
        os._exit(0)
    except BaseException:
        os._exit(1)
    os._exit(0)


def _kill_matching(select: Callable[[Process], bool], patience: float = KILL_PATIENCE) -> bool:
    """SIGKILL every live process `select` picks, scanning /proc again until none is left."""
    give_up = time.monotonic() + patience
    me = os.getpid()
    while True:
        victims = [p for p in processes() if p.alive and p.pid != me and select(p)]
        for victim in victims:
            with contextlib.suppress(OSError):
                os.kill(victim.pid, signal.SIGKILL)
        if not victims or time.monotonic() > give_up:
            return not victims
        time.sleep(0.002)


def _reap(uid: int, exclude: Sequence[int]) -> None:
    """Collect the user's zombies re-parented to us (a subreaper), but not children others wait for."""
    me = os.getpid()
    for process in processes():
        if process.ppid == me and not process.alive and process.pid not in exclude and process.uid == uid:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(process.pid, os.WNOHANG)


def _descendants(root: int, table: list[Process]) -> set[int]:
    children: dict[int, list[int]] = {}
    for process in table:
        children.setdefault(process.ppid, []).append(process.pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


# --- one sandbox's confinement --------------------------------------------------------------


@dataclass
class _Slot:
    user: User
    lock: int | None
    since_ticks: int


@dataclass
class Confinement:
    """The isolation of one sandbox: which user, limits, namespaces; and how its processes die.

    The user slot is taken at the first `prepare` and held until `release`, so at most one
    sandbox runs as a given user and kill-everything never reaches another sandbox.
    """

    limits: Limits
    plan: Machine = field(default_factory=lambda: machine())
    _slot: _Slot | None = None
    _mountpoint: Path | None = None
    _last_check: float = 0.0
    strays_killed: int = 0

    @property
    def python(self) -> str:
        return self.plan.python

    @property
    def isolated(self) -> bool:
        return self.plan.root and bool(self.plan.users) and self.plan.python != ""

    def prepare(self, folder: Path, worker_script: Path) -> None:
        """Before a worker starts: take a user slot; let the user read the folder, write its captures."""
        if not self.isolated:
            return
        slot = self._take_slot()
        os.chmod(folder, 0o755)  # root-owned: the student can create nothing here
        os.chmod(worker_script, 0o644)
        for name in CAPTURE_FILES:
            path = folder / name
            path.unlink(missing_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            os.fchown(fd, slot.user.uid, slot.user.gid)
            os.close(fd)
        if self.plan.private_root and self._mountpoint is None:
            self._mountpoint = Path(tempfile.mkdtemp(prefix="autograder-root-"))

    def preexec(self, folder: Path) -> Callable[[], None]:
        """What the forked child runs before exec: the limits, and as root the rest of the confinement."""
        if not self.isolated:
            limits, processes = self.limits, _same_user_process_limit(self.limits)
            return functools.partial(_limits_only, limits, processes)
        assert self._slot is not None and (self._mountpoint is not None or not self.plan.private_root)
        return _enterer(self.plan, self._slot.user, self.limits, folder, self._mountpoint or folder)

    def started(self, worker_pid: int) -> None:
        self._last_check = time.monotonic()

    def kill_all(self, worker_pid: int | None) -> bool:
        """Kill every process the student started, the worker too; True when none is left."""
        slot, exclude = self._slot, (worker_pid,) if worker_pid else ()
        if slot is not None and slot.lock is not None and slot.user.dedicated:
            return _kill_user(slot.user, exclude)
        if worker_pid is None and (slot is None or slot.lock is None):
            return True  # no user of its own and no worker left to trace a process tree from
        done = _kill_matching(self._selector(worker_pid or 0))
        if slot is not None:
            _reap(slot.user.uid, exclude)
        return done

    def kill_strays(self, worker_pid: int, force: bool = False) -> bool:
        """Kill the processes a call left behind (a daemon, a fork bomb), checked at most every 0.25 s.

        Returns True when some would not die in time: then kill_all must take the worker too.
        """
        now = time.monotonic()
        if not force and now - self._last_check < STRAY_CHECK_INTERVAL:
            return False
        self._last_check = now
        select = self._selector(worker_pid)
        strays = [p for p in processes() if p.alive and p.pid != worker_pid and select(p)]
        if not strays:
            return False
        self.strays_killed += len(strays)
        cleared = _kill_matching(lambda p: p.pid != worker_pid and select(p), patience=0.5)
        if self._slot is not None:
            _reap(self._slot.user.uid, (worker_pid,))
        return not cleared

    def release(self, worker_pid: int | None = None) -> None:
        """Kill what is left, give the user slot back, remove the private root's mount point."""
        if self._slot is not None:
            self.kill_all(worker_pid)
            _unlock(self._slot.user, self._slot.lock)
            self._slot = None
        if self._mountpoint is not None:
            with contextlib.suppress(OSError):
                self._mountpoint.rmdir()
            self._mountpoint = None

    def report(self) -> dict[str, Any]:
        """Which isolation was achieved, for extra_data.isolation; `degraded` lists what is missing."""
        plan = self.plan
        user = self._slot.user if self._slot is not None else (plan.users[0] if self.isolated else None)
        degraded = list(plan.problems)
        if self.isolated and user is not None and not user.dedicated:
            degraded.append(f"no {DEDICATED_USER} user (run setup.sh as root): student code runs as the shared user {user.name}")
        if self.isolated and self._slot is not None and self._slot.lock is None:
            degraded.append(f"no free sandbox user slot (or {LOCK_DIR} unusable): shares {self._slot.user.name} with another sandbox, killed by process tree only")
        return {
            "user": _user_report(user),
            "python": plan.python,
            "limits": self.limits.report(self.limits.processes if self.isolated else _same_user_process_limit(self.limits)),
            "namespaces": list(plan.namespaces),
            "system_call_filter": _filter_report(plan),
            "network": "none: empty network namespace" if "network" in plan.namespaces else "NOT isolated: the host network",
            "filesystem": _filesystem_report(plan, user),
            "kill": self._kill_method(user),
            "stray_processes_killed": self.strays_killed,
            "degraded": degraded,
        }

    # -- internals --

    def _take_slot(self) -> _Slot:
        if self._slot is None:
            user, lock = _lock_a_user(self.plan.users)
            self._slot = _Slot(user, lock, _boot_ticks() - 1)
            if user.dedicated and lock is not None:
                _kill_user(user, exclude=())  # leftovers of a grader that died
        return self._slot

    def _selector(self, worker_pid: int) -> Callable[[Process], bool]:
        """Which processes belong to this sandbox."""
        slot = self._slot
        if slot is not None and slot.lock is not None:
            if slot.user.dedicated:
                return lambda p: p.uid == slot.user.uid
            return lambda p: p.uid == slot.user.uid and p.started >= slot.since_ticks
        return self._tree_selector(worker_pid)

    def _tree_selector(self, worker_pid: int) -> Callable[[Process], bool]:
        table = list(processes())
        family = _descendants(worker_pid, table) | {worker_pid}
        return lambda p: p.group == worker_pid or p.session == worker_pid or p.pid in family

    def _kill_method(self, user: User | None) -> str:
        if self._slot is not None and self._slot.lock is None:
            user = None
        if user is not None and user.dedicated:
            return f"kill(-1, SIGKILL) as {user.name} until none of its processes remain"
        if user is not None:
            return f"SIGKILL to every process of {user.name} started after the sandbox, by /proc scan"
        return "process group, session and descendants of the worker, by /proc scan (a daemon that re-parented elsewhere may survive)"


def _filter_report(plan: Machine) -> str:
    if not plan.seccomp:
        return "none"
    return "seccomp: EPERM for new namespaces (clone, unshare), " + ", ".join(_DENIED)


def _user_report(user: User | None) -> dict[str, Any]:
    if user is None:
        return {"name": pwd.getpwuid(os.geteuid()).pw_name, "uid": os.geteuid(), "dedicated": False}
    return {"name": user.name, "uid": user.uid, "dedicated": user.dedicated}


def _filesystem_report(plan: Machine, user: User | None) -> str:
    if plan.private_root:
        return f"private root: /usr and /etc read-only, a few devices, /proc ({plan.proc_option}), an empty /tmp; the project tree, /autograder, uploads and results are absent"
    if user is not None:
        from autograder.declaration import PROJECT_ROOT  # the trusted tree we care about

        exposed = [str(p) for p in (PROJECT_ROOT / "grading_tests", PROJECT_ROOT / "schemas") if reachable(p / "x", user) and _can(p, user, _READ)]
        state = f"READABLE by {user.name}: {', '.join(exposed)}" if exposed else f"not readable by {user.name}"
        return f"file permissions only: hidden suites and schemas {state}"
    return "NOT isolated: the student process can read whatever the grader's user can"


_HELD: set[int] = set()
"""Users whose slot this process holds; waiting for one of them would wait forever."""


def _lock_a_user(users: Sequence[User]) -> tuple[User, int | None]:
    """Take the first free user slot; wait for one when all are busy. No lock folder: no lock."""
    try:
        LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        info = LOCK_DIR.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            return users[0], None
    except OSError:
        return users[0], None
    handles = []
    for user in users:
        handle = os.open(LOCK_DIR / f"{user.uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handles.append(handle)
            continue
        for other in handles:
            os.close(other)
        _HELD.add(user.uid)
        return user, handle
    waiting = next((i for i, user in enumerate(users) if user.uid not in _HELD), None)
    for index, other in enumerate(handles):
        if index != waiting:
            os.close(other)
    if waiting is None:  # every slot is ours already: share one rather than deadlock
        return users[0], None
    fcntl.flock(handles[waiting], fcntl.LOCK_EX)
    _HELD.add(users[waiting].uid)
    return users[waiting], handles[waiting]


def _unlock(user: User, lock: int | None) -> None:
    if lock is not None:
        _HELD.discard(user.uid)
        os.close(lock)


def _same_user_process_limit(limits: Limits) -> int:
    """Without a user of its own the student shares the grader's process count: allow that many more."""
    me = os.getuid()
    return sum(p.threads for p in processes() if p.uid == me) + limits.processes * 2
