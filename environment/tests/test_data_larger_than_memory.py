"""Data larger than memory, for real: ./memfit bench disk inside a memory limit a fraction of a numpy-written .npy.
The page cache cannot keep the file, so every epoch in file order reads it from storage again; and a shuffled epoch
reads about one page per row, not the device's read-ahead window around each (memfit advises the kernel of a random
order over a mapping larger than memory: before that, 2% of the rows read 50 GB from an 1.1 GB file).

Skipped where no control group can be made (not root) or the CLI is not built (./memfit test builds it first).
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

REASON = cgroup_limit.check()
BUILT = (ROOT / "lib" / "cli" / "target" / "memfit-cli.jar").exists()


@unittest.skipIf(REASON is not None, f"no control group here: {REASON}")
@unittest.skipIf(not BUILT, "the CLI is not built (./memfit setup)")
class DataLargerThanMemory(unittest.TestCase):

    def test_every_epoch_reads_the_file_and_a_shuffled_row_reads_its_own_pages(self):
        import numpy as np
        (ROOT / "build").mkdir(exist_ok=True)   # on the project's disk: /tmp may be memory (tmpfs)
        with tempfile.TemporaryDirectory(dir=ROOT / "build") as folder:
            data = Path(folder) / "rows.npy"
            rows, columns = 300_000, 500   # 600 MB of float32, written by numpy
            array = np.lib.format.open_memmap(data, mode="w+", dtype=np.float32, shape=(rows, columns))
            for start in range(0, rows, 50_000):
                array[start:start + 50_000] = np.random.default_rng(start).random((50_000, columns), dtype=np.float32)
            array.flush()
            del array
            size = data.stat().st_size
            result = subprocess.run([str(ROOT / "memfit"), "bench", "disk", "--file", str(data), "--json",
                                     "--shuffle-fraction", "0.01", "--random-reads", "2000", "--memory", "200m",
                                     "--cpus", "1"], capture_output=True, text=True, timeout=600)
            self.assertEqual(0, result.returncode, result.stderr[-3000:])
        lines = [line for line in result.stdout.splitlines() if line.startswith("{")]   # not the build's messages
        measured = {row["what"]: row for row in map(json.loads, lines)}
        self.assertIn("0 OOM kill(s)", result.stderr)
        for epoch in ("loader: file order, epoch 1", "loader: file order, epoch 2"):
            self.assertGreaterEqual(measured[epoch]["readFromStorage"], 0.9 * size,
                                    f"{epoch}: a 200 MiB group cannot keep a {size >> 20} MiB file cached")
        shuffled = next(row for what, row in measured.items() if what.startswith("loader: shuffled"))
        per_row = shuffled["readFromStorage"] / shuffled["operations"]
        self.assertLess(per_row, 64 << 10, f"a shuffled row read {per_row / 1024:.0f} KiB from storage: the mapping "
                                           "was not advised random reads")


if __name__ == "__main__":
    unittest.main()
