"""Suite templates rendered in a sandbox that bounds what they cost.

A suite's templates are code written by whoever wrote the file, run by `validate` and by
the watcher. Jinja's sandbox stops them reaching Python internals, but not from looping
for ever or building a string of gigabytes. Every route to that passes one of the hooks
below, each charged to the `Budget` of the file being rendered:

- loop iterations (`{% for %}` over anything: `range`, lists from vars, `env`) and macro
  or recursive-loop calls count against `iterations`: nested loops, recursive macros,
  `namespace()` accumulated in a loop;
- every call, filter and loop step checks the file's time (`seconds`): a slow step
  repeated (a growing string copied in a loop) stops there;
- what a template outputs, and each string it builds (`{% set %}` blocks, macro output,
  `~`, `+`, `*`, `%`, `str.format`, filters with a width or a repeat such as `center`,
  `indent`, `wordwrap`, `replace`, `join`) is measured against `output_bytes`, before
  it is built where its size can be known in advance;
- lists cannot be changed in place (`ImmutableSandboxedEnvironment`): `list.append`
  in a loop is refused outright.

A template reaches data only: attributes and methods are looked up on strings, numbers,
lists, mappings and Jinja's own loop helpers, never on anything else its context might
hold (a path, a project, settings), so no template can read or write a file through one.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, overload

from jinja2 import ChainableUndefined, TemplateError, Undefined, nodes, pass_context
from jinja2.runtime import Context, LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, Joiner, Namespace
from jinja2.visitor import NodeTransformer

from evalrelay.bridge.evalfile.limits import TemplateLimits, how_to_raise

COUNTED = "_evalrelay_counted"
JOINED = "_evalrelay_joined"
FORMAT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
NUMBER = re.compile(r"\d+")


class TemplateLimitError(TemplateError):
    """A template went over one of its file's `template_limits`."""


class Budget:
    """What the templates of one file have spent: time for the whole file, iterations for
    the template being rendered."""

    def __init__(self, limits: TemplateLimits) -> None:
        self.limits = limits
        self.used_seconds = 0.0
        self.iterations = 0
        self.written = 0
        self.deadline = time.monotonic() + limits.seconds

    def step(self, count: int = 1) -> None:
        self.iterations += count
        if self.iterations > self.limits.iterations:
            raise TemplateLimitError(
                f"the template went over {self.limits.iterations} loop iterations and macro "
                f"calls; {how_to_raise('template_limits', 'iterations')}"
            )
        self.check_time()

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateLimitError(
                f"the file's templates took more than {self.limits.seconds:g} seconds; "
                f"{how_to_raise('template_limits', 'seconds')}"
            )

    def size(self, length: int, what: str = "the template's output") -> None:
        if length > self.limits.output_bytes:
            raise TemplateLimitError(
                f"{what} would be over {self.limits.output_bytes} characters; "
                f"{how_to_raise('template_limits', 'output_bytes')}"
            )

    def wrote(self, value: Any) -> str:
        """Each `{{ }}` written, wherever to (the output, a `{% set %}` block, a macro's
        output), added up: a loop writing into a block is stopped before the block is."""
        text = str(value)
        self.written += len(text)
        self.size(self.written, "what the template writes with {{ }}")
        return text

    def render(self, source: str, context: dict[str, Any]) -> str:
        """`source` rendered with `context`, charged to this budget."""
        template = _compiled(source)
        self.iterations = self.written = 0
        started = time.monotonic()
        self.deadline = started + self.limits.seconds - self.used_seconds
        token = _current.set(self)
        try:
            self.check_time()
            rendered: str = template.render(context)
            return rendered
        finally:
            _current.reset(token)
            self.used_seconds += time.monotonic() - started


_current: ContextVar[Budget | None] = ContextVar("template_budget", default=None)


def _budget() -> Budget:
    """The budget of the render under way; outside one (Jinja folding constants while it
    compiles), a fresh one with the default limits, so nothing runs unbounded."""
    return _current.get() or Budget(TemplateLimits())


class _CountedRange(Sequence[int]):
    """`range` for templates: each number taken from it is a loop iteration."""

    def __init__(self, numbers: range) -> None:
        self.numbers = numbers

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...
    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        found = self.numbers[index]
        return _CountedRange(found) if isinstance(found, range) else found

    def __iter__(self) -> Iterator[int]:
        budget = _budget()
        for number in self.numbers:
            budget.step()
            yield number

    def __repr__(self) -> str:
        return repr(self.numbers)


def _range(*args: int) -> _CountedRange:
    numbers = range(*args)
    budget = _budget()
    if len(numbers) > budget.limits.iterations:
        raise TemplateLimitError(
            f"range of {len(numbers)} numbers is over the {budget.limits.iterations} loop "
            f"iterations a template may make; {how_to_raise('template_limits', 'iterations')}"
        )
    return _CountedRange(numbers)


@pass_context
def _counted(context: Context, items: Any) -> Any:
    """What a `{% for %}` loops over, each item a step (a `range` counts its own)."""
    if isinstance(items, (_CountedRange, Undefined)):
        return items
    return _each_counted(items)


def _each_counted(items: Iterable[Any]) -> Iterator[Any]:
    budget = _budget()
    for item in items:
        budget.step()
        yield item


@pass_context
def _joined(context: Context, text: str) -> str:
    """A `~` concatenation, measured once built (each side was measured already)."""
    _budget().size(len(text), "a string joined with ~")
    return text


def _wrote(value: Any) -> str:
    return _budget().wrote(value)


def _concat(parts: Iterable[str]) -> str:
    """Jinja's `concat` for a template's output, a `{% set %}` block and a macro's output:
    stops as soon as the parts add up to more than the limit."""
    budget = _budget()
    kept = []
    length = 0
    for part in parts:
        length += len(part)
        budget.size(length)
        kept.append(part)
    return "".join(kept)


class _Bounds(NodeTransformer):
    """Each loop's iterable counted, each `~` measured: the two places Jinja compiles to
    plain Python with no hook of the sandbox."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, COUNTED, [], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return nodes.Filter(node, JOINED, [], [], None, None, lineno=node.lineno)


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, dict)) else len(str(value))


def _ints(args: Iterable[Any]) -> list[int]:
    return [a for a in args if isinstance(a, int) and not isinstance(a, bool)]


def _formatted(template: str, args: Any, fields: int) -> int:
    """At most how long `template` formatted with `args` is: every field as wide as the
    widest number written in it or passed, holding the longest argument."""
    values = list(args.values()) if isinstance(args, dict) else _as_list(args)
    widths = [int(n) for n in NUMBER.findall(template)] + _ints(values)
    longest = max((_length(v) for v in values), default=0)
    return len(template) + fields * (longest + max(widths, default=0))


def _as_list(args: Any) -> list[Any]:
    return list(args) if isinstance(args, (tuple, list)) else [args]


def _binop_size(operator: str, left: Any, right: Any) -> int | None:
    """The size of `left operator right` before it is computed, where it can grow."""
    sequences = (str, list, tuple)
    if operator == "*":
        if isinstance(left, sequences) and isinstance(right, int):
            return len(left) * right
        if isinstance(right, sequences) and isinstance(left, int):
            return len(right) * left
        if isinstance(left, int) and isinstance(right, int):
            return (left.bit_length() + right.bit_length()) // 8
    if operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
        return left.bit_length() * max(right, 0) // 8
    if operator == "+" and isinstance(left, sequences) and isinstance(right, sequences):
        return len(left) + len(right)
    if operator == "%" and isinstance(left, str):
        return _formatted(left, right, len(FORMAT_SPEC.findall(left)))
    return None


def _lines(text: str) -> int:
    return text.count("\n") + 1


def _filter_size(name: str, value: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> int | None:
    """The most a filter that can multiply its input may produce, before it runs."""
    text = value if isinstance(value, str) else str(value)
    given = dict(zip(_FILTER_PARAMS.get(name, ()), args, strict=False)) | kwargs
    if name == "center":
        return max(len(text), int(given.get("width", 80)))
    if name == "indent":
        width = given.get("width", 4)
        return len(text) + _lines(text) * (width if isinstance(width, int) else _length(width))
    if name == "wordwrap":
        width = max(int(given.get("width", 79)), 1)
        breaks = len(text) // width + _lines(text)
        return len(text) + breaks * len(str(given.get("wrapstring") or "\n"))
    if name == "replace":
        old, new = str(given.get("old", "")), str(given.get("new", ""))
        return len(text) + (text.count(old) if old else len(text) + 1) * len(new)
    if name == "format":
        return _formatted(text, list(args) or kwargs, len(FORMAT_SPEC.findall(text)))
    if name == "tojson":
        return len(text) * (1 + int(given.get("indent") or 0))
    if name == "sum" and isinstance(value, (list, tuple)):
        return sum(_length(v) for v in value if isinstance(v, (list, tuple)))
    return None


_FILTER_PARAMS = {
    "center": ("width",),
    "indent": ("width", "first", "blank"),
    "wordwrap": ("width", "break_long_words", "wrapstring"),
    "replace": ("old", "new", "count"),
    "tojson": ("indent",),
}


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    passed = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.check_time()
        value, rest = (args[passed], args[passed + 1 :]) if len(args) > passed else (None, ())
        for number in _ints([*rest, *kwargs.values()]):
            budget.size(number, f"the {name} filter's argument {number}")
        if name == "join" and value is not None and not isinstance(value, (str, list, tuple)):
            value = list(value)
            args = (*args[:passed], value, *rest)
        if name == "join" and isinstance(value, (list, tuple)):
            separator = str(rest[0] if rest else kwargs.get("d", ""))
            budget.size(sum(_length(v) for v in value) + len(separator) * len(value), "join")
        estimate = _filter_size(name, value, rest, kwargs)
        if estimate is not None:
            budget.size(estimate, f"the output of the {name} filter")
        result = func(*args, **kwargs)
        if isinstance(result, str):
            budget.size(len(result), f"the output of the {name} filter")
        return result

    return bounded


def _call_size(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """What a string method that can grow its string may produce, before it runs."""
    method = getattr(obj, "__wrapped__", obj)
    text = getattr(method, "__self__", None)
    if not isinstance(text, str):
        return None
    name = getattr(method, "__name__", "")
    if name in ("center", "ljust", "rjust", "zfill") and args:
        return max(len(text), int(args[0]))
    if name == "expandtabs":
        return len(text) + text.count("\t") * int(args[0] if args else 8)
    if name == "replace" and len(args) >= 2:
        old, new = str(args[0]), str(args[1])
        return len(text) + (text.count(old) if old else len(text) + 1) * len(new)
    if name == "join" and args:
        items = args[0]
        return sum(map(_length, items)) + len(text) * len(items)
    if name in ("format", "format_map"):
        return _formatted(text, list(args) + list(kwargs.values()), text.count("{"))
    if name == "translate" and args and isinstance(args[0], dict):
        longest = max((_length(v) for v in args[0].values() if v is not None), default=1)
        return len(text) * longest
    return None


DATA_TYPES: tuple[type, ...] = (
    str, int, float, bool, type(None), list, tuple, dict,
    _CountedRange, LoopContext, Macro, Namespace, Cycler, Joiner, Undefined,
)  # fmt: skip
"""What a template may look attributes up on: data, and Jinja's own helpers."""


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with every hook charged to the budget of the render, and
    attributes of data only."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        return isinstance(obj, DATA_TYPES) and super().is_safe_attribute(obj, attr, value)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals["range"] = _range
        self.globals.pop("lipsum", None)  # a paragraph generator: nothing a prompt needs
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.filters[COUNTED] = _counted
        self.filters[JOINED] = _joined
        self.concat = _concat  # type: ignore[method-assign]
        self.finalize = _wrote

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        bounded: nodes.Template = _Bounds().visit(tree)
        return bounded

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        size = _binop_size(operator, left, right)
        budget = _budget()
        budget.check_time()
        if size is not None:
            budget.size(size, f"the result of {operator}")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        if isinstance(__obj, (Macro, LoopContext)):
            budget.step()
        else:
            budget.check_time()
        size = _call_size(__obj, args, kwargs)
        if size is not None:
            budget.size(size, "the string built")
        return super().call(__context, __obj, *args, **kwargs)


@functools.lru_cache(maxsize=256)
def _compiled(source: str) -> Any:
    """A template compiled once per text: a suite renders the same prompt for each test."""
    return templates.from_string(source)


templates = BoundedEnvironment(
    undefined=ChainableUndefined, autoescape=False, keep_trailing_newline=True
)
templates.filters["load"] = _bounded_filter("load", json.loads)
