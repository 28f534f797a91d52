"""What a kernel's source says, read with ``ast`` and never imported: where a function is
defined at module level, its parameters, whether it reads ``precision``, which frameworks the
file imports and so which device kinds it can run on."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator

from kernbench.results.model import KernelSpec
from kernbench.results.vocabulary import GPU_CAPABLE_FRAMEWORKS, GPU_ONLY_FRAMEWORKS

__all__ = ["FRAMEWORK_IMPORTS", "SETUP_FUNCTION", "find_function", "reads_name",
           "spec_from_tree"]

SETUP_FUNCTION = "setup"

# Import roots -> framework, in priority order: a JAX kernel usually imports NumPy too.
FRAMEWORK_IMPORTS: tuple[tuple[str, str], ...] = (
    ("jax", "jax"), ("jaxlib", "jax"), ("flax", "jax"),
    ("triton", "triton"), ("cupy", "cupy"), ("pycuda", "cupy"),
    ("torch", "pytorch"), ("tensorflow", "tensorflow"), ("numba", "numba"),
    ("numpy", "numpy"), ("scipy", "numpy"),
)


def find_function(tree: ast.Module, name: str) -> ast.AST | None:
    """The last module-level definition (def, class, assignment or import) binding `name`, if
    any; for `Class.method`, the method's def in the module-level class (or the class's
    binding, when the module imports or assigns it: its signature is then unknown)."""
    owner, _, method = name.rpartition(".")
    if owner:
        cls = find_function(tree, owner)
        if not isinstance(cls, ast.ClassDef):  # imported or assigned: the binding, unseen
            return cls
        return next((node for node in cls.body if _binds(node, method)), None)
    found: ast.AST | None = None
    for node in _module_level(tree.body):
        if _binds(node, name):
            found = node
    return found


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name) == name for alias in node.names)
    return False


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements executed at import: the body plus branches of top-level if/try."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody,
                          *[h.body for h in node.handlers]):
                yield from _module_level(block)


def _parameters(definition: ast.AST | None) -> tuple[str, ...]:
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ()
    args = definition.args
    return tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))


def _method_parameters(definition: ast.AST | None) -> tuple[str, ...]:
    """A method's parameters as callers see them: without `self`/`cls` (unless static)."""
    parameters = _parameters(definition)
    decorators = getattr(definition, "decorator_list", [])
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in decorators)
    return parameters if static else parameters[1:]


def reads_precision_context(tree: ast.Module) -> bool:
    """Whether the source calls ``current_precision`` (the case's precision, as a context)."""
    return any((isinstance(node, ast.Name) and node.id == "current_precision")
               or (isinstance(node, ast.Attribute) and node.attr == "current_precision")
               for node in ast.walk(tree))


def reads_name(definition: ast.AST | None, name: str) -> bool:
    """Whether a function's body reads `name` (nested functions included), or could without
    naming it (``locals()``, ``vars()``, ``eval``)."""
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    readers = {name, "locals", "vars", "eval", "exec"}
    return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
               and node.id in readers for node in ast.walk(definition))


def _ignores_precision(definition: ast.AST | None, setup: ast.AST | None) -> bool:
    """`precision` is a parameter of the benchmark function or setup, but neither reads it."""
    holders = [d for d in (definition, setup) if "precision" in _parameters(d)]
    return bool(holders) and not any(reads_name(d, "precision") for d in holders)


def _import_roots(nodes: Iterable[ast.AST]) -> list[str]:
    roots: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            roots.extend(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.append(node.module.split(".")[0])
    return list(dict.fromkeys(roots))


def spec_from_tree(rel: str, tree: ast.Module, function: str,
                    definition: ast.AST) -> KernelSpec:
    all_imports = _import_roots(ast.walk(tree))
    top_level = _import_roots(_module_level(tree.body))
    frameworks = tuple(dict.fromkeys(fw for mod, fw in FRAMEWORK_IMPORTS if mod in all_imports))
    framework = frameworks[0] if frameworks else "python"
    parameters = (_method_parameters if "." in function else _parameters)(definition)
    setup = find_function(tree, SETUP_FUNCTION)
    setup_parameters = _parameters(setup) if setup is not None else ()
    return KernelSpec(
        name=rel, path=rel, function_name=function, framework=framework,
        frameworks=frameworks,
        backends=_infer_backends(framework, (*parameters, *setup_parameters), tree),
        dependencies=tuple(m for m in top_level if m not in sys.stdlib_module_names),
        parameters=parameters, has_setup=setup is not None, setup_parameters=setup_parameters,
        signature_known=isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)),
        ignores_precision=_ignores_precision(definition, setup),
        reads_precision_context=reads_precision_context(tree),
    )


def _infer_backends(framework: str, parameters: tuple[str, ...],
                    tree: ast.Module) -> tuple[str, ...]:
    """cpu for CPU frameworks; cuda too when a GPU-capable kernel can be placed or names CUDA."""
    text = ast.unparse(tree).lower() if framework in GPU_CAPABLE_FRAMEWORKS else ""
    names_gpu = "cuda" in text or "gpu" in text
    backends: list[str] = [] if framework in GPU_ONLY_FRAMEWORKS else ["cpu"]
    takes_device = bool({"device", "backend"} & set(parameters))
    if framework in GPU_ONLY_FRAMEWORKS or (framework in GPU_CAPABLE_FRAMEWORKS
                                            and (takes_device or names_gpu)):
        backends.append("cuda")
    if framework in GPU_CAPABLE_FRAMEWORKS and ("rocm" in text or "hip" in text.split()):
        backends.append("rocm")
    return tuple(backends)
