"""Every command the README names runs through ./memfit itself, the way a user types it.

A command the CLI knows but the launcher does not route ("unknown command 'cache'") passed every in-JVM test before;
these tests start ./memfit as a user would: each README command and each subcommand of the CLI answers --help, and
`cache ls|verify|clear` run for real on an empty cache folder.

Run with: /usr/bin/python3 -m unittest discover -s environment/tests (./memfit test does).
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEMFIT = ROOT / "memfit"
MAIN = ROOT / "lib" / "cli" / "src" / "main" / "java" / "dev" / "memfit" / "cli" / "Main.java"
# ./memfit test runs these tests: running it again from here would recurse
NOT_RUN_HERE = {"test"}


def memfit(*args, env=None, timeout=300):
    return subprocess.run([str(MEMFIT), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def readme_commands():
    """The commands the README shows as ./memfit WORD [SUBWORD], with the subcommand of bench and cache."""
    text = (ROOT / "README.md").read_text()
    commands = set()
    # in code: `./memfit ...` inline, or a line of a code block starting with it (prose such as "the ./memfit
    # commands" is not a command)
    pattern = r"(?:`|^\s*)\./memfit ([a-z][a-z-]*)((?: [a-z][a-z0-9-]*(?:\|[a-z0-9-]+)*)?)"
    for word, rest in re.findall(pattern, text, re.MULTILINE):
        if word in ("bench", "cache") and rest.strip():
            for sub in rest.strip().split("|"):
                commands.add((word, sub))
        else:
            commands.add((word,))
    return sorted(commands)


def cli_subcommands():
    """The names of the CLI's top-level subcommands: the @Command name of each class Main lists."""
    listed = re.search(r"subcommands = \{([^}]*)\}", MAIN.read_text()).group(1)
    names = []
    for cls in re.findall(r"(\w+(?:\.\w+)?)\.class", listed):
        outer, _, inner = cls.partition(".")
        source = (MAIN.parent / (outer + ".java")).read_text()
        # a nested command's @Command sits just before its class; a top-level one's before the file's first class
        before = source[:source.index("class " + (inner or outer))]
        names.append(list(re.finditer(r'@Command\(name = "([^"]+)"', before))[-1].group(1))
    return names


class ReadmeCommandsTest(unittest.TestCase):

    def test_the_readme_names_the_commands_this_test_expects(self):
        words = {command[0] for command in readme_commands()}
        # a sanity check of the parsing itself: these are in the README today
        for expected in ("notebooks", "test", "inspect", "shard", "preprocess", "cache", "bench"):
            self.assertIn(expected, words)

    def test_every_readme_command_answers_help_through_the_launcher(self):
        for command in readme_commands():
            if command[0] in NOT_RUN_HERE:
                continue
            with self.subTest(command=" ".join(command)):
                result = memfit(*command, "--help")
                self.assertNotIn("unknown command", result.stderr)
                self.assertEqual(0, result.returncode, result.stdout + result.stderr)
                self.assertRegex(result.stdout + result.stderr, r"(?i)usage")

    def test_every_cli_subcommand_is_routed_by_the_launcher(self):
        names = cli_subcommands()
        self.assertIn("cache", names)
        for name in names:
            with self.subTest(command=name):
                result = memfit(name, "--help")
                self.assertNotIn("unknown command", result.stderr)
                self.assertEqual(0, result.returncode, result.stdout + result.stderr)

    def test_cache_commands_run_on_an_empty_cache(self):
        folder = Path(tempfile.mkdtemp(prefix="memfit-cache-cmd-"))
        self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
        env = {"MEMFIT_CACHE_DIR": str(folder / "cache")}
        for sub in ("ls", "verify", "clear"):
            with self.subTest(command="cache " + sub):
                result = memfit("cache", sub, env=env)
                self.assertEqual(0, result.returncode, result.stdout + result.stderr)
                self.assertNotIn("unknown command", result.stderr)


if __name__ == "__main__":
    unittest.main()
