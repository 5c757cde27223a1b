"""Static checks of the candidate's sources, by parse (Python AST; C++ tokens without comments
and string literals), before anything runs. Each flag says why, so the agent learns the rule.

Rows of EXPLOITS.md: 2 (threads/processes), 4 and 10 (timer tampering, introspection), 15 (torch
fallback, try/except fallback, subclassing Model), 17 (L2 persistence), 18 (importing or editing
the reference), 1 (extra streams). Runtime checks back these up (skills/harness/launches.py, the
dispatch recorder in the candidate worker), since a static check can be dodged.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from skills.results import Flag

FORBIDDEN_MODULES = {
    "threading": "threads", "_thread": "threads", "multiprocessing": "processes", "concurrent": "threads/processes",
    "subprocess": "processes", "asyncio": "background tasks", "ctypes": "raw memory and foreign calls",
    "cffi": "foreign calls", "sys": "interpreter internals", "gc": "walking the heap", "inspect": "introspection",
    "importlib": "dynamic imports", "builtins": "patching builtins", "socket": "network", "signal": "signals",
    "pickle": "deserialising objects", "marshal": "code objects", "shutil": "file operations",
    "pathlib": "file access", "io": "file access", "tempfile": "file access", "time": "clock access",
    "traceback": "introspection", "atexit": "exit hooks", "weakref": "object tracking", "mmap": "raw memory",
    "resource": "process limits", "model": "the reference problem", "operator": "attribute getters",
}
OS_ALLOWED = {"environ", "path", "getenv"}
BANNED_CALLS = {"open": "file access", "exec": "dynamic code", "eval": "dynamic code", "compile": "dynamic code",
                "__import__": "dynamic imports", "globals": "introspection", "locals": "introspection",
                "vars": "introspection", "breakpoint": "debugger", "setattr": "patching objects",
                "delattr": "patching objects"}
# torch functions a forward may call: allocation and shape bookkeeping, no arithmetic.
TORCH_ALLOWED = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "device", "Size",
                 "is_tensor", "no_grad", "get_default_dtype", "finfo", "iinfo"}
STREAM_CALLS = {"Stream", "stream", "ExternalStream", "set_stream"}
# Attribute names that reach interpreter internals (modules, frames, globals, closures, defaults):
# `os.path.sys.modules[...]` or `f.__globals__` would let code patch the harness's clock.
BANNED_ATTRS = {"sys", "modules", "__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__",
                "__closure__", "__defaults__", "__kwdefaults__", "__getattribute__", "__setattr__",
                "__import__", "__loader__", "__spec__", "__bases__", "__mro__", "f_globals", "f_locals",
                "f_back", "gi_frame", "cr_frame", "tb_frame", "_get_dispatch_mode", "_C"}

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


class _PyChecker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.flags: list[Flag] = []
        self.in_forward = False
        self.aliases: dict[str, str] = {}  # local name -> module path (torch, torch.nn.functional, os)

    def flag(self, name: str, node: ast.AST, detail: str) -> None:
        self.flags.append(Flag(name=name, detail=f"model_new.py:{getattr(node, 'lineno', '?')}: {detail}"))

    def _module(self, mod: str, node: ast.AST) -> None:
        root = mod.split(".")[0]
        if root in FORBIDDEN_MODULES:
            self.flag("forbidden_import", node, f"imports {mod} ({FORBIDDEN_MODULES[root]} are not allowed in model_new.py)")

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._module(a.name, node)
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        self._module(mod, node)
        for a in node.names:
            self.aliases[a.asname or a.name] = f"{mod}.{a.name}"
            if a.name == "Model":
                self.flag("imports_reference", node, "imports the reference Model; ModelNew must compute on its own")

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
        outer = self.in_forward
        self.in_forward = node.name == "forward" or outer
        self.generic_visit(node)
        self.in_forward = outer

    def visit_Try(self, node: ast.Try) -> None:
        if self.in_forward:
            self.flag("try_fallback", node, "try/except in forward: a fallback path hides failing kernels")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            path = self._path(t) if isinstance(t, ast.Attribute) else None
            if path and path.split(".")[0] in ("torch", "kagent_ext", "math", "os"):
                self.flag("tampering", node, f"assigns to {path}: patching torch or the harness is not allowed")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in BANNED_ATTRS:
            self.flag("introspection", node, f"accesses .{node.attr}: interpreter internals are off limits")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__", "__import__", "__loader__", "__spec__"):
            self.flag("introspection", node, f"uses {node.id}: interpreter internals are off limits")

    def visit_Call(self, node: ast.Call) -> None:
        path = self._path(node.func) or ""
        leaf = path.rsplit(".", 1)[-1]
        if isinstance(node.func, ast.Name) and node.func.id in BANNED_CALLS and node.func.id not in self.aliases:
            self.flag("forbidden_call", node, f"calls {node.func.id}() ({BANNED_CALLS[node.func.id]} is not allowed)")
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.flag("introspection", node, f"{node.func.id}() with a computed name: spell the attribute out")
            elif name.value in BANNED_ATTRS or name.value.startswith("__"):
                self.flag("introspection", node, f"{node.func.id}(..., {name.value!r}): interpreter internals are off limits")
        if path.startswith("os.") and path.split(".")[1] not in OS_ALLOWED:
            self.flag("forbidden_call", node, f"calls {path} (only os.environ and os.path are allowed)")
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
    checker = _PyChecker()
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
