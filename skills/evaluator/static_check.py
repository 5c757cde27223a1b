"""Static checks of the candidate's sources, by parse (Python AST; C++ tokens without comments
and string literals), before anything runs. Each flag says why, so the agent learns the rule.

Rows of EXPLOITS.md: 2 (threads/processes), 4 and 10 (timer tampering, introspection), 15 (torch
fallback, try/except fallback, subclassing Model, host compute), 16 (profiler detection), 17 (L2
persistence), 18 (importing or editing the reference), 1 (extra streams). Runtime checks back these
up (skills/evaluator/harness/launches.py, the dispatch recorder in the candidate worker), since a static check
can be dodged; docs/static-checks.md lists each rule, its cheat, its fair twin and what gets past.

Names are checked wherever they appear (attribute, import, from-import, getattr literal), because
every spelling reaches the same object: `from os.path import sys` is `os.path.sys`.

Computed attribute access is closed off by construction, not by listing helpers: an attribute may
only be reached by a name written in the source. `getattr`/`hasattr` are allowed only as direct
calls with a string literal (which then passes the same name rules as `obj.name`); any other
reference to them (as a value: `functools.reduce(getattr, ...)`, `partial(getattr, ...)`,
`map(getattr, ...)`) is flagged, as is `vars`, every dunder attribute but a few harmless ones
(`__dict__`, `__getattribute__`, `__globals__`, ...), `operator`/`inspect`/`string` (attrgetter,
getattr_static, Formatter), and `str.format` fields with `.`/`[` or on a format string that is not
a literal. With those gone, every attribute a program reaches is spelled in its AST.
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

from skills.evaluator.results import Flag

# The only modules model_new.py may import: torch and the kernels' binding, plus plain-Python
# helpers that hold no door to the process (cheat: `import pydoc; pydoc.locate("sys")`; fair:
# `import math`, `from typing import Optional`).
ALLOWED_MODULES = {"torch", "kagent_ext", "math", "os", "typing", "__future__", "functools", "itertools",
                   "collections", "dataclasses", "enum", "abc", "numbers"}
FORBIDDEN_MODULES = {
    "threading": "threads", "_thread": "threads", "multiprocessing": "processes", "concurrent": "threads/processes",
    "subprocess": "processes", "asyncio": "background tasks", "ctypes": "raw memory and foreign calls",
    "cffi": "foreign calls", "sys": "interpreter internals", "gc": "walking the heap", "inspect": "introspection",
    "importlib": "dynamic imports", "builtins": "patching builtins", "socket": "network", "signal": "signals",
    "pickle": "deserialising objects", "marshal": "code objects", "shutil": "file operations",
    "pathlib": "file access", "io": "file access", "tempfile": "file access", "time": "clock access",
    "traceback": "introspection", "atexit": "exit hooks", "weakref": "object tracking", "mmap": "raw memory",
    "resource": "process limits", "model": "the reference problem", "operator": "attribute getters",
    "string": "attribute access by computed names (string.Formatter)", "posix": "raw system calls",
    "types": "building functions and code objects", "pydoc": "imports by name", "runpy": "running code",
    "code": "running code", "copyreg": "deserialising objects", "pkgutil": "dynamic imports", "site": "interpreter setup",
}
# Array libraries and pure-Python number crunching: a forward that computes there instead of in its
# kernels (cheat: `y.numpy()[:] = np.maximum(x.numpy(), 0)`, invisible to the op recorder; fair:
# `math.sqrt(dim)` on a Python int).
HOST_COMPUTE_MODULES = {"numpy", "scipy", "numba", "cupy", "jax", "jaxlib", "tensorflow", "pandas", "sklearn",
                        "triton", "mpmath", "sympy", "statistics", "array", "struct", "decimal", "fractions", "cmath"}
HOST_COMPUTE_WHY = "compute must happen in your own kernels (kernels/*.cpp|*.cu), not on the host in Python or another library"
OS_ALLOWED = {"path"}
BANNED_CALLS = {"open": "file access", "exec": "dynamic code", "eval": "dynamic code", "compile": "dynamic code",
                "__import__": "dynamic imports", "globals": "introspection", "locals": "introspection",
                "vars": "introspection", "breakpoint": "debugger", "setattr": "patching objects",
                "delattr": "patching objects", "help": "imports by name (pydoc)", "input": "reading stdin"}
# torch functions a forward may call: allocation and shape bookkeeping, no arithmetic.
TORCH_ALLOWED = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "device", "Size",
                 "is_tensor", "no_grad", "get_default_dtype", "finfo", "iinfo"}
STREAM_CALLS = {"Stream", "stream", "ExternalStream", "set_stream"}
# Attribute names that reach interpreter internals (modules, frames, globals, closures, defaults):
# `os.path.sys.modules[...]` or `f.__globals__` would let code patch the harness's clock. Module
# names count too: `torch.os.system`, `torch.serialization.pickle` reach a banned module through
# one that imported it. (`model` stays out: `self.model` is a fair attribute name.)
BANNED_ATTRS = {"sys", "modules", "__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__",
                "__closure__", "__defaults__", "__kwdefaults__", "__getattribute__", "__setattr__",
                "__import__", "__loader__", "__spec__", "__bases__", "__mro__", "f_globals", "f_locals",
                "f_back", "gi_frame", "cr_frame", "tb_frame", "_get_dispatch_mode", "_C", "os",
                *(m for m in FORBIDDEN_MODULES if m != "model")}
# Dunder attributes and names fair code uses (`super().__init__()`, `__name__`); every other dunder is
# an interpreter internal (`__getattribute__`, `__reduce_ex__`, `__array__`, `__class__.__base__`).
DUNDER_ATTRS_OK = {"__init__", "__name__", "__qualname__", "__doc__", "__module__", "__len__", "__call__",
                   "__enter__", "__exit__", "__iter__", "__next__", "__getitem__", "__contains__", "__repr__",
                   "__str__", "__post_init__"}
DUNDER_NAMES_OK = {"__name__", "__file__", "__doc__", "__debug__", "__class__", "__all__", "__slots__"}
# Doors around the dispatch-mode op recorder, by a name no fair code spells (cheat:
# `with torch._C._DisableTorchDispatch(): return torch.relu(x)`, or compute run by code the
# recorder never sees: torch.compile/inductor output, jiterator, a replayed CUDA graph). load_inline (torch.utils.cpp_extension) stays allowed: it is how KernelBench files build
# their own C++ (DESIGN §5); fair code uses none of the rest.
DISPATCH_NAMES = {
    "_disable_current_modes", "_DisableTorchDispatch", "DisableTorchFunction", "DisableTorchFunctionSubclass",
    "_disable_torch_function", "_pop_mode", "_push_mode", "_pop_mode_temporarily", "_set_dispatch_mode",
    "_unset_dispatch_mode", "_python_dispatch", "TorchDispatchMode", "TorchFunctionMode", "__torch_function__",
    "__torch_dispatch__", "_DisablePythonDispatcher", "_EnablePythonDispatcher", "_ExcludeDispatchKeyGuard",
    "_dynamo", "_inductor", "overrides", "_ops", "_prims", "_refs", "_decomp", "_higher_order_ops", "_subclasses",
    "_functorch", "functorch", "_export", "_library", "_custom_ops", "custom_op",
    "jiterator", "CUDAGraph", "make_graphed_callables", "graphs", "_pop_torch_dispatch_stack",
    "_push_on_torch_dispatch_stack", "_pop_torch_function_stack", "_push_on_torch_function_stack", "_disable_infra_mode",
    "_unset_infra_mode", "_DisableFuncTorch", "_disabled_torch_dispatch_impl", "_disabled_torch_function_impl",
    "_set_tracing_state",
}
# The same doors under names a fair program may use elsewhere (`kagent_ext.ops`), so only on a torch
# path: torch.compile/jit/fx/library/ops/export/func/hub/package/distributed/cuda.graph, and every
# private `torch._x` (torch._C, torch._dynamo, ...).
TORCH_DOORS = {"compile", "jit", "fx", "library", "ops", "export", "func", "hub", "package", "distributed", "graph", "vmap"}
# State that tells the profiler (or tracing, or a mode) is watching: a kernel that runs only then
# (row 16). The harness times forward under no_grad, so no fair forward needs to ask (cheat:
# `if torch.autograd.profiler._is_profiler_enabled: ops.relu(x, y, n)`; fair: `with torch.no_grad():`).
PROFILER_NAMES = {
    "profiler", "_profiler", "autograd", "_autograd", "is_grad_enabled", "set_grad_enabled", "enable_grad",
    "grad_mode", "inference_mode", "is_inference_mode_enabled", "is_inference", "_is_profiler_enabled",
    "_get_tracing_state", "is_scripting", "is_tracing", "is_compiling", "is_dynamo_compiling", "compiler",
    "_is_torch_function_mode_enabled", "_is_torch_function_enabled", "_len_torch_dispatch_stack",
    "_get_dispatch_mode", "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack",
    "_get_current_function_mode", "_get_current_function_mode_stack", "record_function", "kineto", "_kineto",
    "itt", "nvtx", "is_current_stream_capturing", "_is_tracing", "_len_torch_function_stack", "_get_dispatch_stack_at",
    "_get_function_stack_at", "_is_torch_function_all_disabled", "is_in_torch_dispatch_mode", "_is_in_torch_dispatch_mode",
    "any_torch_dispatch_mode_on_stack", "_is_in_non_infra_torch_dispatch_mode", "_detect_infra_mode",
    "_get_autograd_fallback_mode", "is_in_any_mode_without_ignore_compile_internals",
}
# Ways to read or write tensor contents from Python without an aten op the recorder sees (measured:
# .tolist(), .numpy(), .apply_(), .map_(), storage writes, __array__, dlpack record nothing).
HOST_COMPUTE_ATTRS = {"numpy", "tolist", "item", "apply_", "map_", "map2_", "storage", "untyped_storage",
                      "_typed_storage", "__array__", "__array_interface__", "__cuda_array_interface__",
                      "__dlpack__", "to_dlpack", "from_dlpack", "dlpack"}
HOST_COMPUTE_CALLS = {"memoryview", "bytes", "bytearray"}
# The harness's environment (KAGENT_MARK_FD is the timing marks' socket): none of the kernel's business.
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv", "expandvars"}
# A KAGENT_ setting named in a string (`os.path.expandvars("$KAGENT_MARK_FD")`); KAGENT_EXPORT is the kernels' macro.
KAGENT_SETTING = re.compile(r"KAGENT_(?!EXPORT\b|H\b)[A-Z]")
FORMAT_ATTRS = {"format", "format_map", "vformat", "get_field", "get_value"}
# typing evaluates string annotations (get_type_hints, ForwardRef): eval by another name.
EVAL_NAMES = {"get_type_hints", "ForwardRef", "_eval_type", "evaluate_forward_ref"}

CPP_RULES: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"\bstd\s*::\s*(thread|async|jthread)\b|\bpthread_create\b|"
                r"#\s*include\s*<\s*(thread|future|bits/std_thread\.h|bits/std_async\.h|pthread\.h)\s*>"),
     "threads", "kernels may not start threads: work must finish inside the call"),
    (re.compile(r"##"),
     "token_pasting", "preprocessor token pasting (##) can spell identifiers the checks look for; write names out"),
    (re.compile(r"\b(fork|vfork|clone|clone3|execv\w*|execl\w*|system|popen|posix_spawn\w*)\b"),
     "processes", "kernels may not start processes"),
    (re.compile(r"\b(syscall|socket|connect|sendto|sendmsg|getaddrinfo)\s*\("),
     "syscalls_network", "kernels may not make raw system calls or network connections"),
    (re.compile(r"\bcudaStreamCreate\w*\s*\(|\bcudaStreamPerThread\b|\bcudaStreamLegacy\b"),
     "stream_creation", "launch on the default stream; extra streams escape the caller's stream order"),
    (re.compile(r"\baccessPolicyWindow\b|\bcudaLimitPersistingL2CacheSize\b|\bcudaAccessPropertyPersisting\b"),
     "l2_persistence", "persisting-L2 access policies defeat the cache flush between timed calls"),
    (re.compile(r"\b(at|torch)\s*::\s*(?!empty\b|empty_like\b|Tensor\b|kFloat\b|kHalf\b|kBFloat16\b|kInt\b|kLong\b|"
                r"Scalar\b|ScalarType\b|IntArrayRef\b|TensorOptions\b|Device\b|kCUDA\b|kCPU\b|zeros\b|zeros_like\b|"
                r"cuda\s*::\s*getCurrentCUDAStream\b)(matmul|mm|bmm|addmm|conv\w*|linear|softmax|relu|gelu|sigmoid|"
                r"tanh|sum|mean|exp|log|add|sub|mul|div|layer_norm|batch_norm|einsum|cumsum|max|min)\s*\("),
     "torch_fallback", "C++ calls into torch/ATen compute ops; write the computation in your own kernels"),
    (re.compile(r"\b(fopen|fopen64|freopen|open|open64|openat|openat2|creat|ifstream|ofstream|fstream|opendir|"
                r"fdopendir|readlink|dlopen|mmap)\s*\("),
     "file_access", "kernels may not open files or libraries"),
    (re.compile(r"\b(clock_gettime|gettimeofday|rdtsc|__rdtsc|std\s*::\s*chrono)\b"),
     "clock_access", "kernels may not read host clocks"),
    # Cheat: `PyRun_SimpleString("import sys; ...")` or pybind11's `py::module_::import("sys")` from a
    # kernel, which reaches the interpreter behind every Python rule. Fair: `PYBIND11_MODULE` with
    # `m.def(...)` and `py::arg` in a torch-flavour extension (no raw C-API, no imports, no .attr).
    (re.compile(r"\b_?Py(_|[A-Z][A-Za-z]*_)\w+|#\s*include\s*<\s*(Python\.h|pybind11\s*/\s*(embed|eval)\.h)\s*>|"
                r"\bmodule_?\s*::\s*import\b|::\s*(eval|exec|eval_file|globals)\s*[<(]|\.\s*attr\s*\(|"
                r"\b(getattr|hasattr|setattr|delattr)\s*\("),
     "interpreter_access", "kernels may not call into the Python interpreter (Py* C-API, pybind11 import/eval/attr):"
     " the Python rules apply to all code"),
    # Cheat: `dlsym(RTLD_DEFAULT, "PyRun_SimpleString")` (libpython and libtorch are already loaded, so
    # no dlopen is needed), an asm label or alias attribute that renames a libtorch symbol, or
    # __builtin_frame_address to walk into the interpreter's frames. Fair: ordinary functions, and
    # extended `asm volatile("..." : ...)` (PTX, barriers).
    (re.compile(r"\b(dlsym|dlvsym|dlmopen|dlopen|dladdr|dladdr1|dlinfo|dl_iterate_phdr|__libc_dlsym|__libc_dlopen_mode)\b|"
                r"\bRTLD_[A-Z]+\b|#\s*include\s*<\s*(dlfcn|link)\.h\s*>|\b(__asm__|__asm|asm)\s*\(\s*\"\"\s*\)|"
                r"\b(alias|ifunc|weakref)\s*\(\s*\"\"|#\s*pragma\s+weak\b|\b__builtin_(return|frame|extract_return)_address\b|"
                r"\b_Unwind_\w+|\bunw_\w+|\bbacktrace\w*\s*\("),
     "dynamic_symbols", "kernels may not look up or rename symbols (dlopen/dlsym/RTLD_*, asm labels, alias) or walk"
     " the call stack: that reaches libpython and libtorch behind the checks"),
    # Cheat: `c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python); return x.relu();` or
    # `at::native::relu(x)`: ATen compute the dispatch-mode recorder never sees. Fair: torch::empty_like,
    # at::cuda::getCurrentCUDAStream.
    (re.compile(r"\bc10\s*::\s*impl\b|\b(Exclude|Include)DispatchKeyGuard\b|\bDispatchKey(Set)?\b|\bTorchDispatchModeTLS\b|"
                r"\bPython(Dispatcher|TorchFunction)TLS\b|\bAutoDispatchBelow\w*|\bAutoNonVariableTypeMode\b|"
                r"\bat\s*::\s*(native|cpu|_ops|redispatch|compositeexplicitautograd|compositeimplicitautograd)\s*::|"
                r"\bc10\s*::\s*Dispatcher\b|\bfindSchema\b|\bcallBoxed\b|\btorch\s*::\s*jit\b"),
     "dispatch_bypass", "kernels may not change torch's dispatch state or call ATen below the dispatcher;"
     " compute must happen in your own kernels"),
    # Cheat: run the kernel only while the profiler (or CUPTI) is attached. Fair: nothing needs to ask.
    (re.compile(r"\bprofiler\b|\bRecordFunction\w*|\bRECORD_FUNCTION\b|\bGradMode\b|\bInferenceMode\b|\bcupti\w*|"
                r"\bnvtx\w*|\bcudaProfiler(Start|Stop)\b|\bcuProfiler(Start|Stop)\b"),
     "profiler_detection", "kernels may not look at profiler or autograd state: a kernel must behave the same"
     " whether or not it is watched"),
    # Cheat: read KAGENT_MARK_FD (the timing marks' socket) or other harness settings. Fair: constants.
    (re.compile(r"\b(getenv|secure_getenv|__secure_getenv|environ|__environ|_environ|putenv|setenv|unsetenv|clearenv|"
                r"getauxval)\b"),
     "env_access", "kernels may not read or change the environment (the harness's settings are not theirs)"),
]


def strip_cpp(text: str) -> str:
    """C++ text with comments and string/char literals blanked, line numbers kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_cpp(name: str, text: str) -> list[Flag]:
    code = strip_cpp(text)
    flags = []
    for pattern, flag, why in CPP_RULES:
        if m := pattern.search(code):
            line = code.count("\n", 0, m.start()) + 1
            flags.append(Flag(name=flag, detail=f"kernels/{name}:{line}: `{m.group(0).strip()}`: {why}"))
    return flags


def _plain_format(text: str) -> bool:
    """A str.format template whose fields are plain names or positions (no `{0.__globals__}`, `{0[k]}`)."""
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return False
    for _, name, spec, _ in fields:
        if name is not None and ("." in name or "[" in name):
            return False
        if spec and "{" in spec and not _plain_format(spec):
            return False
    return True


class _PyChecker(ast.NodeVisitor):
    def __init__(self, tree: ast.AST) -> None:
        self.flags: list[Flag] = []
        self.seen: set[tuple[str, int, int]] = set()
        self.in_forward = False
        self.aliases: dict[str, str] = {}  # local name -> module path (torch, torch.nn.functional, os)
        self.modules: set[str] = set()  # names bound by `import X` (certainly modules)
        # Name nodes used as a call's function or an attribute's base (not passed around as values),
        # and the objects of getattr/hasattr calls with a literal name (checked as `obj.name`).
        self.used: set[int] = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Call):
                self.used.add(id(n.func))
                if isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr") and n.args:
                    self.used.add(id(n.args[0]))
            elif isinstance(n, ast.Attribute):
                self.used.add(id(n.value))

    def flag(self, name: str, node: ast.AST, detail: str) -> None:
        line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        if (name, line, col) not in self.seen:  # one flag per rule and place
            self.seen.add((name, line, col))
            self.flags.append(Flag(name=name, detail=f"model_new.py:{line or '?'}: {detail}"))

    def _name(self, name: str, node: ast.AST, on: str | None) -> None:
        """The rules on a name reached as an attribute of `on` (a dotted path, None if unknown), or imported."""
        torch_path = on is not None and on.split(".")[0] == "torch"
        what = f"{on}.{name}" if on else name
        if name in HOST_COMPUTE_ATTRS:
            self.flag("host_compute", node, f"uses {what}: reading or writing tensor contents from Python hides"
                      f" the work from the checks; {HOST_COMPUTE_WHY}")
        if name in BANNED_ATTRS or (name.startswith("__") and name.endswith("__") and name not in DUNDER_ATTRS_OK
                                    and name not in HOST_COMPUTE_ATTRS and name not in DISPATCH_NAMES):
            self.flag("introspection", node, f"reaches {what}: interpreter internals (modules, frames, globals,"
                      " dunder attributes) are off limits")
        if name in DISPATCH_NAMES or (torch_path and (name in TORCH_DOORS or (name.startswith("_") and not name.startswith("__")))):
            self.flag("dispatch_bypass", node, f"uses {what}: it switches torch's dispatch modes off or runs compute"
                      " through a door the op recorder does not watch (compile, jit, fx, ops, library, private torch._*);"
                      " compute must happen in your own kernels")
        if name in PROFILER_NAMES:
            self.flag("profiler_detection", node, f"uses {what}: code may not look at profiler, autograd, tracing"
                      " or mode state; a forward must behave the same whether or not it is watched")
        if name in ENV_NAMES:
            self.flag("env_access", node, f"uses {what}: the environment holds the harness's settings, not yours;"
                      " write your choices as constants")
        if name in EVAL_NAMES:
            self.flag("forbidden_call", node, f"uses {what}: it evaluates strings as code")
        roots = {v.split(".")[0] for v in self.aliases.values()}
        if on is not None and on.split(".")[0] != "torch" and on.split(".")[0] in roots \
                and name.startswith("_") and not name.startswith("__"):
            self.flag("introspection", node, f"reaches {what}: a module's private names are off limits")

    def _module(self, mod: str, node: ast.AST) -> None:
        parts = mod.split(".")
        root = parts[0]
        if root in HOST_COMPUTE_MODULES:
            self.flag("host_compute", node, f"imports {mod}: {HOST_COMPUTE_WHY}")
        elif root in FORBIDDEN_MODULES:
            self.flag("forbidden_import", node, f"imports {mod} ({FORBIDDEN_MODULES[root]} are not allowed in model_new.py)")
        elif root not in ALLOWED_MODULES:
            self.flag("forbidden_import", node, f"imports {mod}: model_new.py may import only "
                      + ", ".join(sorted(ALLOWED_MODULES)))
        for i, part in enumerate(parts[1:], 1):
            self._name(part, node, ".".join(parts[:i]))
        if root == "os" and len(parts) > 1 and parts[1] not in OS_ALLOWED:
            self.flag("forbidden_import", node, f"imports {mod} (only os.path is allowed)")

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._module(a.name, node)
            local = a.asname or a.name.split(".")[0]
            self.aliases[local] = a.name if a.asname else a.name.split(".")[0]
            self.modules.add(local)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level:
            self.flag("forbidden_import", node, "relative import: model_new.py may import only "
                      + ", ".join(sorted(ALLOWED_MODULES)))
        else:
            self._module(mod, node)
        for a in node.names:
            self.aliases[a.asname or a.name] = f"{mod}.{a.name}"
            if a.name == "*":
                self.flag("forbidden_import", node, f"from {mod} import *: import names one by one")
            if a.name == "Model":
                self.flag("imports_reference", node, "imports the reference Model; ModelNew must compute on its own")
            if a.name in FORBIDDEN_MODULES or a.name in HOST_COMPUTE_MODULES:
                self.flag("forbidden_import", node, f"from {mod} import {a.name}: a module reached through another"
                          " is still that module")
            if mod.split(".")[0] == "os" and a.name not in OS_ALLOWED:
                self.flag("forbidden_import", node, f"from {mod} import {a.name} (only os.path is allowed)")
            self._name(a.name, node, mod or None)
            if mod.split(".")[0] != "torch" and a.name.startswith("_") and not a.name.startswith("__"):
                self.flag("introspection", node, f"from {mod} import {a.name}: a module's private names are off limits")

    def _path(self, node: ast.expr) -> str | None:
        """Dotted path of a name/attribute chain with import aliases resolved (F.relu -> torch.nn.functional.relu)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id, node.id)
        return ".".join([base, *reversed(parts)])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for b in node.bases:
            if self._path(b) in ("Model", "model.Model"):
                self.flag("subclasses_reference", node, f"class {node.name} subclasses Model; write ModelNew from nn.Module")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in DISPATCH_NAMES:  # a tensor subclass or mode that reroutes torch's dispatch
            self.flag("dispatch_bypass", node, f"defines {node.name}: tensor subclasses and modes reroute torch's"
                      " dispatch; compute must happen in your own kernels")
        outer = self.in_forward
        self.in_forward = node.name == "forward" or outer
        self.generic_visit(node)
        self.in_forward = outer

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Try(self, node: ast.Try) -> None:
        if self.in_forward:
            self.flag("try_fallback", node, "try/except in forward: a fallback path hides failing kernels")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            path = self._path(t) if isinstance(t, ast.Attribute) else None
            if path and path.split(".")[0] in ("torch", "kagent_ext", "math", "os"):
                self.flag("tampering", node, f"assigns to {path}: patching torch or the harness is not allowed")
        # `t = torch.cuda` then `t.graphs`: the alias keeps the path, so torch-only rules still see it.
        value = self._path(node.value) if isinstance(node.value, ast.Attribute) else None
        if value and value.split(".")[0] in self.aliases.values():
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.aliases[t.id] = value
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        on = self._path(node.value)
        self._name(node.attr, node, on)
        if node.attr in FORMAT_ATTRS:
            template = node.value.value if isinstance(node.value, ast.Constant) else None
            if not (isinstance(template, str) and node.attr in ("format", "format_map") and _plain_format(template)):
                self.flag("computed_attribute", node, f".{node.attr} on a template that is not a plain string literal:"
                          " format fields like {0.attr} or {0[key]} reach attributes by computed names")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name.startswith("__") and name.endswith("__") and name not in DUNDER_NAMES_OK:
            self.flag("introspection", node, f"uses {name}: interpreter internals are off limits")
            if name in DISPATCH_NAMES:
                self.flag("dispatch_bypass", node, f"defines {name}: tensor subclasses and modes reroute torch's"
                          " dispatch; compute must happen in your own kernels")
        if id(node) in self.used or not isinstance(node.ctx, ast.Load):
            return
        if name in ("getattr", "hasattr") and name not in self.aliases:
            self.flag("computed_attribute", node, f"{name} used as a value (reduce/partial/map over it): attributes"
                      f" may be reached only by names written out, {name}(obj, \"name\") with a literal")
        elif name in BANNED_CALLS and name not in self.aliases:
            self.flag("forbidden_call", node, f"{name} used as a value ({BANNED_CALLS[name]} is not allowed)")
        elif name in HOST_COMPUTE_CALLS and name not in self.aliases:
            self.flag("host_compute", node, f"{name} used as a value: {HOST_COMPUTE_WHY}")
        elif name in self.modules:
            self.flag("computed_attribute", node, f"module {name} passed around as a value: use modules by their"
                      " name (torch.x, os.path.y), so the checks can follow what is reached")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and KAGENT_SETTING.search(node.value):
            self.flag("env_access", node, "names a KAGENT_ setting: the harness's settings are not the kernel's business")

    def visit_Call(self, node: ast.Call) -> None:
        path = self._path(node.func) or ""
        leaf = path.rsplit(".", 1)[-1]
        func = node.func.id if isinstance(node.func, ast.Name) and node.func.id not in self.aliases else None
        if func in BANNED_CALLS:
            self.flag("forbidden_call", node, f"calls {func}() ({BANNED_CALLS[func]} is not allowed)")
        if func in HOST_COMPUTE_CALLS:
            self.flag("host_compute", node, f"calls {func}(): {HOST_COMPUTE_WHY}")
        if func in ("getattr", "hasattr"):
            name = node.args[1] if len(node.args) >= 2 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)) or node.keywords:
                self.flag("computed_attribute", node, f"{func}() with a computed name: attributes may be reached"
                          " only by names written out (a string literal)")
            else:
                self._name(name.value, node, self._path(node.args[0]) if node.args else None)
        if path.startswith("os.") and path.split(".")[1] not in OS_ALLOWED and path.split(".")[1] not in ENV_NAMES:
            self.flag("forbidden_call", node, f"calls {path} (only os.path is allowed)")
        if path.startswith("torch.cuda.") and leaf in STREAM_CALLS:
            self.flag("stream_creation", node, f"calls {path}: launch on the default stream")
        if self.in_forward and path.startswith("torch.") and not path.startswith("torch.cuda.") and leaf not in TORCH_ALLOWED:
            self.flag("torch_fallback", node, f"forward calls {path}: compute must happen in your own kernels"
                      " (torch.empty/empty_like for outputs are fine)")
        self.generic_visit(node)


def check_python(source: str) -> list[Flag]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the import stage reports syntax errors with their line
    checker = _PyChecker(tree)
    checker.visit(tree)
    return checker.flags


def check_workspace(ws: Path) -> list[Flag]:
    """All static flags of a workspace (model_new.py and kernels/*)."""
    flags: list[Flag] = []
    try:
        flags += check_python((ws / "model_new.py").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        pass  # missing or undecodable: the import stage fails with a clear message
    kdir = ws / "kernels"
    if kdir.is_dir():
        for f in sorted(kdir.iterdir()):
            if f.suffix in (".cu", ".cuh", ".cpp", ".h", ".hpp") and f.is_file():
                flags += check_cpp(f.name, f.read_text(encoding="utf-8", errors="replace"))
    return flags
