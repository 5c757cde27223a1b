"""The static checks (skills/evaluator/static_check.py) against the bypasses that once scored a reward on the cpu
backend: one cheating workspace per bypass, flagged with its rule's name, and the fair twin each rule
must let through. Then the bundled reference solutions and the suite's fair workspaces, which must
pass the checks, and a few end-to-end evaluations of the most important bypasses (reward -1, the flag).

Every cheat here is written as a whole model_new.py (or kernel) the policy could submit; the checks
run through check_workspace on a workspace in tmp_path, as skills.evaluator.evaluate does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from skills.evaluator.static_check import check_workspace
from tests.conftest import make_ws
from tests.skills.evaluator.test_evaluate_cpu import RELU, RELU_CPP, RELU_PY, flag_names, run_eval
from tests.skills.evaluator.test_exploits_cpu import (
    FAIR_CASES,
    REFERENCED_FAIR,
    RELU_FWD,
    Case,
    relu_py,
)

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = sorted(p.parent for p in (ROOT / "problems" / "solutions").glob("*/level*/*/model_new.py"))


def flags_of(tmp_path: Path, model_new: str, kernels: dict[str, str] | None = None) -> set[str]:
    ws = make_ws(tmp_path, model_new, kernels if kernels is not None else {"relu.cpp": RELU_CPP}, RELU)
    return {f.name for f in check_workspace(ws)}


# The clock patch every reach-sys cheat below would finish with (as in tests/skills/evaluator/test_exploits_cpu.py).
PATCH = '\n_m["time"].perf_counter_ns = lambda: 0\n'
# Relu computed by torch while the op recorder is switched off: the answer is right, no kernel runs.
HIDDEN_RELU = "y = torch.empty_like(x)\nwith {door}:\n    y.copy_(torch.relu(x))\nreturn y"
# A kernel that runs only while a watcher is on; otherwise the answer comes from torch.
WHEN_WATCHED = "if {test}:\n    y = torch.empty_like(x)\n    ops.relu(x, y, x.numel())\n    return y\nreturn x.clamp(min=0)"

# (id, rule, model_new.py)
PY_CHEATS: list[tuple[str, str, str]] = [
    # ---- reaching banned modules and attributes by from-import
    ("from_os_path_import_sys", "introspection", relu_py(RELU_FWD, "from os.path import sys\n\n_m = sys.modules" + PATCH)),
    ("from_os_import_sys", "forbidden_import", relu_py(RELU_FWD, "from os import sys as _s\n\n_m = _s.modules" + PATCH)),
    ("import_os_path_as", "introspection", relu_py(RELU_FWD, "import os.path as p\n\n_m = p.sys.modules" + PATCH)),
    ("from_torch_import_C", "introspection", relu_py(RELU_FWD.replace("ops.relu", "_C._set_grad_enabled(False)\nops.relu"),
                                                     "from torch import _C\n")),
    ("from_torch_C_import", "dispatch_bypass", relu_py(HIDDEN_RELU.format(door="_DisableTorchDispatch()"),
                                                       "from torch._C import _DisableTorchDispatch\n")),
    ("torch_os_system", "introspection", relu_py(RELU_FWD, "torch.os.system('true')\n")),
    ("os_path_os", "introspection", relu_py(RELU_FWD, "import os\n\nos.path.os.system('true')\n")),
    ("from_os_import_system", "forbidden_import", relu_py(RELU_FWD, "from os import system\n\nsystem('true')\n")),
    ("pydoc_locate", "forbidden_import", relu_py(RELU_FWD, "import pydoc\n\n_m = pydoc.locate('sys').modules" + PATCH)),
    ("star_import", "forbidden_import", relu_py(RELU_FWD, "from os.path import *\n")),
    ("typing_eval", "forbidden_call", relu_py(RELU_FWD, "import typing\n\n\ndef _f(a: \"__import__('sys')\"): pass\n\n"
                                                         "_m = typing.get_type_hints(_f)['a'].modules" + PATCH)),
    # ---- computed attribute access
    ("reduce_getattr", "computed_attribute",
     relu_py(RELU_FWD, "import functools\nimport os\n\n_m = functools.reduce(getattr, ['path', 'sys', 'modules'], os)" + PATCH)),
    ("getattr_computed_name", "computed_attribute",
     relu_py(RELU_FWD, "import os\n\n_name = 'sy' + 's'\n_m = getattr(os.path, _name).modules" + PATCH)),
    ("getattr_literal_banned", "introspection", relu_py(RELU_FWD, "import os\n\n_m = getattr(os.path, 'sys').modules" + PATCH)),
    ("partial_getattr", "computed_attribute",
     relu_py(RELU_FWD, "import functools\nimport os\n\n_get = functools.partial(getattr, os.path)\n_m = _get('sys').modules" + PATCH)),
    ("map_getattr", "computed_attribute",
     relu_py(RELU_FWD, "import os\n\n_m = list(map(getattr, [os.path], ['sys']))[0].modules" + PATCH)),
    ("vars_lookup", "forbidden_call", relu_py(RELU_FWD, "import os\n\n_m = vars(os.path)['sys'].modules" + PATCH)),
    ("dict_lookup", "introspection", relu_py(RELU_FWD, "import os\n\n_m = os.path.__dict__['sys'].modules" + PATCH)),
    ("type_getattribute", "introspection",
     relu_py(RELU_FWD, "import os\n\n_p = os.path\n_m = type(_p).__getattribute__(_p, 'sys').modules" + PATCH)),
    ("object_getattribute", "introspection",
     relu_py(RELU_FWD, "import os\n\n_p = os.path\n_m = object.__getattribute__(_p, 'sys').modules" + PATCH)),
    ("module_as_value", "computed_attribute", relu_py(RELU_FWD, "import os\n\n_o = [os][0]\n")),
    ("format_field", "computed_attribute",
     relu_py(RELU_FWD, "def _f():\n    pass\n\n\n_leak = '{0.__globals__}'.format(_f)\n")),
    ("format_computed_template", "computed_attribute",
     relu_py(RELU_FWD, "def _f():\n    pass\n\n\n_t = '{0.' + '__globals__}'\n_leak = _t.format(_f)\n")),
    ("string_formatter", "forbidden_import",
     relu_py(RELU_FWD, "import os\nimport string\n\n_m = string.Formatter().get_field('0.path.sys', [os], {})[0].modules" + PATCH)),
    # ---- torch compute hidden from the dispatch-mode op recorder, or run through another door
    ("disable_current_modes_C", "dispatch_bypass", relu_py(HIDDEN_RELU.format(door="torch._C._disable_current_modes()"))),
    ("disable_current_modes_utils", "dispatch_bypass",
     relu_py(HIDDEN_RELU.format(door="_disable_current_modes()"),
             "from torch.utils._python_dispatch import _disable_current_modes\n")),
    ("disable_torch_dispatch", "dispatch_bypass", relu_py(HIDDEN_RELU.format(door="torch._C._DisableTorchDispatch()"))),
    ("disable_torch_function", "dispatch_bypass", relu_py(HIDDEN_RELU.format(door="torch._C.DisableTorchFunctionSubclass()"))),
    ("pop_mode", "dispatch_bypass",
     relu_py("_mode = _pop_mode()\ny = torch.relu(x)\n_push_mode(_mode)\nreturn y",
             "from torch.utils._python_dispatch import _pop_mode, _push_mode\n")),
    ("pop_dispatch_stack", "dispatch_bypass",
     relu_py("_mode = torch._C._pop_torch_dispatch_stack()\ny = torch.relu(x)\n"
             "torch._C._push_on_torch_dispatch_stack(_mode)\nreturn y")),
    ("set_dispatch_mode", "dispatch_bypass", relu_py(HIDDEN_RELU.format(door="torch._C._set_dispatch_mode(None)"))),
    ("overrides", "dispatch_bypass", relu_py(RELU_FWD, "from torch.overrides import TorchFunctionMode\n")),
    ("torch_compile", "dispatch_bypass", relu_py("return _relu(x)", "_relu = torch.compile(lambda t: t.clamp(min=0))\n")),
    ("torch_jit", "dispatch_bypass", relu_py("return _relu(x)", "_relu = torch.jit.trace(lambda t: t.clamp(min=0), torch.ones(2))\n")),
    ("torch_fx", "dispatch_bypass", relu_py(RELU_FWD, "import torch.fx\n")),
    ("torch_library", "dispatch_bypass", relu_py(RELU_FWD, "from torch import library\n")),
    ("torch_ops", "dispatch_bypass", relu_py("return torch.ops.aten.relu.default(x)")),
    ("torch_dynamo", "dispatch_bypass", relu_py(RELU_FWD, "import torch._dynamo\n")),
    ("torch_alias", "dispatch_bypass", relu_py("return _t.ops.aten.relu.default(x)", "_t = torch.nn.functional.torch\n")),
    ("cuda_graph", "dispatch_bypass", relu_py(RELU_FWD, "_g = torch.cuda.CUDAGraph\n")),
    ("torch_function_subclass", "dispatch_bypass", relu_py(RELU_FWD, "class _T(torch.Tensor):\n"
                                                           "    def __torch_function__(cls, f, t, a=(), k=None):\n"
                                                           "        return f(*a, **(k or {}))\n")),
    # ---- host compute: numpy & co, or tensor contents read into Python
    ("numpy_fallback", "host_compute",
     relu_py("y = torch.empty_like(x)\ny.numpy()[:] = np.maximum(x.numpy(), 0)\nreturn y", "import numpy as np\n")),
    ("scipy", "host_compute", relu_py(RELU_FWD, "import scipy.special\n")),
    ("numba", "host_compute", relu_py(RELU_FWD, "from numba import njit\n")),
    ("cupy", "host_compute", relu_py(RELU_FWD, "import cupy\n")),
    ("jax", "host_compute", relu_py(RELU_FWD, "import jax.numpy as jnp\n")),
    ("tensorflow", "host_compute", relu_py(RELU_FWD, "import tensorflow as tf\n")),
    ("pandas", "host_compute", relu_py(RELU_FWD, "import pandas\n")),
    ("tolist_loop", "host_compute",
     relu_py("y = torch.empty_like(x)\nflat = y.view(-1)\nfor i, v in enumerate(x.view(-1).tolist()):\n"
             "    flat[i] = max(v, 0.0)\nreturn y")),
    ("math_fsum_tolist", "host_compute", relu_py("return torch.full_like(x, math.fsum(x.view(-1).tolist()))", "import math\n")),
    ("item_loop", "host_compute", relu_py("y = torch.empty_like(x)\ny.view(-1)[0] = max(x.view(-1)[0].item(), 0.0)\nreturn y")),
    ("apply_", "host_compute", relu_py("y = torch.empty_like(x)\ny.copy_(x)\ny.apply_(lambda v: max(v, 0.0))\nreturn y")),
    ("dunder_array", "host_compute", relu_py("y = torch.empty_like(x)\n_a = x.__array__()\nreturn y")),
    ("memoryview", "host_compute", relu_py("_m = memoryview(x)\nreturn x")),
    ("bytes", "host_compute", relu_py("_b = bytes(x.untyped_storage())\nreturn x")),
    # ---- a kernel that runs only while a watcher is on (profiler, autograd, tracing, modes)
    ("autograd_profiler", "profiler_detection",
     relu_py(WHEN_WATCHED.format(test="torch.autograd.profiler._is_profiler_enabled"))),
    ("torch_profiler", "profiler_detection", relu_py(RELU_FWD, "from torch.profiler import profile\n")),
    ("is_profiler_enabled", "profiler_detection",
     relu_py(WHEN_WATCHED.format(test="_watched()"),
             "from torch.autograd.profiler import _is_profiler_enabled\n\n\ndef _watched():\n"
             "    return _is_profiler_enabled\n")),
    ("C_autograd", "profiler_detection", relu_py(WHEN_WATCHED.format(test="torch._C._autograd._profiler_enabled()"))),
    ("is_grad_enabled_helper", "profiler_detection",
     relu_py(WHEN_WATCHED.format(test="not _grad()"), "def _grad():\n    return torch.is_grad_enabled()\n")),
    ("tracing_state", "profiler_detection", relu_py(WHEN_WATCHED.format(test="torch._C._get_tracing_state()"))),
    ("is_scripting", "profiler_detection", relu_py(WHEN_WATCHED.format(test="torch.jit.is_scripting()"))),
    ("is_compiling", "profiler_detection", relu_py(WHEN_WATCHED.format(test="torch.compiler.is_compiling()"))),
    ("torch_function_mode_enabled", "profiler_detection",
     relu_py(WHEN_WATCHED.format(test="torch._C._is_torch_function_mode_enabled()"))),
    ("dispatch_stack", "profiler_detection", relu_py(WHEN_WATCHED.format(test="_C._len_torch_dispatch_stack() > 0"),
                                                     "from torch import _C\n")),
    # ---- the harness's environment
    ("environ_mark_fd", "env_access", relu_py(RELU_FWD, "import os\n\n_fd = int(os.environ['KAGENT_MARK_FD'])\n")),
    ("getenv", "env_access", relu_py(RELU_FWD, "import os\n\n_cpus = os.getenv('KAGENT_' + 'CPUS')\n")),
    ("expandvars", "env_access", relu_py(RELU_FWD, "import os\n\n_fd = os.path.expandvars('$KAGENT_MARK_FD')\n")),
]

# (id, rule, kernels/relu.cpp) with the fair model_new.py
CPP_CHEATS: list[tuple[str, str, str]] = [
    ("dlsym_libpython", "dynamic_symbols", '#include "kagent.h"\n#include <dlfcn.h>\n'
     'KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n'
     '  auto run = (int (*)(const char*))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");\n'
     '  run("import sys");\n  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n'),
    ("dlopen_libtorch", "dynamic_symbols", '#include "kagent.h"\n'
     'extern "C" void* dlopen(const char*, int);\n'
     'KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n  (void)dlopen("libtorch_cpu.so", 1);\n'
     '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n'),
    ("asm_label", "dynamic_symbols", '#include "kagent.h"\n'
     'extern "C" int run_py(const char*) __asm__("PyRun_SimpleString");\n'
     'KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n  run_py("import sys");\n'
     '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n'),
    ("py_c_api", "interpreter_access", '#include "kagent.h"\n'
     'extern "C" int PyRun_SimpleString(const char*);\n'
     'KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n'
     '  PyRun_SimpleString("import time; time.perf_counter_ns = lambda: 0");\n'
     '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n'),
    ("pybind_import", "interpreter_access", '#include <torch/extension.h>\n'
     'torch::Tensor relu(torch::Tensor x) {\n  py::module_::import("sys").attr("modules");\n'
     '  return torch::empty_like(x);\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu", &relu); }\n'),
    ("getenv_mark_fd", "env_access", '#include "kagent.h"\n#include <cstdlib>\n'
     'KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n  (void)std::getenv("KAGENT_MARK_FD");\n'
     '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n'),
    ("environ", "env_access", '#include "kagent.h"\nextern char** environ;\n'
     'KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n  (void)environ;\n'
     '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n'),
    ("exclude_python_key", "dispatch_bypass", '#include <torch/extension.h>\n'
     'torch::Tensor relu(torch::Tensor x) {\n  c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python);\n'
     '  return x.clamp_min(0);\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu", &relu); }\n'),
    ("aten_native", "dispatch_bypass", '#include <torch/extension.h>\n'
     'torch::Tensor relu(torch::Tensor x) { return at::native::relu(x); }\n'
     'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu", &relu); }\n'),
    ("profiler_enabled", "profiler_detection", '#include <torch/extension.h>\n'
     'torch::Tensor relu(torch::Tensor x) {\n  if (torch::autograd::profiler::profilerEnabled()) return torch::empty_like(x);\n'
     '  return x.clamp_min(0);\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu", &relu); }\n'),
    ("frame_walk", "dynamic_symbols", '#include "kagent.h"\n'
     'KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n  (void)__builtin_frame_address(2);\n'
     '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n'),
]


@pytest.mark.parametrize(("rule", "source"), [pytest.param(r, s, id=i) for i, r, s in PY_CHEATS])
def test_python_bypass_flagged(rule: str, source: str, tmp_path: Path) -> None:
    assert rule in flags_of(tmp_path, source), source


@pytest.mark.parametrize(("rule", "source"), [pytest.param(r, s, id=i) for i, r, s in CPP_CHEATS])
def test_cpp_bypass_flagged(rule: str, source: str, tmp_path: Path) -> None:
    assert rule in flags_of(tmp_path, RELU_PY, {"relu.cpp": source}), source


def test_flags_say_why(tmp_path: Path) -> None:
    """Each new rule's message tells the agent what to do instead, not only what it broke."""
    ws = make_ws(tmp_path, relu_py("y = torch.empty_like(x)\ny.numpy()[:] = np.maximum(x.numpy(), 0)\nreturn y",
                                   "import numpy as np\n"), {"relu.cpp": RELU_CPP}, RELU)
    details = [f.detail for f in check_workspace(ws) if f.name == "host_compute"]
    assert details and all("your own kernels" in d and d.startswith("model_new.py:") for d in details), details


# ---- fair twins: what each rule must let through ------------------------------------------------

FAIR_PY: list[tuple[str, str]] = [
    ("getattr_literal", relu_py("w = getattr(self, 'weight')\nok = hasattr(x, 'shape')\n" + RELU_FWD,
                                init="self.weight = torch.nn.Parameter(torch.empty(1))")),
    ("os_path_join", relu_py(RELU_FWD, "import os\n\n_HERE = os.path.join(os.path.dirname(__file__), 'kernels')\n")),
    ("empty_like_and_shape", relu_py("rows = x.shape[0]\ncols = x.numel() // rows\ny = torch.empty_like(x)\n"
                                     "ops.relu(x, y, rows * cols)\nreturn y")),
    ("math_on_python_ints", relu_py("scale = 1.0 / math.sqrt(float(x.shape[-1]))\ny = torch.empty_like(x)\n"
                                    "ops.relu(x, y, x.numel())\nreturn y", "import math\n")),
    ("new_empty_and_dtype", relu_py("y = x.new_empty(x.shape, dtype=torch.float32)\nops.relu(x, y, x.numel())\nreturn y")),
    ("plain_format", relu_py(RELU_FWD, "_MSG = 'relu over {} elements, {n:>8}'.format('all', n=3)\n")),
    ("typing_and_future", "from __future__ import annotations\n\nimport functools\nfrom typing import Optional\n\n"
     + relu_py(RELU_FWD, "_Maybe = Optional[int]\n\n\n@functools.lru_cache(maxsize=1)\ndef _blocks(n: int) -> int:\n"
               "    return (n + 255) // 256\n")),
    ("no_grad_in_forward", relu_py("with torch.no_grad():\n    y = torch.empty_like(x)\n    ops.relu(x, y, x.numel())\n"
                                   "return y")),
    ("float_of_attribute", relu_py(RELU_FWD, init="self.eps = float(1e-6)\nself.name = type(self).__name__")),
    ("dict_items_and_item_name", relu_py("sizes = {'n': x.numel()}\nfor item, value in sizes.items():\n    pass\n"
                                         + RELU_FWD)),
    ("all_and_docstring", '"""relu through KAGENT_EXPORT kernels."""\n\n__all__ = ["ModelNew"]\n' + RELU_PY),
]

FAIR_CPP: list[tuple[str, str]] = [
    ("ptx_inline_asm", '#include "kagent.h"\n__device__ int lane() { int id; asm volatile("mov.u32 %0, %%laneid;"'
     ' : "=r"(id)); return id; }\n'),
    ("compiler_barrier", '#include "kagent.h"\nKAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n'
     '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n  asm volatile("" : : "r"(y) : "memory");\n}\n'),
    ("torch_extension", '#include <torch/extension.h>\n// PyTorch-flavour extension; no Python C-API\n'
     'torch::Tensor relu(torch::Tensor x) {\n  auto y = torch::empty_like(x);\n  return y;\n}\n'
     'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu", &relu, py::arg("x")); }\n'),
]


@pytest.mark.parametrize("source", [pytest.param(s, id=i) for i, s in FAIR_PY])
def test_fair_python_twin_passes(source: str, tmp_path: Path) -> None:
    compile(source, "model_new.py", "exec")  # check_python passes what does not parse: the import stage reports it
    ws = make_ws(tmp_path, source, {"relu.cpp": RELU_CPP}, RELU)
    assert check_workspace(ws) == [], source


@pytest.mark.parametrize("source", [pytest.param(s, id=i) for i, s in FAIR_CPP])
def test_fair_cpp_twin_passes(source: str, tmp_path: Path) -> None:
    ws = make_ws(tmp_path, RELU_PY, {"relu.cpp": source}, RELU)
    assert check_workspace(ws) == [], source


@pytest.mark.parametrize("sol", SOLUTIONS, ids=lambda p: f"{p.parts[-3]}/{p.parts[-2]}/{p.name}")
def test_bundled_solution_passes_static_checks(sol: Path) -> None:
    """Every reference solution (problems/solutions/cpu and cuda) passes the rule book as it is."""
    assert check_workspace(sol) == []


@pytest.mark.parametrize("case", [*FAIR_CASES, *REFERENCED_FAIR], ids=lambda c: c.name.replace(" ", "-"))
def test_suite_fair_workspace_passes_static_checks(case: Case, tmp_path: Path) -> None:
    model_new, kernels = case.sources({})
    ws = make_ws(tmp_path, model_new, kernels, RELU)
    assert check_workspace(ws) == []


# ---- end to end: the cpu evaluator stops the most important bypasses at the static checks --------

E2E = [
    ("from_os_path_import_sys", "introspection"),
    ("reduce_getattr", "computed_attribute"),
    ("disable_current_modes_utils", "dispatch_bypass"),
    ("numpy_fallback", "host_compute"),
]


@pytest.mark.parametrize(("name", "rule"), E2E)
def test_static_bypass_rejected_end_to_end(name: str, rule: str, tmp_path: Path, build_cache_dir: Path) -> None:
    source = next(s for i, _, s in PY_CHEATS if i == name)
    r = run_eval(RELU, make_ws(tmp_path, source, {"relu.cpp": RELU_CPP}, RELU), build_cache_dir, mode="final")
    assert rule in flag_names(r), r.flags
    assert r.stage == "load" and r.error is not None and "static checks" in r.error, (r.stage, r.error)
    assert r.reward == -1.0 and r.build is None and r.candidate is None
