"""Count the Python lines one side of a benchmark cell runs per iteration, per function.

    python benchmarks/count_lines.py [--layer dat|verbs] [--test send_lat] [--size 8] [--wait poll]

A spawned server runs the cell's passive side (as profile_hot_path.py); this process runs
the client under sys.settrace for --seconds and prints the lines and calls per timed
iteration and the functions that run the most lines. Under the tracer the peer always
answers before the client polls, so empty polls do not show: the count is the work of a
message, not the wait for it. A count does not drift with the machine's load, as a timing
does, which makes it the measure to compare two trees of the hot path with.
"""

import ast
import collections
import sys

from shmdat.bench.timing import client_cell

from profile_hot_path import ITERATION, arguments, client


def _functions(path, cache):
    """line number -> the innermost function's name, for the file at `path`."""
    if path not in cache:
        names = {}
        with open(path) as f:
            for node in ast.walk(ast.parse(f.read())):
                if isinstance(node, ast.FunctionDef):
                    for line in range(node.lineno, node.end_lineno + 1):
                        names[line] = node.name
        cache[path] = names
    return cache[path]


def main():
    args = arguments(seconds=0.3, top=30)
    lines, calls = collections.Counter(), collections.Counter()

    def tracer(frame, event, arg):
        code = frame.f_code
        if event == "call":
            calls[code.co_name] += 1
        elif event == "line":
            lines[(code.co_filename, frame.f_lineno)] += 1
        return tracer

    with client(args) as (t, b, cell):
        client_cell(t, b, cell, args.seconds)      # warm: the QP joined, caches filled
        sys.settrace(tracer)
        client_cell(t, b, cell, args.seconds)
        sys.settrace(None)
    iterations = sum(calls[name] for name in ITERATION) or 1
    per_function, cache = collections.Counter(), {}
    for (path, line), n in lines.items():
        if "shmdat" in path:
            name = _functions(path, cache).get(line, "?")
            per_function[(path.rsplit("shmdat/", 1)[-1], name)] += n
    print(f"{args.layer} {args.test} {args.size} B: {sum(per_function.values()) / iterations:.0f} "
          f"shmdat lines and {sum(calls.values()) / iterations:.0f} calls per iteration")
    for (path, name), n in per_function.most_common(args.top):
        print(f"{n / iterations:7.1f}  {path}:{name}")


if __name__ == "__main__":
    main()
