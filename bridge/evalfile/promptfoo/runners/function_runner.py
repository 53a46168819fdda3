"""A promptfoo prompt function or test generator from a Python file: [path, name, args] on
standard input, its JSON result on standard output; it is given as many of the arguments
as it takes."""

import inspect
import json
import sys

path, name, args = json.loads(sys.stdin.read())
fn = python_function(path, name)
if not callable(fn):  # promptfoo calls it too, and fails: "'str' object is not callable"
    raise TypeError(
        f"{name} is a {type(fn).__name__}, not a function; promptfoo calls it and fails too: "
        "write a function that returns the prompt, or put the text in a .txt file"
    )
wanted = len(inspect.signature(fn).parameters)
print(json.dumps(fn(*args[:wanted])))
