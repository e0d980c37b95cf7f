"""Turns notebooks executed elsewhere (./memfit notebooks --jshell writes NAME.ipynb with its outputs, e.g. on a GPU
machine without Jupyter) into the same readable HTML as run_notebooks.py: outputs tidied, the classic template.

usage: render_notebooks.py EXECUTED.ipynb ... --out DIR
Exit status: 0 when every notebook was rendered and none holds an error output.
"""
import argparse
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_notebooks import output_noise, tidy_outputs, write  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        tidy_outputs(nb)
        errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
        noise = output_noise(nb)
        write(nb, args.out / (path.stem + ".html"), args.out / path.name)
        state = "ok" if not errors and not noise else "FAILED: " + (errors[0]["ename"] + ": " + errors[0]["evalue"]
                                                                  if errors else str(noise[0]))
        print(f"{path.stem}: {state} -> {args.out / (path.stem + '.html')}")
        if errors or noise:
            failed.append(path.stem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
