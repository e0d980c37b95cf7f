"""Tests of ./memfit gpu-setup (environment/gpu-setup.sh) without a GPU: torch detection against the real
/usr/bin/python3 and against fake pythons that answer like a CUDA torch, the build plan (--dry-run), the messages for
missing tools, the recorded settings, and that environment/lib.sh and the kernel's launcher export them.

Run with: /usr/bin/python3 -m unittest discover -s environment/tests (./memfit test does).
"""
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "environment" / "gpu-setup.sh"
LIB = ROOT / "environment" / "lib.sh"
ARCH = {"x86_64": "linux-x86_64", "aarch64": "linux-aarch64"}[os.uname().machine]


def torch_of_system_python():
    """The version of /usr/bin/python3's torch, None when it has none, and whether it is a CUDA build."""
    probe = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None, False
    version, cuda = probe.stdout.split()
    return version, cuda != "None"


class GpuSetupTest(unittest.TestCase):

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="memfit-gpu-setup-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.gpu_dir = self.tmp / "root" / "build" / "gpu"
        # a JDK's header, a CUDA home with nvcc and libcudart.so, a torch package folder with pip's CUDA headers
        self.java_home = self.tmp / "jdk"
        (self.java_home / "include").mkdir(parents=True)
        (self.java_home / "include" / "jni.h").write_text("")
        self.cuda_home = self.tmp / "cuda"
        (self.cuda_home / "bin").mkdir(parents=True)
        (self.cuda_home / "lib64").mkdir()
        (self.cuda_home / "lib64" / "libcudart.so").write_text("")
        self.nvcc = self.executable(self.cuda_home / "bin" / "nvcc",
                                    "echo 'Cuda compilation tools, release 13.0, V13.0.88'")
        self.site = self.tmp / "site-packages"
        self.torch_lib = self.site / "torch" / "lib"
        self.torch_lib.mkdir(parents=True)
        (self.torch_lib / "libtorch.so").write_text("")
        (self.site / "nvidia" / "cu13" / "include").mkdir(parents=True)

    def executable(self, path, body):
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(0o755)
        return path

    def fake_python(self, version="2.11.0+cu130", cuda="13.0", capability="9.0", arch="7.5;8.0;9.0", error=None):
        """A 'python' that answers gpu-setup's probe as a torch with these properties would."""
        if error:
            answers = "error=" + error
        else:
            answers = "\n".join([f"version={version}", f"cuda={cuda}", f"lib={self.torch_lib}",
                                 f"cmake={self.site}/torch/share/cmake", f"site={self.site}", "cxx11abi=1",
                                 f"capability={capability}", f"arch={arch}"])
        return self.executable(self.tmp / "python", f"cat <<'EOF'\n{answers}\nEOF")

    def path_without(self, *hidden, fakes=None):
        """A PATH holding every command of /usr/bin and /usr/local/bin except the hidden ones, and the fake commands
        given as {name: shell script body}."""
        folder = self.tmp / ("bin-without-" + "-".join(hidden) + "-" + "-".join(fakes or {}))
        folder.mkdir()
        for name, body in (fakes or {}).items():
            self.executable(folder / name, body)
        for source in (Path("/usr/local/bin"), Path("/usr/bin"), Path("/bin")):
            if not source.is_dir():
                continue
            for entry in source.iterdir():
                target = folder / entry.name
                if entry.name not in hidden and not target.exists():
                    target.symlink_to(entry)
        return str(folder)

    def run_setup(self, *args, env=None, path=None):
        environment = {k: v for k, v in os.environ.items() if k not in ("CXX", "CUDACXX", "MEMFIT_DJL_ONLINE")}
        environment.update({"MEMFIT_ROOT": str(ROOT), "MEMFIT_GPU_DIR": str(self.gpu_dir),
                            "JAVA_HOME": str(self.java_home), "CUDA_HOME": str(self.cuda_home), "HOME": str(self.tmp)})
        if path:
            environment["PATH"] = path
        environment.update(env or {})
        return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=environment, timeout=120)

    # ---- detection --------------------------------------------------------------------------------------------

    def test_the_system_pythons_cpu_torch_is_refused_naming_its_version(self):
        version, has_cuda = torch_of_system_python()
        if version is None or has_cuda:
            self.skipTest("/usr/bin/python3 has no CPU-only torch here")
        result = self.run_setup("--python", "/usr/bin/python3")
        self.assertEqual(1, result.returncode)
        self.assertIn(f"no CUDA torch in /usr/bin/python3: torch {version} (CPU only); install a CUDA build, e.g. "
                      "'/usr/bin/python3 -m pip install torch --index-url https://download.pytorch.org/whl/cu", result.stderr)
        self.assertEqual(1, len(result.stderr.strip().splitlines()), "one line: " + result.stderr)
        self.assertIn("pip install torch --index-url https://download.pytorch.org/whl/cu", result.stderr)
        self.assertFalse(self.gpu_dir.exists(), "nothing is written when there is nothing to build against")

    def test_a_python_without_torch(self):
        python = self.fake_python(error="ModuleNotFoundError: No module named 'torch'")
        result = self.run_setup("--python", str(python))
        self.assertEqual(1, result.returncode)
        self.assertIn(f"no torch in {python} (ModuleNotFoundError: No module named 'torch')", result.stderr)

    def test_no_such_python(self):
        result = self.run_setup("--python", str(self.tmp / "missing-python"))
        self.assertEqual(1, result.returncode)
        self.assertIn("no Python", result.stderr)

    def test_a_torch_without_its_shared_library(self):
        (self.torch_lib / "libtorch.so").unlink()
        result = self.run_setup("--python", str(self.fake_python()), "--djl-src", "djl.tar.gz", "--dry-run")
        self.assertEqual(1, result.returncode)
        self.assertIn("has no libtorch.so in " + str(self.torch_lib), result.stderr)

    # ---- the plan ---------------------------------------------------------------------------------------------

    def plan(self, *args, **fake):
        result = self.run_setup("--python", str(self.fake_python(**fake)), "--djl-src", "/src/djl.tar.gz", "--dry-run",
                                *args)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertFalse(self.gpu_dir.exists(), "--dry-run wrote " + str(self.gpu_dir))
        return result.stdout

    def test_dry_run_plans_a_cuda_build_and_the_settings(self):
        plan = self.plan()
        self.assertIn("torch 2.11.0+cu130 (flavor cu130)", plan)
        self.assertIn(f"tar -xzf /src/djl.tar.gz -C {self.gpu_dir}/djl-src", plan)
        self.assertIn("-h " + str(self.gpu_dir / "djl-src/engines/pytorch/pytorch-native/build/include"), plan)
        self.assertIn(f"-DCMAKE_PREFIX_PATH={self.site}/torch/share/cmake -DCMAKE_BUILD_TYPE=Release -DUSE_CUDA=1 "
                      f"-DCMAKE_CUDA_COMPILER={self.nvcc} -DTORCH_CUDA_ARCH_LIST=9.0", plan)
        self.assertIn(f"-I{self.site}/nvidia/cu13/include", plan)
        self.assertIn(f"-DJAVA_INCLUDE_PATH={self.java_home}/include -DJAVA_INCLUDE_PATH2={self.java_home}/include/linux", plan)
        self.assertNotIn("PT_VERSION", plan)
        self.assertNotIn("C++20", plan)
        # the recipe's link fix: no direct cudart/nvrtc, then relink
        self.assertIn("lib(cudart|nvrtc)", plan)
        self.assertIn(f"bash {self.gpu_dir}/cmake/CMakeFiles/djl_torch.dir/link.txt", plan)
        installed = f"{self.gpu_dir}/djl/pytorch/2.11.0-cu130-{ARCH}/0.35.1-libdjl_torch.so"
        self.assertIn("would install the JNI as " + installed, plan)
        for line in (f"export PYTORCH_LIBRARY_PATH={self.torch_lib}", "export PYTORCH_VERSION=2.11.0",
                     "export PYTORCH_FLAVOR=cu130", f"export ENGINE_CACHE_DIR={self.gpu_dir}/djl",
                     f"export MEMFIT_GPU_JNI={installed}"):
            self.assertIn(line, plan)

    def test_without_a_visible_gpu_the_arch_list_comes_from_torch(self):
        self.assertIn("'-DTORCH_CUDA_ARCH_LIST=7.5;8.0;9.0'", self.plan(capability=""))
        self.assertIn("-DTORCH_CUDA_ARCH_LIST=8.6", self.plan("--cuda-arch", "8.6", capability=""))

    def test_torch_2_14_gets_the_cxx20_patch(self):
        plan = self.plan(version="2.14.0+cu130")
        self.assertIn("torch 2.14.0's headers need C++20; DJL's CMakeLists.txt pins C++17: patching it to 20", plan)
        self.assertIn("sed -i 's/CXX_STANDARD 17/CXX_STANDARD 20/' "
                      + str(self.gpu_dir / "djl-src/engines/pytorch/pytorch-native/CMakeLists.txt"), plan)
        self.assertNotIn("C++20", self.plan(version="2.13.1+cu130"))

    def test_torch_2_1_takes_djls_1_13_code_paths(self):
        self.assertIn("-DPT_VERSION=V1_13_X", self.plan(version="2.1.2+cu121", cuda="12.1"))

    def test_a_local_build_version_is_cut_to_x_y_z(self):
        self.assertIn("export PYTORCH_VERSION=2.11.0\n", self.plan(version="2.11.0a0+git4f1b2c"))

    def test_the_sources_must_be_given_or_allowed_online(self):
        result = self.run_setup("--python", str(self.fake_python()), "--dry-run")
        self.assertEqual(1, result.returncode)
        self.assertIn("DJL's JNI sources are needed: give them with --djl-src TARBALL", result.stderr)
        self.assertIn("MEMFIT_DJL_ONLINE=1", result.stderr)
        online = self.run_setup("--python", str(self.fake_python()), "--dry-run", env={"MEMFIT_DJL_ONLINE": "1"})
        self.assertEqual(0, online.returncode, online.stderr)
        self.assertIn("https://github.com/deepjavalibrary/djl/archive/refs/tags/v0.35.1.tar.gz", online.stdout)
        self.assertIn(f"curl -fsSL -o {self.gpu_dir}/djl-v0.35.1.tar.gz.partial", online.stdout)

    # ---- missing tools ----------------------------------------------------------------------------------------

    def test_no_cmake(self):
        result = self.run_setup("--python", str(self.fake_python()), "--djl-src", "x.tgz", "--dry-run",
                                path=self.path_without("cmake"))
        self.assertEqual(1, result.returncode)
        self.assertIn("no cmake: DJL's JNI is built with CMake; install it", result.stderr)

    def test_no_compiler(self):
        result = self.run_setup("--python", str(self.fake_python()), "--djl-src", "x.tgz", "--dry-run",
                                path=self.path_without("c++", "g++", "clang++"))
        self.assertEqual(1, result.returncode)
        self.assertIn("no C++ compiler (looked for $CXX, c++, g++, clang++)", result.stderr)

    def test_no_nvcc_for_a_cuda_torch(self):
        result = self.run_setup("--python", str(self.fake_python()), "--djl-src", "x.tgz", "--dry-run",
                                path=self.path_without("nvcc"), env={"CUDA_HOME": str(self.tmp / "no-cuda")})
        self.assertEqual(1, result.returncode)
        self.assertIn("no nvcc: torch 2.11.0+cu130 needs the CUDA toolkit's compiler", result.stderr)
        self.assertIn("install CUDA toolkit 13.0", result.stderr)

    def test_no_jdk_headers(self):
        (self.java_home / "include" / "jni.h").unlink()
        result = self.run_setup("--python", str(self.fake_python()), "--djl-src", "x.tgz", "--dry-run")
        self.assertEqual(1, result.returncode)
        self.assertIn("no JDK headers", result.stderr)

    def test_a_prebuilt_jni_needs_no_build_tools(self):
        prebuilt = self.tmp / "libdjl_torch.so"
        prebuilt.write_bytes(b"\x7fELF prebuilt")
        result = self.run_setup("--python", str(self.fake_python()), "--jni", str(prebuilt),
                                path=self.path_without("cmake", "nvcc", "c++", "g++", "clang++"),
                                env={"CUDACXX": ""})
        self.assertEqual(0, result.returncode, result.stderr)

    # ---- the build, with fake tools ---------------------------------------------------------------------------

    def fake_sources(self):
        """A tarball laid out as GitHub's archive of DJL (one top folder) with the files the build reads."""
        top = self.tmp / "src" / "djl-0.35.1"
        native = top / "engines" / "pytorch" / "pytorch-native"
        native.mkdir(parents=True)
        (native / "CMakeLists.txt").write_text("set_property(TARGET djl_torch PROPERTY CXX_STANDARD 17)\n")
        tarball = self.tmp / "djl.tar.gz"
        subprocess.run(["tar", "-czf", str(tarball), "-C", str(top.parent), top.name], check=True)
        (self.java_home / "bin").mkdir()
        self.executable(self.java_home / "bin" / "javac", f'echo "$@" > {self.tmp}/javac.args')
        return tarball

    def test_a_cuda_build_runs_cmake_fixes_the_link_and_installs(self):
        tarball = self.fake_sources()
        # cmake records its arguments; make writes the link command the way CMake does, with a direct cudart link
        fakes = {"cmake": f'echo "$@" > {self.tmp}/cmake.args',
                 "make": "mkdir -p CMakeFiles/djl_torch.dir && echo 'printf \"%s \" -Wl,-rpath,$ORIGIN "
                         "/usr/local/cuda/lib64/libcudart.so.13 -ltorch -lCUDA_nvrtc_LIBRARY-NOTFOUND > libdjl_torch.so'"
                         " > CMakeFiles/djl_torch.dir/link.txt && echo unfixed > libdjl_torch.so"}
        result = self.run_setup("--python", str(self.fake_python(version="2.14.0+cu130")), "--djl-src", str(tarball),
                                path=self.path_without("cmake", "make", fakes=fakes))
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        native = self.gpu_dir / "djl-src" / "engines" / "pytorch" / "pytorch-native"
        self.assertIn("CXX_STANDARD 20", (native / "CMakeLists.txt").read_text())
        self.assertIn(f"-h {native}/build/include", (self.tmp / "javac.args").read_text())
        cmake = (self.tmp / "cmake.args").read_text()
        self.assertIn(f"-DUSE_CUDA=1 -DCMAKE_CUDA_COMPILER={self.nvcc} -DTORCH_CUDA_ARCH_LIST=9.0", cmake)
        self.assertTrue(cmake.strip().endswith(str(native)), cmake)
        installed = self.gpu_dir / "djl" / "pytorch" / f"2.14.0-cu130-{ARCH}" / "0.35.1-libdjl_torch.so"
        # relinked: no direct cudart or nvrtc, and the $ORIGIN rpath kept literally
        self.assertEqual("-Wl,-rpath,$ORIGIN -ltorch ", installed.read_text().replace("  ", " "))
        self.assertIn("export PYTORCH_VERSION=2.14.0", (self.gpu_dir / "env.sh").read_text())

    def test_a_failed_compile_says_so_with_the_first_error(self):
        tarball = self.fake_sources()
        fakes = {"cmake": "echo '-- Configuring done'",
                 "make": "echo 'ai_djl_pytorch_jni_PyTorchLibrary_tensor.cc:12: error: no member named foo in at'; exit 2"}
        result = self.run_setup("--python", str(self.fake_python(version="2.11.0+cu130")), "--djl-src", str(tarball),
                                path=self.path_without("cmake", "make", fakes=fakes))
        self.assertEqual(1, result.returncode)
        self.assertIn("DJL 0.35.1's JNI did not compile against torch 2.11.0+cu130: "
                      "ai_djl_pytorch_jni_PyTorchLibrary_tensor.cc:12: error: no member named foo in at "
                      f"(full log: {self.gpu_dir}/build.log)", result.stderr)
        self.assertFalse((self.gpu_dir / "env.sh").exists())

    # ---- the recorded settings --------------------------------------------------------------------------------

    def install_prebuilt(self):
        prebuilt = self.tmp / "libdjl_torch.so"
        prebuilt.write_bytes(b"\x7fELF prebuilt for 2.11.0+cu130")
        result = self.run_setup("--python", str(self.fake_python()), "--jni", str(prebuilt))
        self.assertEqual(0, result.returncode, result.stderr)
        return prebuilt

    def test_the_jni_is_installed_where_djl_looks_and_the_settings_recorded(self):
        prebuilt = self.install_prebuilt()
        installed = self.gpu_dir / "djl" / "pytorch" / f"2.11.0-cu130-{ARCH}" / "0.35.1-libdjl_torch.so"
        self.assertEqual(prebuilt.read_bytes(), installed.read_bytes())
        lines = (self.gpu_dir / "env.sh").read_text().splitlines()
        self.assertTrue(lines[0].startswith("# Written by ./memfit gpu-setup on "), lines[0])
        self.assertIn(f"torch 2.11.0+cu130 from {self.tmp}/python", lines[0])
        self.assertEqual([f"export PYTORCH_LIBRARY_PATH={self.torch_lib}",
                          "export PYTORCH_VERSION=2.11.0",
                          "export PYTORCH_FLAVOR=cu130",
                          f"export DJL_CACHE_DIR={self.gpu_dir}/djl",
                          f"export ENGINE_CACHE_DIR={self.gpu_dir}/djl",
                          f"export MEMFIT_GPU_JNI={installed}"], lines[2:8])
        self.assertIn(f"export LD_LIBRARY_PATH={self.cuda_home}/lib64", lines[8])
        self.assertEqual([], list(self.gpu_dir.glob("**/*.partial")))

    def exported(self, command, env=None):
        """The environment a bash snippet that sources lib.sh ends with, as a dict."""
        environment = {"PATH": os.environ["PATH"], "MEMFIT_ROOT": str(self.tmp / "root"),
                       "MEMFIT_GPU_DIR": str(self.gpu_dir), "LD_LIBRARY_PATH": "/opt/other"}
        environment.update(env or {})
        output = subprocess.run(["bash", "-c", f". {LIB}; {command}; env -0"], capture_output=True, text=True,
                                env=environment, check=True).stdout
        return dict(item.split("=", 1) for item in output.split("\0") if "=" in item)

    def test_lib_sh_exports_the_recorded_settings(self):
        self.install_prebuilt()
        env = self.exported("memfit_gpu_env; memfit_gpu_env")
        self.assertEqual(str(self.torch_lib), env["PYTORCH_LIBRARY_PATH"])
        self.assertEqual("2.11.0", env["PYTORCH_VERSION"])
        self.assertEqual("cu130", env["PYTORCH_FLAVOR"])
        self.assertEqual(str(self.gpu_dir / "djl"), env["ENGINE_CACHE_DIR"])
        # sourced twice (a command, then the kernel it starts): the CUDA folder is added once
        self.assertEqual(f"{self.cuda_home}/lib64:/opt/other", env["LD_LIBRARY_PATH"])
        off = self.exported("memfit_gpu_env", env={"MEMFIT_GPU": "0"})
        self.assertNotIn("PYTORCH_FLAVOR", off)
        self.assertNotIn("PYTORCH_FLAVOR", self.exported("memfit_gpu_env", env={"MEMFIT_GPU_DIR": str(self.tmp / "none")}))

    def test_the_kernel_launcher_reads_the_settings_at_each_start(self):
        # a 'java' that prints its environment: the launcher execs it with the kernelspec's settings
        java = self.executable(self.tmp / "java", "env")
        self.exported("memfit_kernelspec", env={"MEMFIT_JAVA": str(java), "MEMFIT_GPU_DIR": ""})
        launcher = self.tmp / "root" / "build" / "jupyter" / "kernels" / "memfit" / "launch.sh"
        log = launcher.parent / "kernel.log"
        subprocess.run([str(launcher), "connection.json"], env={"PATH": os.environ["PATH"]}, check=True)
        self.assertNotIn("PYTORCH_FLAVOR=", log.read_text(), "no settings before gpu-setup")
        self.install_prebuilt()   # into root/build/gpu, the launcher's default folder
        log.unlink()
        subprocess.run([str(launcher), "connection.json"], env={"PATH": os.environ["PATH"]}, check=True)
        started = log.read_text().splitlines()
        self.assertIn("PYTORCH_FLAVOR=cu130", started)
        self.assertIn(f"PYTORCH_LIBRARY_PATH={self.torch_lib}", started)


if __name__ == "__main__":
    unittest.main()
