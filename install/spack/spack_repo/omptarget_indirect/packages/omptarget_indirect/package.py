# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Spack package of omptarget-indirect (docs/install.md, "Spack")."""

import os

from spack_repo.builtin.build_systems.generic import Package

from spack.package import *

#: The releases the project supports: those `cargo xtask install --llvm` builds plugins for.
SUPPORTED_LLVM = "19,21:23"

#: The GPU architectures `cargo xtask install` builds the device library for by default.
DEFAULT_SM = ("sm_70", "sm_90")
DEFAULT_GFX = ("gfx90a", "gfx942", "gfx1100")


class OmptargetIndirect(Package):
    """OpenMP `declare target indirect` for LLVM's offload runtime: calls through host function
    pointers, C++ virtual calls on objects the host built, and Fortran procedure pointers reach
    the device copies on NVIDIA, AMD and x86_64 offload devices, with no change to the program.
    A clang/flang plugin pair, a device library and a registration library for the stock
    libomptarget; compile with `clang++ --config=$OMPTARGET_INDIRECT_CONFIG_DIR/clang-NN.cfg`
    or use `find_package(OmptargetIndirect)`."""

    # A release is the tarball `cargo xtask vendor` writes (the sources with every crate: the
    # build uses no network), listed with its sha256 and where it is published:
    #     version("0.1.0", sha256="<sha256sum of omptarget-indirect-0.1.0-src.tar.gz>", url="...")
    # A site that mirrors a release adds that line in a repository of its own, whose package
    # derives from this one (docs/install.md, "Spack").

    license("Apache-2.0 WITH LLVM-exception")

    # A checkout builds as any version given exactly, with no fetching:
    # `spack dev-build -d <checkout> omptarget-indirect@=develop`. Its crates come from cargo's
    # cache (CARGO_HOME); the release tarball vendors them.

    variant("fortran", default=True, description="The Fortran module and flang-NN.cfg (needs llvm+flang, LLVM 21+)")
    variant(
        "libomptarget16_plugins",
        default=True,
        description="With LLVM 19: the libomptarget 16 plugins its programs run with (LLVM 16's "
        "libomptarget.so.16 is the site's to provide)",
    )
    variant(
        "sm",
        values=any_combination_of("sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90").with_default(
            ",".join(DEFAULT_SM)
        ),
        description="NVIDIA architectures of the device library",
    )
    variant(
        "gfx",
        values=any_combination_of("gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100").with_default(
            ",".join(DEFAULT_GFX)
        ),
        description="AMD architectures of the device library",
    )

    # clang and its headers (the frontend plugin), LLVM's shared library (the pass plugin), and
    # the offload runtime of that release; lld links the AMD images. The plugins run inside clang
    # and flang on the LLVM they are linked to, so those must link libLLVM.so (+link_llvm_dylib:
    # Spack's default links them statically, where the pass plugin cannot work: docs/static-llvm.md).
    depends_on(f"llvm@{SUPPORTED_LLVM} +clang +lld +llvm_dylib +link_llvm_dylib", type=("build", "link", "run"))
    depends_on("llvm +flang", when="+fortran", type=("build", "link", "run"))
    conflicts("+fortran", when="^llvm@:20", msg="flang compiles the Fortran programs from LLVM 21 on")
    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("gmake", type="build")
    # The device library needs the nightly of the sources' rust-toolchain.toml with its standard
    # library's sources (`-Zbuild-std`): a site declares that toolchain as an external, e.g.
    #     rust: {externals: [{spec: "rust@nightly +src", prefix: ~/.rustup/toolchains/nightly-...}],
    #            buildable: false}
    depends_on("rust@nightly +src", type="build")

    def setup_build_environment(self, env):
        # cargo's cache and its build inside the stage, never the user's home.
        if not self.spec.satisfies("@develop") or "CARGO_HOME" not in os.environ:
            env.set("CARGO_HOME", join_path(self.stage.path, "cargo-home"))
        env.set("CARGO_NET_OFFLINE", "true")

    def install(self, spec, prefix):
        cargo = which("cargo", required=True)
        arguments = ["xtask", "install", "--prefix", prefix, "--llvm", spec["llvm"].prefix]
        for vendor in ("sm", "gfx"):
            archs = [a for a in spec.variants[vendor].value if a != "none"]
            arguments += [f"--{vendor}", ",".join(archs) or "none"]
        if spec.satisfies("~fortran"):
            arguments += ["--without", "fortran"]
        if spec.satisfies("~libomptarget16_plugins"):
            arguments += ["--without", "libomptarget16-plugins"]
        cargo(*arguments)

    @run_after("install")
    def cache_test_sources(self):
        cache_extra_test_sources(self, ["examples/host_objects.cpp", "examples/procedure_pointers.F90"])

    @property
    def _strict_library(self):
        """The strict device, which a program runs on under LD_PRELOAD."""
        return join_path(self.prefix.lib, "libomptarget-indirect-strict.so")

    def _config(self, compiler):
        major = self.spec["llvm"].version.up_to(1)
        return join_path(self.prefix.share, "omptarget-indirect", f"{compiler}-{major}.cfg")

    def _run_on_strict_device(self, compiler, source, program):
        """Builds `source` with `compiler` of the LLVM and its configuration file, for the x86_64
        device, and runs it on the strict device; it prints ": ok" when the device copies ran."""
        compile = Executable(join_path(self.spec["llvm"].prefix.bin, compiler))
        config = self._config("flang" if compiler == "flang" else "clang")
        compile(f"--config={config}", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", source, "-o", program)
        run = Executable(f"./{program}")
        run.add_default_env("LD_PRELOAD", self._strict_library)
        out = run(output=str.split, error=str.split)
        assert ": ok" in out, out

    def setup_run_environment(self, env):
        env.prepend_path("CMAKE_PREFIX_PATH", self.prefix)
        env.set("OMPTARGET_INDIRECT_CONFIG_DIR", join_path(self.prefix.share, "omptarget-indirect"))
        env.set("OMPTARGET_INDIRECT_STRICT", self._strict_library)

    def setup_dependent_build_environment(self, env, dependent_spec):
        self.setup_run_environment(env)

    def test_strict_device(self):
        """a C++ program built with clang-NN.cfg runs its device copies on the strict device"""
        examples = join_path(self.test_suite.current_test_cache_dir, "examples")
        self._run_on_strict_device("clang++", join_path(examples, "host_objects.cpp"), "host_objects")

    def test_fortran_on_strict_device(self):
        """a Fortran program built with flang-NN.cfg runs its device copy on the strict device"""
        if not self.spec.satisfies("+fortran"):
            raise SkipTest("built ~fortran")
        examples = join_path(self.test_suite.current_test_cache_dir, "examples")
        self._run_on_strict_device("flang", join_path(examples, "procedure_pointers.F90"), "procedure_pointers")
