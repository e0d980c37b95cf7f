"""Unit tests of the notebook runner's pure functions: output noise, carriage returns, titles, peak memory.

Run with: /usr/bin/python3 -m unittest discover -s environment/tests (./memfit test does).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import run_notebooks as runner  # noqa: E402


def notebook_with(*texts, kind="stream"):
    """A notebook with one code cell per text, shown as a stream or as a result's text/plain."""
    cells = []
    for text in texts:
        if kind == "stream":
            output = new_output("stream", name="stdout", text=text)
        else:
            output = new_output("execute_result", data={"text/plain": text}, execution_count=1)
        cells.append(new_code_cell("x", outputs=[output]))
    return new_notebook(cells=cells)


class CommittedNotebooksTest(unittest.TestCase):
    """The notebooks as committed: valid nbformat 4.5 (cell ids, which newer nbformat requires), without outputs."""

    def test_every_notebook_validates_with_unique_cell_ids_and_no_outputs(self):
        folder = Path(__file__).resolve().parents[2] / "notebooks"
        notebooks = sorted(folder.glob("*.ipynb"))
        self.assertGreaterEqual(len(notebooks), 10)
        for path in notebooks:
            with self.subTest(notebook=path.name):
                # the raw JSON: nbformat.read adds missing ids on its own, which would hide them
                raw = json.loads(path.read_text(encoding="utf-8"))
                self.assertEqual((4, 5), (raw["nbformat"], raw["nbformat_minor"]))
                ids = [cell.get("id") for cell in raw["cells"]]
                self.assertNotIn(None, ids, "a cell without an id")
                self.assertEqual(len(ids), len(set(ids)), "cell ids repeat")
                notebook = nbformat.read(path, as_version=4)
                nbformat.validate(notebook)
                for cell in notebook.cells:
                    if cell.cell_type == "code":
                        self.assertEqual([], cell.outputs, "committed with outputs")


class OutputNoiseTest(unittest.TestCase):

    def test_clean_output_has_no_noise(self):
        nb = notebook_with("epoch 1: loss 1628.74\n", "[1.5, 2.25, 3.0]\n", "lesson holds: [12, 13]\n",
                           "rows [0, 1000) in 0.123456 s\n")
        self.assertEqual([], runner.output_noise(nb))

    def test_print_stream(self):
        found = runner.output_noise(notebook_with("java.io.PrintStream@5e9f23b4", kind="result"))
        self.assertEqual(1, len(found))
        self.assertIn("cell 0 shows 'java.io.PrintStream@5e9f23b4'", found[0])

    def test_raw_java_arrays(self):
        nb = notebook_with("ok\n", "losses: [D@1a2b3c\n", "[I@7f31245a", "[[F@6d06d69c", "[Ljava.lang.String;@4e25154f")
        found = runner.output_noise(nb)
        self.assertEqual(["cell 1 shows '[D@1a2b3c'", "cell 2 shows '[I@7f31245a'", "cell 3 shows '[[F@6d06d69c'",
                          "cell 4 shows '[Ljava.lang.String;@4e25154f'"], [line.split(":")[0] for line in found])

    def test_unrounded_doubles_in_a_list(self):
        nb = notebook_with("[1628.740253518077]", "losses [0.5, 0.1234567, 2.0E-4]\n", kind="result")
        found = runner.output_noise(nb)
        self.assertEqual(2, len(found))
        self.assertIn("cell 0 shows unrounded doubles '[1628.740253518077]'", found[0])
        self.assertIn("'[0.5, 0.1234567, 2.0E-4]'", found[1])

    def test_a_list_of_words_with_a_long_number_is_not_a_number_list(self):
        self.assertIsNone(runner.unrounded_list("[seed 0.1234567, run 2]"))
        self.assertIsNone(runner.unrounded_list("[1.25, 3.5]"))
        self.assertEqual("[-1.0000001]", runner.unrounded_list("a [x] then [-1.0000001]"))


class CarriageReturnTest(unittest.TestCase):

    def test_each_line_keeps_what_follows_its_last_carriage_return(self):
        text = "Writing  10%\rWriting  50%\rWriting 100%\ndone\n"
        self.assertEqual("Writing 100%\ndone\n", runner.apply_carriage_returns(text))

    def test_trailing_carriage_return_keeps_the_last_text(self):
        self.assertEqual("b", runner.apply_carriage_returns("a\rb\r"))
        self.assertEqual("plain", runner.apply_carriage_returns("plain"))

    def test_tidy_outputs_joins_streams_before_applying_carriage_returns(self):
        cell = new_code_cell("x", outputs=[new_output("stream", name="stdout", text="bar 1/3\r"),
                                           new_output("stream", name="stdout", text="bar 3/3\n"),
                                           new_output("stream", name="stderr", text="warning\n")])
        nb = new_notebook(cells=[cell])
        runner.tidy_outputs(nb)
        self.assertEqual(["bar 3/3\n", "warning\n"], [o["text"] for o in nb.cells[0]["outputs"]])


class KernelNameTest(unittest.TestCase):

    def test_a_spark_notebook_gets_the_spark_kernel_and_every_other_the_plain_one(self):
        spark = new_notebook(metadata={"kernelspec": {"name": "memfit-spark", "display_name": "Java (memfit + Spark)"}})
        plain = new_notebook(metadata={"kernelspec": {"name": "memfit", "display_name": "Java (memfit)"}})
        self.assertEqual("memfit-spark", runner.kernel_name(spark))
        self.assertEqual("memfit", runner.kernel_name(plain))
        self.assertEqual("memfit", runner.kernel_name(new_notebook()))
        self.assertEqual("memfit", runner.kernel_name(new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})))

    def test_the_committed_notebooks_name_their_kernel(self):
        folder = Path(__file__).resolve().parents[2] / "notebooks"
        names = {path.stem: runner.kernel_name(nbformat.read(str(path), as_version=4))
                 for path in sorted(folder.glob("*.ipynb"))}
        self.assertEqual("memfit-spark", names["12-spark-atlas-conversion"])
        self.assertEqual({"memfit"}, {name for stem, name in names.items() if stem != "12-spark-atlas-conversion"})


class TitleTest(unittest.TestCase):

    def test_first_markdown_heading(self):
        nb = new_notebook(cells=[new_code_cell("# not markdown"),
                                 new_markdown_cell("Some text\n\n## 01 · VRAM < data < RAM: a `topic` model\nmore"),
                                 new_markdown_cell("# Later heading")])
        self.assertEqual("01 · VRAM < data < RAM: a topic model", runner.notebook_title(nb, "fallback"))

    def test_no_heading_falls_back(self):
        nb = new_notebook(cells=[new_markdown_cell("#hashtag is no heading")])
        self.assertEqual("00-quickstart", runner.notebook_title(nb, "00-quickstart"))

    def test_html_title_is_the_heading(self):
        nb = new_notebook(cells=[new_markdown_cell("# Quickstart: estimate <-> advice")])
        with tempfile.TemporaryDirectory() as folder:
            html = Path(folder) / "00-quickstart.html"
            runner.write(nb, html, Path(folder) / "00-quickstart.ipynb")
            self.assertIn("<title>Quickstart: estimate &lt;-&gt; advice</title>", html.read_text(encoding="utf-8"))
            self.assertEqual(1, len(nbformat.read(str(Path(folder) / "00-quickstart.ipynb"), as_version=4).cells))


class PeakMemoryTest(unittest.TestCase):

    def test_fake_proc_tree_takes_the_largest_peak_of_the_process_and_its_descendants(self):
        with tempfile.TemporaryDirectory() as folder:
            proc = Path(folder)
            # 100 (launcher) -> 200 (java) -> 300 (helper); 400 is unrelated and bigger
            for pid, parent, hwm in [(100, 1, 3_000), (200, 100, 812_000), (300, 200, 50_000), (400, 1, 9_000_000)]:
                (proc / str(pid)).mkdir()
                (proc / str(pid) / "stat").write_text(f"{pid} (java (kernel)) S {parent} {pid} 0 0\n")
                (proc / str(pid) / "status").write_text(f"Name:\tjava\nVmPeak:\t 9999999 kB\nVmHWM:\t {hwm} kB\n")
            self.assertEqual(sorted([100, 200, 300]), sorted(runner.descendants(100, proc)))
            self.assertEqual(812_000, runner.peak_rss_kib(100, proc))
            self.assertEqual(50_000, runner.peak_rss_kib(300, proc))
            self.assertIsNone(runner.peak_rss_kib(999, proc))

    def test_a_real_child_process(self):
        # a child that holds ~64 MiB resident: its VmHWM counts for the parent tree
        child = subprocess.Popen([sys.executable, "-c", "import sys,time; b=bytearray(64<<20); "
                                  "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(30)"],
                                 stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual("ready\n", child.stdout.readline())
            peak = runner.peak_rss_kib(os.getpid())
            self.assertGreaterEqual(peak, 64 << 10)
            self.assertGreaterEqual(runner.peak_rss_kib(child.pid), 64 << 10)
        finally:
            child.kill()
            child.wait()
            child.stdout.close()


if __name__ == "__main__":
    unittest.main()
