"""Tests of environment/cgroup_limit.py: sizes, the one-line refusal where no group can be made, and, where one can
(root, cgroup v1 or v2), the limit itself: an allocation above it is OOM-killed, the page cache counts against it (a
file larger than the limit read twice comes from storage twice), and the group is removed afterwards.

Run with: /usr/bin/python3 -m unittest discover -s environment/tests (./memfit test does).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "environment"))
import cgroup_limit  # noqa: E402

SCRIPT = ROOT / "environment" / "cgroup_limit.py"
REASON = cgroup_limit.check()


def _text_file(text):
    folder = tempfile.mkdtemp()
    path = Path(folder) / "cgroup"
    path.write_text(text)
    return path


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


class SizesAndRefusals(unittest.TestCase):

    def test_sizes_are_binary_and_small_ones_are_refused(self):
        self.assertEqual(2 << 30, cgroup_limit.parse_size("2g"))
        self.assertEqual(512 << 20, cgroup_limit.parse_size("512M"))
        self.assertEqual(3 << 29, cgroup_limit.parse_size("1.5GiB"))
        self.assertEqual(100 << 20, cgroup_limit.parse_size(str(100 << 20)))
        for bad in ("two gigabytes", "1x", "1m"):
            with self.assertRaises(ValueError):
                cgroup_limit.parse_size(bad)

    def test_without_a_memory_controller_one_line_says_why(self):
        saved = cgroup_limit.CGROUP_ROOT
        with tempfile.TemporaryDirectory() as empty:
            cgroup_limit.CGROUP_ROOT = Path(empty)
            try:
                with self.assertRaises(cgroup_limit.Unavailable) as refused:
                    cgroup_limit.Group(64 << 20)
                self.assertIn("no cgroup memory controller under " + empty, str(refused.exception))
                self.assertIsNotNone(cgroup_limit.check())
            finally:
                cgroup_limit.CGROUP_ROOT = saved

    def test_a_command_is_required(self):
        result = run("--memory", "1g")
        self.assertEqual(2, result.returncode)
        self.assertIn("give --memory SIZE and the command after --", result.stderr)


@unittest.skipIf(REASON is not None, f"no control group here: {REASON}")
class InsideALimit(unittest.TestCase):

    def groups(self):
        found = set()
        for base in (cgroup_limit.CGROUP_ROOT / "memory", cgroup_limit.CGROUP_ROOT / "memfit"):
            if base.is_dir():
                found.update(p.name for p in base.iterdir() if p.name.startswith("memfit-"))
        return found

    def test_an_allocation_above_the_limit_is_killed_and_said_so(self):
        before = self.groups()
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "report.json"
            result = run("--memory", "96m", "--report", str(report), "--", sys.executable, "-c",
                         "blocks = [bytearray(8 << 20) for _ in range(40)]")
            self.assertEqual(137, result.returncode, result.stderr)
            self.assertIn("the kernel's OOM killer stopped the run", result.stderr)
            figures = json.loads(report.read_text())
        self.assertGreaterEqual(figures["oom_kills"], 1)
        self.assertEqual(96.0, figures["memory_limit_mib"])
        if figures["peak_mib"] is not None:     # cgroup v2 before Linux 5.19 has no memory.peak
            self.assertGreater(figures["peak_mib"], 32.0, "the group's peak is read, and the allocation reached it")
        self.assertEqual(before, self.groups(), "the group is removed after the run")

    def test_the_group_is_made_inside_the_callers_own_so_its_limits_still_apply(self):
        result = run("--memory", "256m", "--", "cat", "/proc/self/cgroup")
        self.assertEqual(0, result.returncode, result.stderr)
        controller = None if cgroup_limit.version() == 2 else "memory"
        own = cgroup_limit.own_path(controller)
        inside = cgroup_limit.own_path(controller, proc=_text_file(result.stdout))
        expected = (own + "/" if own else "") + ("memfit/memfit-" if controller is None else "memfit-")
        self.assertTrue(inside.startswith(expected), f"the command ran in {inside}, not under {own or '/'}")

    def test_notebooks_refuse_a_kernel_heap_the_limit_cannot_hold_before_starting_any(self):
        env = dict(os.environ, MEMFIT_KERNEL_HEAP="2g")
        result = subprocess.run([sys.executable, str(ROOT / "environment" / "run_notebooks.py"), "--memory", "1g",
                                 "--out", tempfile.mkdtemp(), "no-such-notebook.ipynb"], capture_output=True, text=True,
                                env=env)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn("MEMFIT_KERNEL_HEAP=2g) is more than 3/4 of --memory 1g", result.stderr)
        self.assertIn("at most 768m", result.stderr)

    def test_within_the_limit_the_command_runs_and_its_status_comes_back(self):
        result = run("--memory", "256m", "--cpus", "1", "--", sys.executable, "-c",
                     "import sys; b = bytearray(64 << 20); sys.exit(7)")
        self.assertEqual(7, result.returncode, result.stderr)
        self.assertIn("limit 256 MiB, 1 CPU", result.stderr)
        self.assertIn("0 OOM kill(s)", result.stderr)

    def test_the_page_cache_counts_a_file_larger_than_the_limit_is_read_from_storage_twice(self):
        (ROOT / "build").mkdir(exist_ok=True)   # on the project's disk: /tmp may be memory (tmpfs)
        with tempfile.TemporaryDirectory(dir=ROOT / "build") as folder:
            data = Path(folder) / "data.bin"
            with open(data, "wb") as out:
                for _ in range(160):
                    out.write(os.urandom(1 << 20))
                out.flush()
                os.fsync(out.fileno())
            descriptor = os.open(data, os.O_RDONLY)
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)   # not in the page cache to begin with
            os.close(descriptor)
            report = Path(folder) / "report.json"
            read_twice = f"for i in 1 2; do cat {data} > /dev/null; done"
            result = run("--memory", "64m", "--report", str(report), "--", "bash", "-c", read_twice)
            self.assertEqual(0, result.returncode, result.stderr)
            figures = json.loads(report.read_text())
        self.assertGreaterEqual(figures["disk_read_mib"], 2 * 160 * 0.9,
                                "a 64 MiB group cannot keep a 160 MiB file cached: the second read is from storage too")


if __name__ == "__main__":
    unittest.main()
