"""The torch side of the labels (labels.py): the ranges a program already marks, and each
nn.Module's forward, as regions and modules, installed while a session runs and the program
has imported torch (integrations/torch_watch.py watches for it; this module never imports torch).

- ``torch.profiler.record_function`` (the same class as torch.autograd.profiler's), as a
  context manager or a decorator: a region named by its name.
- NVTX ranges, ``torch.cuda.nvtx.range_push/range_pop/range``: a region named by its message;
  range_pop closes the thread's innermost NVTX range. Where NVTX is missing (a CPU-only torch
  raises from range_push), the range is not entered and the program sees the same error.
- Every module's forward, through torch's global hooks (register_module_forward_pre_hook,
  register_module_forward_hook with always_call=True where torch has it, so that a forward
  that raises is still closed): a module label named by the path of the instance in the root
  module being called (named_modules), its root's class and its own class. The hooks are C
  functions (_native/modhooks.c), which look a module up in the open root's table of paths
  and ask _paths() here for a root's; a forward-hook call closes the module's entry and any
  entry of its submodules left open above it (their forward ended before their parent's did).
"""

from __future__ import annotations

import threading

from heatline import _native
from heatline.engine import labels

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_installed: dict[str, Any] = {}
_local = threading.local()


def install(torch: Any) -> None:
    """Install the hooks (once; uninstall() takes them out)."""
    global _roots
    if _installed:
        return
    import weakref  # here: torch has imported it; a session without torch need not

    _roots = weakref.WeakKeyDictionary()
    _install_record_function(torch)
    _install_nvtx(torch)
    _install_module_hooks(torch)


def uninstall() -> None:
    cls = _installed.pop("record_function", None)
    if cls is not None:
        cls.__enter__, cls.__exit__ = _installed.pop("record_function_methods")
    nvtx = _installed.pop("nvtx", None)
    if nvtx is not None:
        nvtx.range_push, nvtx.range_pop = _installed.pop("nvtx_functions")
    for handle in _installed.pop("handles", ()):
        handle.remove()
    _native.module_hooks(None)
    _installed.clear()
    _roots.clear()


# ---- record_function ---------------------------------------------------------------------

def _install_record_function(torch: Any) -> None:
    cls = getattr(getattr(torch.autograd, "profiler", None), "record_function", None)
    if cls is None:
        return
    enter, exit_ = cls.__enter__, cls.__exit__

    def __enter__(self: Any) -> Any:
        result = enter(self)  # first: an enter that raises opens no region
        token = labels.push(labels.region_id(str(self.name)))
        # one instance may be entered again before it exits (a decorated recursive function)
        self.__dict__.setdefault("_heatline_tokens", []).append(token)
        return result

    def __exit__(self: Any, *exc_info: Any) -> Any:
        try:
            return exit_(self, *exc_info)
        finally:
            tokens = self.__dict__.get("_heatline_tokens")
            if tokens:
                labels.pop(tokens.pop())

    _installed["record_function_methods"] = (enter, exit_)
    cls.__enter__, cls.__exit__ = __enter__, __exit__
    _installed["record_function"] = cls


# ---- NVTX -----------------------------------------------------------------------------------

def _install_nvtx(torch: Any) -> None:
    nvtx = getattr(getattr(torch, "cuda", None), "nvtx", None)
    if nvtx is None or not hasattr(nvtx, "range_push") or not hasattr(nvtx, "range_pop"):
        return
    push, pop = nvtx.range_push, nvtx.range_pop

    def range_push(msg: Any, *args: Any, **kwargs: Any) -> Any:
        result = push(msg, *args, **kwargs)  # first: where it raises (no NVTX), no region
        _nvtx_stack().append(labels.push(labels.region_id(str(msg))))
        return result

    def range_pop(*args: Any, **kwargs: Any) -> Any:
        stack = _nvtx_stack()
        if stack:
            labels.pop(stack.pop())
        return pop(*args, **kwargs)

    range_push.__doc__, range_pop.__doc__ = push.__doc__, pop.__doc__
    _installed["nvtx_functions"] = (push, pop)
    nvtx.range_push, nvtx.range_pop = range_push, range_pop
    _installed["nvtx"] = nvtx


def _nvtx_stack() -> list[int]:
    try:
        return _local.nvtx
    except AttributeError:
        _local.nvtx = []
        return _local.nvtx


# ---- modules --------------------------------------------------------------------------------

# root module -> {id(submodule): label id}, from its named_modules() when it is first called
# (a WeakKeyDictionary once installed)
_roots: Any = {}


def _paths(root: Any) -> dict[int, int]:
    found = _roots.get(root)
    if found is None:
        root_class = type(root).__name__
        found = {}
        try:
            try:  # a module shared at two paths is named by its first
                named = list(root.named_modules(remove_duplicate=False))
            except TypeError:  # a torch without remove_duplicate
                named = list(root.named_modules())
            for path, module in named:
                found.setdefault(id(module), labels.name_id(
                    (labels.MODULE, root_class, path, type(module).__name__)))
        except Exception:  # noqa: BLE001 -- a module whose named_modules fails: the root alone
            found = {}
        found.setdefault(id(root), labels.name_id((labels.MODULE, root_class, "", root_class)))
        _roots[root] = found
    return found


def _install_module_hooks(torch: Any) -> None:
    hooks = torch.nn.modules.module
    _native.module_hooks(_paths)
    pre = hooks.register_module_forward_pre_hook(_native.module_pre_hook)
    try:
        post = hooks.register_module_forward_hook(_native.module_post_hook, always_call=True)
    except TypeError:  # a torch without always_call
        post = hooks.register_module_forward_hook(_native.module_post_hook)
    _installed["handles"] = (pre, post)
