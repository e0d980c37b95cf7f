"""Executes memfit's notebooks headless on the 'memfit' kernel and writes readable HTML with inline plots.

usage: run_notebooks.py [--size small|default|large | --small] [--out DIR] [--timeout SECONDS] [--max-rss-mib N]
                        [--memory SIZE [--cpus N]]
                        [NOTEBOOK ...]

Each notebook runs in a fresh kernel with its folder as working directory; sizes come from its parameters cell,
which reads MEMFIT_* environment variables (--size sets MEMFIT_SIZE, the tier whose defaults apply; --small is
--size small, the tier CI and Binder run). The executed notebook
and its HTML are written to the output folder even when a cell fails, so the error can be read in place.
Each kernel's peak resident memory (VmHWM of the kernel process and its children, read just before it shuts down)
is printed and written with the times to summary.json in the output folder; --max-rss-mib fails a notebook whose
kernel went above it. --memory 2g --cpus 1 runs each kernel inside a control group of that size (Binder's container;
environment/cgroup_limit.py, root or a delegated cgroup needed), which counts the page cache as a container does: the
summary then records the limit, the group's peak memory, OOM kills (a notebook killed fails) and the bytes the kernel
read from storage.
Exit status: 0 when every notebook ran to the end.
"""
import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError
from nbconvert import HTMLExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cgroup_limit  # noqa: E402  (environment/cgroup_limit.py, beside this file)

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


# Values a reader should never see: a printf as a cell's last statement shows the PrintStream it returns; a Java
# array printed with println or string concatenation shows its type and identity ([D@1a2b3c).
NOISE = [
    (re.compile(r"java\.io\.PrintStream@[0-9a-f]+"),
     "end it with a statement that returns nothing (e.g. System.out.print(String.format(...)))"),
    (re.compile(r"\[+(?:[ZBCSIJFD]|L[\w.$]+;)@[0-9a-f]+"),
     "a Java array printed as an object: print Arrays.toString(...) or the values formatted"),
]
# A printed list of numbers with an unrounded double in it: [1628.740253518077] or [0.5, 0.1234567].
NUMBER_LIST = re.compile(r"\[([^\[\]\n]*)\]")
NUMBER = re.compile(r"\s*-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")
UNROUNDED = re.compile(r"\d\.\d{6,}")


def unrounded_list(text):
    """The first bracketed, comma-separated list of numbers in text with a value of 6 or more decimals, or None."""
    for match in NUMBER_LIST.finditer(text):
        items = match.group(1).split(",")
        if all(NUMBER.fullmatch(item) for item in items) and any(UNROUNDED.search(item) for item in items):
            return match.group(0)
    return None


def output_text(output):
    """The text a reader sees in an output: a stream, or the plain-text form of a result."""
    text = output.get("text", "")
    plain = output.get("data", {}).get("text/plain", "")
    return text + ("".join(plain) if isinstance(plain, list) else plain)


def output_noise(nb):
    """Describes outputs that show object identities or unrounded doubles instead of results, one line per find."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = output_text(output)
            for pattern, advice in NOISE:
                match = pattern.search(text)
                if match:
                    found.append(f"cell {index} shows '{match.group(0)}': {advice}")
            numbers = unrounded_list(text)
            if numbers:
                shown = numbers if len(numbers) <= 60 else numbers[:57] + "..."
                found.append(f"cell {index} shows unrounded doubles '{shown}': format them (String.format(\"%.2f\", ...))")
    return found


def notebook_title(nb, fallback):
    """The notebook's first markdown heading (any level) without its #s and markup, or fallback when there is none."""
    for cell in nb.cells:
        if cell.get("cell_type") != "markdown":
            continue
        for line in cell.get("source", "").splitlines():
            heading = re.match(r"\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if heading and heading.group(1):
                return re.sub(r"[`*_]", "", heading.group(1)).strip()
    return fallback


def write(nb, target_html, target_ipynb):
    tidy_outputs(nb)
    nbformat.write(nb, str(target_ipynb))
    exporter = HTMLExporter(template_name="classic")
    # the classic template titles the page with nb.metadata.title, else resources' metadata name ("Notebook")
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": notebook_title(nb, target_html.stem)}})
    target_html.write_text(body, encoding="utf-8")


def descendants(pid, proc=Path("/proc")):
    """pid and every process under it, from the parent ids in /proc/*/stat."""
    children = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            # the command name (in parentheses) may hold spaces: the parent id is the 2nd field after the last ')'
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def peak_rss_kib(pid, proc=Path("/proc")):
    """The largest VmHWM (peak resident memory, KiB) over pid and its descendants, or None when none can be read."""
    peaks = []
    for member in descendants(pid, proc):
        try:
            for line in (proc / str(member) / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]))
        except (OSError, IndexError, ValueError):
            continue
    return max(peaks) if peaks else None


def kernel_pid(km):
    """The process id of the kernel a kernel manager started (the launcher script execs java), or None."""
    process = getattr(getattr(km, "provisioner", None), "process", None)
    if process is not None:
        return process.pid
    kernel = getattr(km, "kernel", None)
    return getattr(kernel, "pid", None)


def read_bytes(pid, proc=Path("/proc")):
    """Bytes pid and its descendants read from storage (the kernel's task I/O accounting), or None."""
    total, found = 0, False
    for member in descendants(pid, proc):
        try:
            for line in (proc / str(member) / "io").read_text().splitlines():
                if line.startswith("read_bytes:"):
                    total += int(line.split()[1])
                    found = True
        except (OSError, IndexError, ValueError):
            continue
    return total if found else None


class MeasuringClient(NotebookClient):
    """A NotebookClient that reads the kernel's peak resident memory, what it read from storage and whether it ran in
    the run's control group, just before it shuts the kernel down."""

    peak_rss_kib = None
    read_bytes = None
    group = None
    joined = None

    async def _async_cleanup_kernel(self):
        if self.peak_rss_kib is None and self.km is not None:
            pid = kernel_pid(self.km)
            if pid is not None:
                self.peak_rss_kib = peak_rss_kib(pid)
                self.read_bytes = read_bytes(pid)
                if self.group is not None:
                    self.joined = pid in self.group.members()
        await super()._async_cleanup_kernel()


def kernel_name(nb):
    """The notebook's memfit kernel: 'memfit-spark' for a notebook whose metadata names it (Spark in the kernel),
    else 'memfit'."""
    name = nb.metadata.get("kernelspec", {}).get("name", "memfit")
    return name if name in ("memfit", "memfit-spark") else "memfit"


def run(path, out_dir, timeout, limit=None):
    """Runs one notebook; with limit (memory bytes, cpus) its kernel runs in a control group of its own, and the
    group's figures come back as a dict (None without a limit)."""
    nb = nbformat.read(str(path), as_version=4)
    client = MeasuringClient(nb, kernel_name=kernel_name(nb), timeout=timeout, startup_timeout=120,
                             resources={"metadata": {"path": str(path.parent)}})
    group = None
    started = time.monotonic()
    error = None
    contained = None
    try:
        if limit is not None:
            group = cgroup_limit.Group(*limit)
            client.group = group
            os.environ["MEMFIT_CGROUP_PROCS"] = ":".join(str(f) for f in group.join_files)
        client.execute()
    except cgroup_limit.Unavailable as e:
        error = CheckFailed(f"no control group for this notebook: {e}")
    except (CellExecutionError, DeadKernelError, TimeoutError, RuntimeError) as e:
        error = e
    finally:
        os.environ.pop("MEMFIT_CGROUP_PROCS", None)
        if group is not None:
            contained = group.stats(read_bytes=client.read_bytes)
            contained["kernel_joined"] = client.joined
            group.remove()     # also when the run ends in an exception not caught here
    seconds = time.monotonic() - started
    if group is not None:
        if contained["oom_kills"]:
            error = CheckFailed(f"the kernel's OOM killer stopped the kernel inside the {group.describe(contained)}: "
                                "shrink this tier's sizes, the batch or the buffers, or raise --memory")
        elif error is None and not client.joined:
            # a limit that was not applied must not pass silently
            error = CheckFailed("the kernel did not run inside its control group (MEMFIT_CGROUP_PROCS): "
                                "the memory limit was not applied")
    html = out_dir / (path.stem + ".html")
    write(nb, html, out_dir / path.name)
    noise = output_noise(nb)
    if error is None and noise:
        error = CheckFailed("output noise:\n" + "\n".join(noise))
    images = sum(1 for cell in nb.cells for output in cell.get("outputs", [])
                 if "image/png" in output.get("data", {}))
    peak_mib = None if client.peak_rss_kib is None else client.peak_rss_kib / 1024
    return error, seconds, html, images, peak_mib, contained


class CheckFailed(RuntimeError):
    """A notebook that ran to the end but fails a check of its outputs or its memory (no kernel log needed)."""


def rss_text(peak_mib):
    return "kernel peak RSS unknown" if peak_mib is None else f"kernel peak RSS {peak_mib:.0f} MiB"


def write_summary(target, summary):
    """Writes summary.json under a temporary name first, so a reader never sees half of it."""
    partial = target.with_name(target.name + ".tmp")
    partial.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    partial.replace(target)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--size", choices=["small", "default", "large"],
                        help="size tier (MEMFIT_SIZE): small for CI and Binder, default for a 16 GB laptop, large for a workstation")
    parser.add_argument("--small", action="store_true", help="the small tier (--size small)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "notebooks")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell (default 1800)")
    parser.add_argument("--max-rss-mib", type=float, metavar="N",
                        help="fail a notebook whose kernel's peak resident memory exceeds N MiB")
    parser.add_argument("--memory", metavar="SIZE",
                        help="run each kernel in a control group of this memory (2g: Binder's), page cache included")
    parser.add_argument("--cpus", type=float, default=1.0, help="CPUs of the group (default 1), with --memory")
    args = parser.parse_args()
    limit = None
    if args.memory:
        try:
            limit = (cgroup_limit.parse_size(args.memory), args.cpus)
        except ValueError as e:
            parser.error(f"--memory: {e}")
        reason = cgroup_limit.check()
        if reason:
            print(f"memfit: --memory {args.memory}: {reason}", file=sys.stderr)
            return cgroup_limit.UNAVAILABLE
    size = "small" if args.small else args.size
    if size:
        os.environ["MEMFIT_SIZE"] = size
    if os.environ.get("MEMFIT_SIZE", "").lower() == "small" or os.environ.get("MEMFIT_SMALL", "") in ("1", "true", "yes"):
        os.environ.setdefault("MEMFIT_KERNEL_HEAP", "512m")
    os.environ.setdefault("MEMFIT_PROGRESS", "true")
    if limit is not None:
        # a heap that the limit cannot hold gets the kernel OOM-killed instead of a Java OutOfMemoryError: say so now
        heap_text = os.environ.get("MEMFIT_KERNEL_HEAP", "2g")
        try:
            heap = cgroup_limit.parse_size(heap_text)
        except ValueError:
            heap = None
        if heap is not None and heap > 0.75 * limit[0]:
            print(f"memfit: the kernel's heap (MEMFIT_KERNEL_HEAP={heap_text}) is more than 3/4 of --memory "
                  f"{args.memory}: the kernel would be killed before the JVM ran out of heap; set MEMFIT_KERNEL_HEAP to "
                  f"at most {int(0.75 * limit[0]) >> 20}m or raise --memory", file=sys.stderr)
            return 2
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    if not notebooks:
        print("memfit: no notebooks found under notebooks/", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    summary = {}
    for path in notebooks:
        path = path.resolve()
        print(f"[{path.stem}] running ...", flush=True)
        error, seconds, html, images, peak_mib, contained = run(path, args.out, args.timeout, limit)
        if error is None and args.max_rss_mib is not None:
            if peak_mib is None:
                # a limit that cannot be checked must not pass silently
                error = CheckFailed(f"--max-rss-mib {args.max_rss_mib:.0f} was asked for, but the kernel's peak resident "
                                     "memory could not be read (no /proc/PID/status for the kernel process)")
            elif peak_mib > args.max_rss_mib:
                error = CheckFailed(f"the kernel's peak resident memory was {peak_mib:.0f} MiB, above --max-rss-mib "
                                     f"{args.max_rss_mib:.0f}: shrink this tier's sizes or MEMFIT_KERNEL_HEAP")
        summary[path.stem] = {"ok": error is None, "seconds": round(seconds, 1), "plots": images,
                              "peak_rss_mib": None if peak_mib is None else round(peak_mib, 1)}
        if contained is not None:
            summary[path.stem]["container"] = contained
        write_summary(args.out / "summary.json", summary)
        if error is None:
            print(f"[{path.stem}] ok in {seconds:.1f} s, {images} plot(s), {rss_text(peak_mib)} -> {html}", flush=True)
            if contained is not None:
                print(f"[{path.stem}] {cgroup_limit.describe(contained)}", flush=True)
        else:
            failed.append(path.stem)
            first_line = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
            print(f"[{path.stem}] FAILED after {seconds:.1f} s, {rss_text(peak_mib)} -> {html}", flush=True)
            print("    " + "\n    ".join(first_line[-15:]), flush=True)
            if not isinstance(error, (CellExecutionError, CheckFailed)):
                kernel = kernel_name(nbformat.read(str(path), as_version=4))
                log = ROOT / "build" / "jupyter" / "kernels" / kernel / "kernel.log"
                if log.exists():
                    print(f"    last lines of {log}:", flush=True)
                    print("    " + "\n    ".join(log.read_text(errors="replace").splitlines()[-20:]), flush=True)
    print(f"HTML with inline plots: {args.out} (times, plots and peak memory: {args.out / 'summary.json'})")
    print(f"notebooks: {len(notebooks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
