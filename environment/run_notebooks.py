"""Executes memfit's notebooks headless on the 'memfit' kernel and writes readable HTML with inline plots.

usage: run_notebooks.py [--size small|default|large | --small] [--out DIR] [--timeout SECONDS] [NOTEBOOK ...]

Each notebook runs in a fresh kernel with its folder as working directory; sizes come from its parameters cell,
which reads MEMFIT_* environment variables (--size sets MEMFIT_SIZE, the tier whose defaults apply; --small is
--size small, the tier CI and Binder run). The executed notebook
and its HTML are written to the output folder even when a cell fails, so the error can be read in place.
Exit status: 0 when every notebook ran to the end.
"""
import argparse
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent


def apply_carriage_returns(text):
    """What a terminal shows for text with progress-bar updates: each line keeps what follows its last '\\r'."""
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        lines.append(line)
    return "\n".join(lines)


def tidy_outputs(nb):
    """Joins the kernel's many small stream messages per cell, then applies carriage returns (progress bars)."""
    for cell in nb.cells:
        merged = []
        for output in cell.get("outputs", []):
            if (output.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                    and merged[-1]["name"] == output["name"]):
                merged[-1]["text"] += output["text"]
            else:
                merged.append(output)
        for output in merged:
            if output.get("output_type") == "stream":
                output["text"] = apply_carriage_returns(output["text"])
        if "outputs" in cell:
            cell["outputs"] = merged


# Values a reader should never see: a printf as a cell's last statement shows the PrintStream it returns.
NOISE = re.compile(r"java\.io\.PrintStream@[0-9a-f]+")


def output_noise(nb):
    """Describes outputs that show object identities instead of results, one line per cell."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = output.get("text", "") + "".join(output.get("data", {}).get("text/plain", ""))
            match = NOISE.search(text)
            if match:
                found.append(f"cell {index} shows '{match.group(0)}': end it with a statement that returns nothing"
                             " (e.g. System.out.print(String.format(...)))")
    return found


def write(nb, target_html, target_ipynb):
    tidy_outputs(nb)
    nbformat.write(nb, str(target_ipynb))
    exporter = HTMLExporter(template_name="classic")
    body, _ = exporter.from_notebook_node(nb)
    target_html.write_text(body, encoding="utf-8")


def run(path, out_dir, timeout):
    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, kernel_name="memfit", timeout=timeout, startup_timeout=120,
                            resources={"metadata": {"path": str(path.parent)}})
    started = time.monotonic()
    error = None
    try:
        client.execute()
    except (CellExecutionError, DeadKernelError, TimeoutError, RuntimeError) as e:
        error = e
    seconds = time.monotonic() - started
    html = out_dir / (path.stem + ".html")
    write(nb, html, out_dir / path.name)
    noise = output_noise(nb)
    if error is None and noise:
        error = RuntimeError("output noise:\n" + "\n".join(noise))
    images = sum(1 for cell in nb.cells for output in cell.get("outputs", [])
                 if "image/png" in output.get("data", {}))
    return error, seconds, html, images


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--size", choices=["small", "default", "large"],
                        help="size tier (MEMFIT_SIZE): small for CI and Binder, default for a 16 GB laptop, large for a workstation")
    parser.add_argument("--small", action="store_true", help="the small tier (--size small)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "notebooks")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell (default 1800)")
    args = parser.parse_args()
    size = "small" if args.small else args.size
    if size:
        os.environ["MEMFIT_SIZE"] = size
    if os.environ.get("MEMFIT_SIZE", "").lower() == "small" or os.environ.get("MEMFIT_SMALL", "") in ("1", "true", "yes"):
        os.environ.setdefault("MEMFIT_KERNEL_HEAP", "512m")
    os.environ.setdefault("MEMFIT_PROGRESS", "true")
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    if not notebooks:
        print("memfit: no notebooks found under notebooks/", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for path in notebooks:
        path = path.resolve()
        print(f"[{path.stem}] running ...", flush=True)
        error, seconds, html, images = run(path, args.out, args.timeout)
        if error is None:
            print(f"[{path.stem}] ok in {seconds:.1f} s, {images} plot(s) -> {html}", flush=True)
        else:
            failed.append(path.stem)
            first_line = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
            print(f"[{path.stem}] FAILED after {seconds:.1f} s -> {html}", flush=True)
            print("    " + "\n    ".join(first_line[-15:]), flush=True)
            if not isinstance(error, CellExecutionError):
                log = ROOT / "build" / "jupyter" / "kernels" / "memfit" / "kernel.log"
                if log.exists():
                    print(f"    last lines of {log}:", flush=True)
                    print("    " + "\n    ".join(log.read_text(errors="replace").splitlines()[-20:]), flush=True)
    print(f"HTML with inline plots: {args.out}")
    print(f"notebooks: {len(notebooks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
