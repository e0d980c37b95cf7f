"""Run a command inside a memory and CPU limit, as a container would: a Linux control group created, used and removed
by memfit, with cgroup v2 or v1 found at run time.

usage: cgroup_limit.py --memory SIZE [--cpus N] [--report FILE] -- COMMAND [ARGS...]
       cgroup_limit.py --check

The limit counts the page cache the command brings in, as a container's does, so data read twice inside a limit
smaller than the data comes from the disk twice. After the command ends, one line says the limit, the group's peak
memory (page cache included), the OOM kills and the bytes read from storage (the kernel's task I/O accounting); --report writes the same as JSON. The exit
status is the command's. Creating a group needs root (or a delegated cgroup); where it cannot be made, one line says
why and the status is 3.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNAVAILABLE = 3


class Unavailable(RuntimeError):
    """No group can be made here; the message says why in one line."""


def parse_size(text):
    """Bytes from '2g', '512M', '1.5GiB' or a plain number (binary units)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text)
    if not match:
        raise ValueError(f"expected a size such as 2g, 512m or a number of bytes, got '{text}'")
    shift = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[match.group(2).lower()]
    value = int(float(match.group(1)) * (1 << shift))
    if value < (32 << 20):
        raise ValueError(f"a memory limit below 32 MiB leaves nothing for a JVM, got '{text}'")
    return value


def mib(value):
    return f"{value / (1 << 20):,.0f} MiB"


def human_limit(memory, cpus):
    size = f"{memory / (1 << 30):g} GiB" if memory % (1 << 30) == 0 else mib(memory)
    return f"{size}, {cpus:g} CPU" + ("" if cpus == 1 else "s")


def describe(stats):
    """One line for a group's figures, as Group.stats gives them (also read back from a report)."""
    peak = "unknown" if stats["peak_mib"] is None else mib(stats["peak_mib"] * (1 << 20))
    read = "unknown" if stats["disk_read_mib"] is None else mib(stats["disk_read_mib"] * (1 << 20))
    limit = human_limit(int(round(stats["memory_limit_mib"] * (1 << 20))), stats["cpus"])
    return (f"limit {limit} (cgroup {stats['cgroup']}): peak {peak} with the page cache, {stats['oom_kills']} OOM "
            f"kill(s), {read} read from storage")


def _write(path, value):
    path.write_text(str(value))


def _read_int(path):
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _keyed(path):
    """'key value' lines as a dict of ints (memory.stat, memory.events, memory.oom_control)."""
    values = {}
    try:
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                values[parts[0]] = int(parts[1])
    except OSError:
        pass
    return values


def own_path(controller, proc=Path("/proc/self/cgroup")):
    """This process's cgroup path for a v1 controller (or v2's unified path with controller None), '' for the root."""
    try:
        for line in proc.read_text().splitlines():
            parts = line.split(":", 2)
            if len(parts) < 3:
                continue
            if controller is None and parts[0] == "0" and parts[1] == "":
                return parts[2].strip("/")
            if controller is not None and controller in parts[1].split(","):
                return parts[2].strip("/")
    except OSError:
        pass
    return ""


def version():
    """2 for the unified hierarchy, 1 for v1's memory controller, or raises Unavailable."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return 2
    if (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").exists():
        return 1
    raise Unavailable(f"no cgroup memory controller under {CGROUP_ROOT} (neither cgroup v2 nor v1's memory)")


def swap_in_use():
    """Whether the machine has swap (a group without a swap limit could page instead of being stopped)."""
    try:
        return len(Path("/proc/swaps").read_text().splitlines()) > 1
    except OSError:
        return False


class Group:
    """One control group with a memory and CPU limit; every process that joins it (and its children) is limited."""

    def __init__(self, memory, cpus=1.0, name=None):
        self.memory = memory
        self.cpus = cpus
        self.version = version()
        self.name = name or f"memfit-{os.getpid()}-{time.monotonic_ns()}"
        self.dirs = []
        try:
            self._create()
        except PermissionError as e:
            self.remove()
            raise Unavailable(f"cannot create a control group under {CGROUP_ROOT} ({e.strerror}): "
                              "a memory limit needs root or a delegated cgroup") from None
        except Unavailable:
            self.remove()
            raise
        except OSError as e:
            self.remove()
            raise Unavailable(f"cannot set up a control group under {CGROUP_ROOT}: {e}") from None

    def _create(self):
        """Makes the group under the caller's own group, so that the caller's limits (a container's, a CI job's,
        a notebook kernel's) still apply to what runs inside."""
        period = 100_000
        quota = max(1_000, int(self.cpus * period))
        if self.version == 2:
            own = CGROUP_ROOT / own_path(None)
            parent = own / "memfit"
            parent.mkdir(exist_ok=True)
            # the controllers must be enabled on the way down, where this cgroup has them: memory is required
            for level in (own, parent):
                offered = (level / "cgroup.controllers").read_text().split()
                if "memory" not in offered:
                    raise Unavailable(f"the memory controller is not available under {level}")
                enabled = (level / "cgroup.subtree_control").read_text().split()
                wanted = [c for c in ("memory", "cpu", "io") if c in offered and c not in enabled]
                if wanted:
                    _write(level / "cgroup.subtree_control", " ".join("+" + c for c in wanted))
            group = parent / self.name
            group.mkdir()
            self.dirs.append(group)
            _write(group / "memory.max", self.memory)
            if (group / "memory.swap.max").exists():
                _write(group / "memory.swap.max", 0)
            elif swap_in_use():
                print("memfit: this machine swaps and the cgroup has no swap limit: the group may page beyond "
                      f"{mib(self.memory)} instead of being stopped", file=sys.stderr)
            if (group / "cpu.max").exists():
                _write(group / "cpu.max", f"{quota} {period}")
            return
        memory = CGROUP_ROOT / "memory" / own_path("memory") / self.name
        memory.mkdir()
        self.dirs.append(memory)
        _write(memory / "memory.limit_in_bytes", self.memory)
        if (memory / "memory.memsw.limit_in_bytes").exists():
            _write(memory / "memory.memsw.limit_in_bytes", self.memory)   # no swap beyond the limit
        else:
            try:
                _write(memory / "memory.swappiness", 0)
            except OSError:
                pass
            if swap_in_use():
                print("memfit: this machine swaps and the cgroup has no swap limit: the group may page beyond "
                      f"{mib(self.memory)} instead of being stopped", file=sys.stderr)
        for controller in ("cpu", "cpu,cpuacct"):
            base = CGROUP_ROOT / controller
            if base.is_dir() and not base.is_symlink():
                group = base / own_path("cpu") / self.name
                group.mkdir()
                self.dirs.append(group)
                _write(group / "cpu.cfs_period_us", period)
                _write(group / "cpu.cfs_quota_us", quota)
                break

    @property
    def join_files(self):
        """The cgroup.procs files a process writes its id into to join (every controller's group)."""
        return [d / "cgroup.procs" for d in self.dirs]

    def join(self, pid=0):
        """Moves a process (0: the caller) into the group."""
        for procs in self.join_files:
            _write(procs, pid or os.getpid())

    def members(self):
        members = set()
        for procs in self.join_files:
            try:
                members.update(int(p) for p in procs.read_text().split())
            except OSError:
                pass
        return members

    def _dir(self, controller):
        """The group's folder in a v1 controller's hierarchy (v2: the one folder)."""
        for d in self.dirs:
            if self.version == 2:
                return d
            top = d.relative_to(CGROUP_ROOT).parts[0]
            if top.split(",")[0] == controller:
                return d
        return None

    def stats(self, read_bytes=None):
        """The limit, peak memory (page cache included), OOM kills, bytes read from disk and CPU throttling.

        read_bytes: what the group's processes read from storage, from the kernel's task I/O accounting
        (/proc/PID/io read_bytes, or a waited child's rusage); cgroup v2's io.stat when not given. (v1's blkio counters
        stay at zero on machines whose block layer does not account them: not used.)
        """
        memory = self._dir("memory")
        if self.version == 2:
            peak = _read_int(memory / "memory.peak")
            oom = _keyed(memory / "memory.events").get("oom_kill", 0)
            if read_bytes is None:
                try:
                    read_bytes = sum(int(found) for found in re.findall(r"\brbytes=(\d+)", (memory / "io.stat").read_text()))
                except OSError:
                    read_bytes = None
            throttled = _keyed(memory / "cpu.stat").get("nr_throttled")
        else:
            peak = _read_int(memory / "memory.max_usage_in_bytes")
            oom = _keyed(memory / "memory.oom_control").get("oom_kill", 0)
            cpu = self._dir("cpu")
            throttled = _keyed(cpu / "cpu.stat").get("nr_throttled") if cpu is not None else None
        return {"memory_limit_mib": round(self.memory / (1 << 20), 1), "cpus": self.cpus, "cgroup": f"v{self.version}",
                "peak_mib": None if peak is None else round(peak / (1 << 20), 1), "oom_kills": oom,
                "disk_read_mib": None if read_bytes is None else round(read_bytes / (1 << 20), 1),
                "cpu_throttled_periods": throttled}

    def describe(self, stats):
        return describe(stats)

    def remove(self):
        """Removes the group: its processes killed first (a group cannot be removed while one is left)."""
        for _ in range(50):
            left = self.members()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for d in reversed(self.dirs):
            for attempt in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if attempt == 49:
                        print(f"memfit: cannot remove the control group {d}: {e}", file=sys.stderr)
                    time.sleep(0.05)
        self.dirs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def check():
    """None when a group can be made here, else the reason."""
    try:
        Group(64 << 20, 1).remove()
        return None
    except Unavailable as e:
        return str(e)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", help="the memory limit, page cache included: 2g, 512m, ...")
    parser.add_argument("--cpus", type=float, default=1.0, help="CPUs of time per period (default 1)")
    parser.add_argument("--report", type=Path, default=os.environ.get("MEMFIT_CGROUP_REPORT") or None,
                        help="write the limit and the measured figures as JSON (default: $MEMFIT_CGROUP_REPORT)")
    parser.add_argument("--check", action="store_true", help="exit 0 when a group can be made here, else say why")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.check:
        reason = check()
        if reason:
            print(f"memfit: {reason}", file=sys.stderr)
        return UNAVAILABLE if reason else 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.memory or not command:
        parser.error("give --memory SIZE and the command after --")
    if not args.cpus > 0:
        parser.error(f"--cpus must be positive, got {args.cpus}")
    try:
        memory = parse_size(args.memory)
    except ValueError as e:
        parser.error(str(e))
    try:
        group = Group(memory, args.cpus)
    except Unavailable as e:
        print(f"memfit: {e}", file=sys.stderr)
        return UNAVAILABLE
    with group:
        try:
            child = subprocess.Popen(command, preexec_fn=group.join)
        except (OSError, subprocess.SubprocessError) as e:
            print(f"memfit: cannot start {command[0]} inside the group: {e}", file=sys.stderr)
            return 127
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, lambda number, frame: child.send_signal(number))
        # the child's rusage counts what it and its waited-for descendants read from storage (512-byte blocks)
        _, wait_status, usage = os.wait4(child.pid, 0)
        status = os.waitstatus_to_exitcode(wait_status)
        child.returncode = status
        stats = group.stats(read_bytes=usage.ru_inblock * 512)
    stats["exit_status"] = status
    print(f"memfit: {group.describe(stats)}", file=sys.stderr)
    if stats["oom_kills"]:
        print(f"memfit: the kernel's OOM killer stopped the run: it needed more than the {mib(memory)} limit "
              "(lower the batch size or the buffers, or raise --memory)", file=sys.stderr)
    if args.report:
        partial = args.report.with_name(args.report.name + ".tmp")
        partial.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
        partial.replace(args.report)
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
