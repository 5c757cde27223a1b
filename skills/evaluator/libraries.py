"""The CUDA libraries kernels may use: cuBLAS, cuBLASLt, cuDNN (linked) and CUTLASS/CuTe (headers).

A library is used when a file of `kernels/` includes one of its headers (`<cublas_v2.h>`,
`<cublasLt.h>`, `<cudnn.h>`, `<cutlass/...>`, `<cute/...>`); the build then adds its include folder
and links its shared library, so the agent writes no build file (docs/kernel-abi.md, "Libraries").

Where a library is looked for, in order:
1. the `nvidia-*` wheels that torch's CUDA build depends on (`nvidia-cublas` in `nvidia/cu13/`,
   older `nvidia-cublas-cu12` in `nvidia/cublas/`, `nvidia-cudnn-cu13` in `nvidia/cudnn/`) and the
   `nvidia-cutlass` wheel (`cutlass_library/source/include`), under the folders of the running
   interpreter's `sys.path`, as torch's own loader finds them: these are the copies torch loads
   into the candidate's process, and a process holds one copy of a library (same soname);
2. the CUDA toolkit that nvcc uses (cuBLAS ships with a full toolkit; cuDNN and CUTLASS do not).

This module reads files only; it imports neither torch nor the compilers.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path
from typing import Literal

import msgspec

LibraryName = Literal["cublas", "cublasLt", "cudnn", "cutlass"]
"""A library the build knows how to find."""


class LibrarySpec(msgspec.Struct, frozen=True, kw_only=True):
    """How to recognise, find and link one library."""

    name: LibraryName
    """Key used in results and messages."""
    title: str
    """Its name for people: "cuBLAS"."""
    include: re.Pattern[str]
    """Matches the include names (inside <> or "") that select the library."""
    probe: str
    """A header whose presence marks the library's include folder."""
    wheel_dirs: tuple[str, ...]
    """Folders under a sys.path entry that hold include/ and lib/ of the wheel."""
    wheel_include: str
    """The include folder inside a wheel folder ("include", or the path of a header-only wheel)."""
    own_headers: str | None
    """Glob of the library's own files in a wheel's include folder, which other wheels share
    (nvidia/cu13/include also holds nvidia-cuda-runtime's cuda_runtime.h, ...): only these are put
    on the include path (header_view), so the toolkit's own headers are never shadowed. None: the
    folder holds the library alone."""
    wheel: str
    """The pip package that provides it (named in the not-found message)."""
    links: tuple[str, ...]
    """Shared libraries to link, in load order ("cublasLt" before "cublas"); empty: header-only."""
    in_toolkit: bool
    """A full CUDA toolkit ships it."""
    version_file: str
    """Header (relative to the include folder) holding the version macros."""
    version_macros: tuple[str, str, str]
    """Major, minor and patch macros in version_file."""


SPECS: dict[LibraryName, LibrarySpec] = {
    "cublas": LibrarySpec(
        name="cublas", title="cuBLAS", include=re.compile(r"cublas(_v2|_api)?\.h"), probe="cublas_v2.h",
        wheel_dirs=("nvidia/cu13", "nvidia/cublas"), wheel_include="include", wheel="nvidia-cublas",
        own_headers="cublas*.h", links=("cublasLt", "cublas"), in_toolkit=True, version_file="cublas_api.h",
        version_macros=("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH"),
    ),
    "cublasLt": LibrarySpec(
        name="cublasLt", title="cuBLASLt", include=re.compile(r"cublasLt\.h"), probe="cublasLt.h",
        wheel_dirs=("nvidia/cu13", "nvidia/cublas"), wheel_include="include", wheel="nvidia-cublas",
        own_headers="cublas*.h", links=("cublasLt",), in_toolkit=True, version_file="cublas_api.h",
        version_macros=("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH"),
    ),
    "cudnn": LibrarySpec(
        name="cudnn", title="cuDNN", include=re.compile(r"cudnn(_\w+)?\.h"), probe="cudnn.h",
        wheel_dirs=("nvidia/cudnn",), wheel_include="include", wheel="nvidia-cudnn-cu13",
        own_headers="cudnn*.h", links=("cudnn",), in_toolkit=False, version_file="cudnn_version.h",
        version_macros=("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"),
    ),
    "cutlass": LibrarySpec(
        name="cutlass", title="CUTLASS/CuTe", include=re.compile(r"(cutlass|cute)/[\w./]+"),
        probe="cutlass/cutlass.h", wheel_dirs=("cutlass_library",), wheel_include="source/include",
        wheel="nvidia-cutlass", own_headers=None, links=(), in_toolkit=False, version_file="cutlass/version.h",
        version_macros=("CUTLASS_MAJOR", "CUTLASS_MINOR", "CUTLASS_PATCH"),
    ),
}


class FoundLibrary(msgspec.Struct, kw_only=True):
    """One library a build uses, and where it came from."""

    name: LibraryName
    """Which library."""
    version: str
    """From its version header, e.g. "13.10.0"; "" when the header names none."""
    origin: Literal["wheel", "toolkit"]
    """An nvidia-* wheel found through sys.path, or the CUDA toolkit of nvcc."""
    include_dirs: list[str]
    """Folders added with -I."""
    lib_dir: str | None
    """Folder of the shared libraries (linked with -L and an rpath); None for header-only."""
    libs: list[str]
    """The shared library files linked, in order, e.g. ["libcublasLt.so.13", "libcublas.so.13"]."""
    fingerprint: str
    """Version plus each linked file's path, size and mtime: part of the build cache keys."""


# Comments are blanked (newlines kept) but string literals are kept: `#include "x.h"` is a literal.
_COMMENT_OR_LITERAL = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S
)
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"\n]+)[>\"]", re.M)


def _strip_comments(text: str) -> str:
    def blank(m: re.Match[str]) -> str:
        s = m.group()
        return "\n" * s.count("\n") + " " if s.startswith("/") else s

    return _COMMENT_OR_LITERAL.sub(blank, text)


def wanted(files: dict[str, bytes]) -> dict[LibraryName, str]:
    """The libraries the files include, each with where it is first included
    ("kernels/gemm.cu:2: <cublas_v2.h>"), in SPECS order."""
    first: dict[LibraryName, str] = {}
    for fname, data in files.items():
        text = _strip_comments(data.decode("utf-8", errors="replace"))
        for m in _INCLUDE.finditer(text):
            header = m.group(1).strip()
            for spec in SPECS.values():
                if spec.name not in first and spec.include.fullmatch(header):
                    line = text.count("\n", 0, m.start()) + 1
                    first[spec.name] = f"kernels/{fname}:{line}: <{header}>"
    return {name: first[name] for name in SPECS if name in first}


def locate(name: LibraryName, roots: list[str], toolkit_include: str | None) -> FoundLibrary | str:
    """The library found under the wheel folders of `roots` (sys.path entries) or in the toolkit
    whose include folder is `toolkit_include`; else a message saying where it was looked for."""
    spec = SPECS[name]
    looked: list[str] = []
    for root in roots:
        for sub in spec.wheel_dirs:
            base = Path(root or ".") / sub
            include = base / spec.wheel_include
            if (include / spec.probe).is_file():
                # Resolved: the sandbox binds the interpreter's folders by their real paths, and the
                # rpath must name a folder that exists there.
                got = _found(spec, "wheel", include.resolve(), (base / "lib").resolve())
                if isinstance(got, FoundLibrary):
                    return got
                looked.append(got)
    if spec.in_toolkit and toolkit_include is not None:
        include = Path(toolkit_include)
        if (include / spec.probe).is_file():
            lib_dir = next((d for d in (include.parent / "lib", include.parent / "lib64")
                            if d.is_dir()), include.parent / "lib")
            got = _found(spec, "toolkit", include, lib_dir)
            if isinstance(got, FoundLibrary):
                return got
            looked.append(got)
        else:
            looked.append(f"not in the CUDA toolkit ({include})")
    elif toolkit_include is not None:
        looked.append("the CUDA toolkit does not ship it")
    wheels = " or ".join(spec.wheel_dirs)
    looked.append(f"no {spec.wheel} wheel ({wheels}/) under the interpreter's sys.path")
    return f"{spec.title} was not found: " + "; ".join(looked)


def _found(spec: LibrarySpec, origin: Literal["wheel", "toolkit"], include: Path,
           lib_dir: Path) -> FoundLibrary | str:
    version = _version(include / spec.version_file, spec.version_macros)
    include_dirs = [str(include)]
    if spec.name == "cutlass":
        util = include.parent / "tools" / "util" / "include"  # cutlass/util/*.h (host helpers)
        if util.is_dir():
            include_dirs.append(str(util))
    libs: list[str] = []
    for stem in spec.links:
        file = _shared_library(lib_dir, stem)
        if file is None:
            return f"{spec.title} headers at {include} but no lib{stem}.so* in {lib_dir}"
        libs.append(file.name)
    parts = [spec.name, version, origin, *include_dirs]
    for file_name in libs:
        st = (lib_dir / file_name).stat()
        parts += [str(lib_dir / file_name), str(st.st_size), str(st.st_mtime_ns)]
    return FoundLibrary(name=spec.name, version=version, origin=origin, include_dirs=include_dirs,
                        lib_dir=str(lib_dir) if libs else None, libs=libs,
                        fingerprint="\0".join(parts))


def _shared_library(lib_dir: Path, stem: str) -> Path | None:
    """lib{stem}.so, else the shortest lib{stem}.so.N* (the wheels ship only the soname file)."""
    plain = lib_dir / f"lib{stem}.so"
    if plain.is_file():
        return plain
    versioned = sorted(lib_dir.glob(f"lib{stem}.so.[0-9]*"), key=lambda p: (len(p.name), p.name))
    return next((p for p in versioned if p.is_file()), None)


def _version(header: Path, macros: tuple[str, str, str]) -> str:
    try:
        text = header.read_text(errors="replace")
    except OSError:
        return ""
    values = []
    for macro in macros:
        m = re.search(rf"^\s*#\s*define\s+{macro}\s+(\d+)", text, re.M)
        if m is None:
            return ""
        values.append(m.group(1))
    return ".".join(values)


def header_view(lib: FoundLibrary, root: Path) -> list[str]:
    """The folders to put on the include path for `lib`: for a wheel whose include folder other
    wheels share, a folder under `root` holding links to the library's own headers alone (made
    once per fingerprint, atomically); else the library's include folders."""
    spec = SPECS[lib.name]
    if lib.origin != "wheel" or spec.own_headers is None:
        return lib.include_dirs
    source = Path(lib.include_dirs[0])
    digest = hashlib.sha256(f"{lib.fingerprint}\0{spec.own_headers}".encode()).hexdigest()[:24]
    view = root / f"{lib.name}-{digest}"
    if not view.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=".view-"))
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide it from another user sharing the cache
        for header in sorted(source.glob(spec.own_headers)):
            (tmp / header.name).symlink_to(header)
        try:
            tmp.rename(view)
        except OSError:  # another build made it first: theirs is the same
            shutil.rmtree(tmp, ignore_errors=True)
    return [str(view), *lib.include_dirs[1:]]


def link_flags(found: list[FoundLibrary]) -> list[str]:
    """nvcc flags that link every library of `found`: each file by its full path (no -L: a wheel's
    lib folder also holds nvidia-cuda-runtime's libcudart_static.a, which must not replace the
    toolkit's), kept as a dependency (--no-as-needed: libcublas needs libcublasLt and has no rpath
    of its own), with an rpath so it loads from where it was found even outside torch's process."""
    flags: list[str] = ["-Xlinker", "--no-as-needed"] if any(lib.libs for lib in found) else []
    seen: set[str] = set()
    for lib in found:
        if lib.lib_dir is None:
            continue
        files = [f"{lib.lib_dir}/{f}" for f in lib.libs if f"{lib.lib_dir}/{f}" not in seen]
        seen.update(files)  # cuBLAS and cuBLASLt share libcublasLt
        for file in files:
            flags += ["-Xlinker", file]
        if files:
            flags += ["-Xlinker", f"-rpath={lib.lib_dir}"]
    return flags


def describe(found: list[FoundLibrary]) -> str:
    """One line per library: "cuBLAS 13.10.0 (wheel, /…/nvidia/cu13/include)"."""
    return "\n".join(
        f"{SPECS[lib.name].title} {lib.version or '(version unknown)'} ({lib.origin}, {lib.include_dirs[0]})"
        for lib in found
    )
