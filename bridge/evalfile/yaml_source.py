"""Safe YAML loading that keeps positions, so every error can name its line and column,
and says what PyYAML found wrong in plain words, with what to do about it.

PyYAML's `safe_load` silently keeps the last of two duplicate keys and reads YAML 1.1
scalars such as `no` as False and `1:30` as 90. Our loader refuses duplicates and reads
plain scalars by YAML 1.2 core rules, so what the author wrote is what we validate.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml
from yaml.cyaml import CParser  # type: ignore[attr-defined]

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.limits import LoadLimits, how_to_raise

MAX_DEPTH = 64
"""Deeper nesting is refused: no eval file needs it, and PyYAML would recurse past Python's
limit on a few thousand `[`."""

MAX_EXPANDED_NODES = 200_000
"""A file whose aliases add more values than this to what is written is refused (a "billion
laughs"); a file may be as large as it likes without them."""


if TYPE_CHECKING:
    _Loader = yaml.SafeLoader
else:
    _Loader = object


CASE_LISTS = ("evalcases", "tests")
"""Top-level keys holding an eval file's cases, counted as they are read."""


class TooManyItems(Exception):
    """The case list goes over its limit: stop before composing the rest of it."""

    def __init__(self, mark: yaml.Mark | None, most: int) -> None:
        super().__init__(most)
        self.mark = mark
        self.most = most


class _StrictRules(_Loader):
    """YAML 1.2 core scalars, duplicate keys recorded instead of hidden, and nesting refused
    past what any eval file needs; shared by both loaders below."""

    duplicates: list[yaml.Node]
    depth = 0
    aliased = False
    """Whether the document uses an alias: without one, nothing can expand."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self.depth += 1
        try:
            if self.check_event(yaml.AliasEvent):
                self.aliased = True
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"nested more than {MAX_DEPTH} levels deep; flatten the data",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            node: yaml.Node | None = super().compose_node(parent, index)
            return node
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        own = [k for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"]
        # YAML merge keys (`<<: *base`) bring in pairs that the mapping's own keys override.
        self.flatten_mapping(node)
        for key_node in own:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                self.duplicates.append(key_node)
            if isinstance(key, (str, int, float, bool)):
                seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


class StrictSafeLoader(_StrictRules, yaml.SafeLoader):
    """PyYAML's own Python reader, scanner and parser: the one whose errors we explain."""


class FastStrictLoader(
    _StrictRules,
    yaml.composer.Composer,
    CParser,
    yaml.constructor.SafeConstructor,
    yaml.resolver.Resolver,
):
    """libyaml's C scanner and parser under the same Python composer and rules: several
    times faster on a large file. The composer stays in Python so nesting is still
    bounded (libyaml's own composer recurses until it crashes the process); a file it
    refuses is read again by `StrictSafeLoader`, whose messages are the ones explained."""

    def __init__(self, stream: str) -> None:
        CParser.__init__(self, stream)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.anchors: dict[str, yaml.Node] = {}


_dropped_tags = {
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
}
StrictSafeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _dropped_tags]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictSafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
StrictSafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
StrictSafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _construct_core_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    return int(text, 0) if text.lstrip("+-").startswith(("0o", "0x")) else int(text, 10)


StrictSafeLoader.add_constructor("tag:yaml.org,2002:int", _construct_core_int)
FastStrictLoader.yaml_implicit_resolvers = StrictSafeLoader.yaml_implicit_resolvers
FastStrictLoader.yaml_constructors = StrictSafeLoader.yaml_constructors


Loc = tuple[str | int, ...]


class YamlDocument(NamedTuple):
    """A parsed YAML file: its data and the node tree that knows where each value was written."""

    path: Path
    data: Any
    root: yaml.Node | None
    origin: Mapping[Loc, Loc] | None = None
    """For data rewritten from another shape: where each place of `data` was written."""
    from_code: bool = False
    """Data a program gave (an AgentV TypeScript suite's default export): no line holds a
    value, so a diagnostic names the place in the data (`tests[0].assert[1]`) instead."""

    def written(self, loc: Sequence[str | int]) -> Loc:
        """`loc` in the file as written: through `origin`, by its longest mapped prefix."""
        loc = tuple(loc)
        if not self.origin:
            return loc
        for end in range(len(loc), 0, -1):
            source = self.origin.get(loc[:end])
            if source is not None:
                return (*source, *loc[end:])
        return ()

    def position(self, loc: Sequence[str | int]) -> tuple[int, int]:
        """1-based line and column of the value at `loc`, or of the nearest enclosing one."""
        return self._position(self.written(loc))

    def _position(self, loc: Loc) -> tuple[int, int]:
        node = self.root
        if node is None:
            return 1, 1
        for part in loc:
            child = _child(node, part)
            if child is not None:
                node = child
            # A part that is not in the file (a union tag, a missing key) keeps the parent.
        return node.start_mark.line + 1, node.start_mark.column + 1

    def key_position(self, loc: Sequence[str | int]) -> tuple[int, int]:
        """Position of the key that ends `loc` (for unknown keys), else of the value."""
        loc = self.written(loc)
        if not loc or self.root is None:
            return self._position(loc)
        parent_line, parent_col = self._position(loc[:-1])
        node = self.root
        for part in loc[:-1]:
            node = _child(node, part) or node
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                if key_node.value == loc[-1]:
                    return key_node.start_mark.line + 1, key_node.start_mark.column + 1
        return parent_line, parent_col

    def diagnostic(
        self,
        loc: Sequence[str | int],
        message: str,
        case_id: str | None = None,
        *,
        key: bool = False,
    ) -> Diagnostic:
        line, column = self.key_position(loc) if key else self.position(loc)
        if self.from_code and (place := data_place(self.written(loc))):
            message = f"{place}: {message}"
        return Diagnostic(self.path, line, column, message, case_id)


def data_place(loc: Sequence[str | int]) -> str:
    """`("tests", 0, "assert")` as `tests[0].assert`."""
    said = ""
    for part in loc:
        said += f"[{part}]" if isinstance(part, int) else f".{part}" if said else str(part)
    return said


def _child(node: yaml.Node, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        # The last pair wins: a mapping's own key comes after the pairs a merge key brings.
        return next((v for k, v in reversed(node.value) if k.value == part), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        child: yaml.Node = node.value[part]
        return child
    return None


def load_yaml(
    path: Path,
    text: str | None = None,
    limits: LoadLimits | None = None,
) -> YamlDocument:
    """Parse one YAML document safely; syntax errors and duplicate keys raise InvalidFileError.

    With `limits` (an eval file), a file over its bytes is refused before it is read, and
    a case list (the top-level list, or `evalcases`/`tests`) at its item past its cases."""
    if text is None:
        text = read_yaml_text(path, limits)
    if not yaml.reader.Reader.NON_PRINTABLE.search(text):  # what the Python reader refuses
        try:
            return _load(path, text, FastStrictLoader(text), limits)
        except TooLarge:
            raise
        except (yaml.YAMLError, InvalidFileError):
            pass  # read again below, to say what is wrong the way we explain it
    try:
        loader = StrictSafeLoader(text)  # checks every character first
    except yaml.reader.ReaderError as exc:
        line, column = _line_column(text, exc.position)
        character = chr(exc.character) if isinstance(exc.character, int) else exc.character
        raise InvalidFileError(
            [Diagnostic(path, line, column, f"not a YAML text file: {exc.reason} "
                        f"({character!r}); remove it")]
        ) from None  # fmt: skip
    return _load(path, text, loader, limits)


class TooLarge(InvalidFileError):
    """A file over a limit on its size: not worth reading again to explain it better."""


def _load(
    path: Path,
    text: str,
    loader: StrictSafeLoader | FastStrictLoader,
    limits: LoadLimits | None = None,
) -> YamlDocument:
    loader.duplicates = []
    try:
        if limits is not None:
            _count_cases(text, limits.cases)
        root = loader.get_single_node()
        if root is not None and loader.aliased:
            _check_expansion(root)
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        raise InvalidFileError([syntax_diagnostic(path, exc)]) from None
    except TooManyItems as exc:
        why = (
            f"more than {exc.most} cases (this is case {exc.most + 1}); split the file, or "
            f"{how_to_raise('load_limits', 'cases')}"
        )
        raise TooLarge([_at(path, exc.mark, why)]) from None
    finally:
        loader.dispose()
    if loader.duplicates:
        raise InvalidFileError(
            [
                Diagnostic(
                    path,
                    n.start_mark.line + 1,
                    n.start_mark.column + 1,
                    f"duplicate key '{n.value}': each key may appear once; remove or rename one",
                )
                for n in sorted(loader.duplicates, key=lambda n: n.start_mark.index)
            ]
        )
    return YamlDocument(path, data, root)


class Plainly(NamedTuple):
    """One PyYAML problem said in plain words, with what to do about it."""

    pattern: re.Pattern[str]
    """Matched against PyYAML's `context: problem`."""
    message: str
    """`$name` stands for the named group `name` of the pattern, `$start` for where the
    construct began."""
    at_start: bool = False
    """Report where the construct began (an unclosed quote is wrong where it opens), not
    where PyYAML gave up (for an unclosed quote, the end of the file)."""


PLAINLY = (
    Plainly(
        re.compile(r"while scanning a quoted scalar: found unexpected"),
        "a quoted string that starts here is never closed; add the closing quote",
        at_start=True,
    ),
    Plainly(
        re.compile(r"while parsing a flow sequence: "),
        "the [ list that starts here is not closed; add the closing ']', "
        "or a ',' between its items",
        at_start=True,
    ),
    Plainly(
        re.compile(r"while parsing a flow mapping: "),
        "the { mapping that starts here is not closed; add the closing '}', or a ',' "
        "between its items (put a value in quotes if it is text that starts with '{')",
        at_start=True,
    ),
    Plainly(
        re.compile(r"found character '\\t' that cannot start any token|found a tab character"),
        "a tab is used for indentation here, but YAML indents with spaces only; "
        "replace the tab with spaces",
    ),
    Plainly(
        re.compile(r"found character (?P<char>'.+') that cannot start any token"),
        "a value cannot start with $char; put the value in quotes",
    ),
    Plainly(
        re.compile(r"could not find expected ':'"),
        "this line has no ':' after its key; write `key: value` (a line that continues "
        "the value above must be indented further than that value's key)",
        at_start=True,
    ),
    Plainly(
        re.compile(r"mapping values are not allowed"),
        "a ':' here cannot start a key: if the value holds ': ', put the whole value in "
        "quotes; if this line starts a new key, line it up with the keys above it",
    ),
    Plainly(
        re.compile(r"sequence entries are not allowed here"),
        "a list item ('- ') cannot start on the line of its key; "
        "move it to the next line, indented under the key",
    ),
    Plainly(
        re.compile(r"expected <block end>, but found '<scalar>'"),
        "more text after a finished value (a closing quote, ']' or '}'); put the whole "
        "value in quotes, or move the text to a line of its own",
    ),
    Plainly(
        re.compile(r"block collection: expected <block end>, but found '\?'"),
        "this key is lined up with the '- ' items of the list above; indent it like the "
        "keys of the item it belongs to (or less, if the list ends here)",
    ),
    Plainly(
        re.compile(r"expected <block end>, but found '-'"),
        "a list item ('- ') is lined up with keys here; indent the list under the key it "
        "belongs to, and leave that key's value empty",
    ),
    Plainly(
        re.compile(r"expected <block end>|did not find expected (key|'-' indicator)"),
        "this line is indented unlike the lines above it: line it up with the keys it belongs "
        "with, using spaces (a key that holds nested keys has nothing after its ':')",
    ),
    Plainly(
        re.compile(r"expected the node content, but found (?P<found>'[^<].*')"),
        "a value cannot start with $found; put the value in quotes",
    ),
    Plainly(
        re.compile(r"while scanning an? (alias|anchor): expected alphabetic or numeric"),
        "'*' and '&' start an alias or anchor and need a name right after them; "
        "put the value in quotes if it is text",
        at_start=True,
    ),
    Plainly(
        re.compile(r"found undefined alias '(?P<name>[^']*)'"),
        "'*$name' refers to an anchor '&$name' that is not defined above it; define "
        "the anchor first, or put the value in quotes if it is text",
    ),
    Plainly(
        re.compile(r"found duplicate anchor '(?P<name>[^']*)'"),
        "anchor '&$name' is defined again here (first at $start); rename one of them",
    ),
    Plainly(
        re.compile(r"expected a single document in the stream"),
        "a second YAML document starts here ('---'), but the file must hold one; "
        "remove this line or split the file",
    ),
    Plainly(
        re.compile(r"expected '<document start>'"),
        "text after the end of the document (a '...' line or a '%' directive); remove it",
    ),
    Plainly(
        re.compile(r"found unknown escape character '(?P<char>.+)'"),
        "unknown escape '\\$char' in a double-quoted string; write '\\\\' for a "
        "backslash, or use single quotes, which keep backslashes as written",
    ),
    Plainly(
        re.compile(r"expected escape sequence of (?P<digits>\d+) hexadecimal numbers"),
        "this escape needs $digits hexadecimal digits; write '\\\\' for a backslash, "
        "or use single quotes, which keep backslashes as written",
    ),
    Plainly(
        re.compile(r"could not determine a constructor for the tag '(?P<tag>[^']*)'"),
        "the tag '$tag' is not read here; remove it, or put the value in quotes",
    ),
    Plainly(
        re.compile(r"found unhashable key"),
        "a key cannot be a list or a mapping; if this value is text starting with '{' "
        "or '[' (a {{ template }}, say), put it in quotes",
    ),
    Plainly(
        re.compile(r"for merging, but found"),
        "'<<' merges mappings only: write `<<: *name` where '&name' marks a mapping",
    ),
    Plainly(
        re.compile(r"while scanning a block scalar: expected"),
        "after '|' or '>' only '-', '+' or a digit 1-9 may follow on its line; "
        "start the text on the next line, indented",
    ),
)
"""The PyYAML problems a person meets, first match wins; any other is shown as it is."""


def syntax_diagnostic(path: Path, exc: yaml.MarkedYAMLError) -> Diagnostic:
    """A YAML error in plain words, at the place to fix."""
    said = f"{exc.context or ''}: {exc.problem or ''}".replace("tag:yaml.org,2002:", "!!")
    for plainly in PLAINLY:
        found = plainly.pattern.search(said)
        if found:
            words = found.groupdict(default="")
            message = Template(plainly.message).safe_substitute(words, start=_place(exc))
            mark = (exc.context_mark if plainly.at_start else None) or exc.problem_mark
            return _at(path, mark, message)
    problem = exc.problem or exc.context or "invalid YAML"
    return _at(path, exc.problem_mark or exc.context_mark, f"YAML syntax error: {problem}")


def _at(path: Path, mark: yaml.Mark | None, message: str) -> Diagnostic:
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return Diagnostic(path, line, column, message)


def _place(exc: yaml.MarkedYAMLError) -> str:
    """Where the construct that PyYAML gave up on began, in words."""
    mark = exc.context_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "the start"


class _Open:
    """A list or mapping being read by `_count_cases`."""

    __slots__ = ("is_case_list", "is_mapping", "key", "started")

    def __init__(self, is_mapping: bool, is_case_list: bool = False) -> None:
        self.is_mapping = is_mapping
        self.is_case_list = is_case_list
        self.started = 0
        self.key: object = None


_NODE_STARTS = (
    yaml.ScalarEvent,
    yaml.AliasEvent,
    yaml.SequenceStartEvent,
    yaml.MappingStartEvent,
)


def _count_cases(text: str, most: int) -> None:
    """Raise TooManyItems at the case list's item past `most`: the top-level list, or the
    list under a top-level `evalcases` or `tests`.

    Composing a node costs tens of microseconds in Python; libyaml's events cost a
    fraction of that, so a file of a million cases is refused in about a second. A file
    with fewer `-` and `,` than the limit cannot hold more items, and is not read twice.
    """
    if text.count("-") + text.count(",") < most:
        return
    parser = CParser(text)
    stack: list[_Open] = []
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, _NODE_STARTS):
                is_case_list = not stack
                if stack:
                    parent = stack[-1]
                    if parent.is_case_list and parent.started >= most:
                        raise TooManyItems(event.start_mark, most)  # type: ignore[arg-type]
                    if parent.is_mapping and parent.started % 2 == 0:
                        parent.key = getattr(event, "value", None)
                    is_case_list = (
                        len(stack) == 1 and parent.started % 2 == 1 and parent.key in CASE_LISTS
                    )
                    parent.started += 1
                if isinstance(event, yaml.SequenceStartEvent):
                    stack.append(_Open(False, is_case_list))
                elif isinstance(event, yaml.MappingStartEvent):
                    stack.append(_Open(True))
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                stack.pop()
    except yaml.YAMLError:
        return  # the file's own reading says what is wrong, and where
    finally:
        parser.dispose()


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases would add more than `MAX_EXPANDED_NODES` values to
    what is written (a "billion laughs"), or that contains itself through an alias.

    One pass over the nodes as written, without recursion: each node's expanded size is
    computed once, and every further reference to a node (an alias) adds its size.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    """The nodes whose size is being computed: the ancestors of the node at hand."""
    added = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
        elif key in sizes:
            added += sizes[key]
            if added > MAX_EXPANDED_NODES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"its aliases expand to more than {MAX_EXPANDED_NODES} values; "
                    "write the data out or use fewer aliases",
                    node.start_mark,
                )
        elif key in open_nodes:
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias here stands for a value that contains it, which never ends; "
                "refer to another value",
                node.start_mark,
            )
        else:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _line_column(text: str, position: int) -> tuple[int, int]:
    before = text[:position]
    return before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1


def read_yaml_text(path: Path, limits: LoadLimits | None = None) -> str:
    """A YAML file's text, with unreadable, non-regular, too large or non-UTF-8 files
    reported at line 1."""
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):  # a FIFO would block the reader for ever
            raise InvalidFileError(
                [Diagnostic(path, 1, 1, "not a regular file; an eval file must be a plain file")]
            )
        if limits is not None and status.st_size > limits.bytes:
            raise TooLarge(
                [Diagnostic(path, 1, 1, f"the file is {status.st_size} bytes, more than the "
                            f"{limits.bytes} an eval file may be; split it, or "
                            f"{how_to_raise('load_limits', 'bytes')}")]
            )  # fmt: skip
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidFileError(
            [Diagnostic(path, 1, 1, f"not UTF-8 text ({exc.reason}); save the file as UTF-8")]
        ) from None
    except OSError as exc:
        raise InvalidFileError(
            [Diagnostic(path, 1, 1, f"cannot read file: {exc.strerror}")]
        ) from None
