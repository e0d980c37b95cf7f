"""Starts the 'memfit' kernel many times and counts the starts that hang (the rapaio 3.0.1 start-up race).

usage: kernel_check.py [--starts N] [--timeout SECONDS] [--kernel NAME]

Each start must answer kernel_info and then run a cell (1 + 1 == 2) within the timeout. Prints one line per
failure and a closing 'kernel starts: N passed, M failed'; exits 1 if any start failed.
"""
import argparse
import sys
import time

from jupyter_client.manager import KernelManager


def one_start(kernel, timeout):
    km = KernelManager(kernel_name=kernel)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    started = time.monotonic()
    try:
        kc.wait_for_ready(timeout=timeout)
        reply = kc.execute_interactive("1 + 1", timeout=timeout, store_history=False,
                                       output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            return f"cell failed: {reply['content']}", time.monotonic() - started
        return None, time.monotonic() - started
    except Exception as e:  # a hang shows as a timeout here
        return f"{type(e).__name__}: {e}", time.monotonic() - started
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--kernel", default="memfit")
    args = parser.parse_args()
    failures = 0
    times = []
    for i in range(args.starts):
        error, seconds = one_start(args.kernel, args.timeout)
        times.append(seconds)
        if error:
            failures += 1
            print(f"start {i + 1}: {error} after {seconds:.1f} s", flush=True)
    times.sort()
    print(f"kernel starts: median {times[len(times) // 2]:.2f} s, slowest {times[-1]:.2f} s")
    print(f"kernel starts: {args.starts - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
