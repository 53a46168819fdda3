"""A promptfoo prompt function or test generator from a Python file: [path, name, args] on
standard input, its JSON result on standard output; it is given as many of the arguments
as it takes."""

import inspect
import json
import sys

path, name, args = json.loads(sys.stdin.read())
fn = python_function(path, name)
wanted = len(inspect.signature(fn).parameters)
print(json.dumps(fn(*args[:wanted])))
