"""Count the Python lines one side of a benchmark cell runs per iteration, per function.

    python benchmarks/count_lines.py [--layer dat|verbs] [--test send_lat] [--size 8] [--wait poll]

A spawned server runs the cell's passive side (as profile_hot_path.py); this process runs
the client under sys.settrace for --seconds and prints the lines and calls per timed
iteration and the functions that run the most lines, and apart from them what one empty
poll costs (a CQ poll or an EVD dequeue that found nothing: how many of them run while the
client waits depends on the machine's load, so their lines are counted on their own), and
what one look at the peers costs (it runs by time, not per message). The counts do not drift with the load, as a timing does, which makes them the measure to compare
two trees of the hot path with.
"""

import ast
import collections
import sys

from shmdat.bench.timing import client_cell

from profile_hot_path import ITERATION, arguments, client


# Counted apart: the polls that found nothing, and the looks at the peers, which run once
# per LOOK_SLICE of time (so once per iteration under the tracer's slowness, once per
# thousand at full speed): (the file path's end, function) -> kind. By path, not module, so
# that an older tree without some of these files is counted too.
APART = {("shmdat/verbs/cq.py", "poll"): "poll", ("shmdat/dat/evd.py", "dequeue"): "poll",
         ("shmdat/verbs/device.py", "_liveness"): "look", ("shmdat/dat/engine.py", "watch"): "look"}


def _kind(code, cache):
    """What APART says of the function of `code`, or None."""
    key = (code.co_filename, code.co_name)
    if key not in cache:
        cache[key] = next((kind for (end, name), kind in APART.items()
                           if code.co_name == name and code.co_filename.endswith(end)), None)
    return cache[key]


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
    empty = {"polls": 0, "lines": 0}
    looks = {"looks": 0, "lines": 0}
    stack = []              # [frame, its lines so far, "poll" or "look", found nothing]
    kinds = {}

    def tracer(frame, event, arg):
        code = frame.f_code
        if event == "call":
            calls[code.co_name] += 1
            kind = _kind(code, kinds)
            if kind == "look" or (kind == "poll" and not any(s[2] == "poll" for s in stack)):
                stack.append([frame, collections.Counter(), kind, False])
        elif event == "line":
            (stack[-1][1] if stack else lines)[(code.co_filename, frame.f_lineno)] += 1
        elif stack and frame is stack[-1][0]:
            if event == "exception":
                stack[-1][3] = arg[0].__name__ == "QueueEmpty"
            elif event == "return":
                _, counted, kind, nothing = stack.pop()
                shmdat_lines = sum(n for (path, _), n in counted.items() if "shmdat" in path)
                if kind == "look":
                    looks["looks"] += 1
                    looks["lines"] += shmdat_lines
                elif nothing or arg == (0, []):
                    empty["polls"] += 1
                    empty["lines"] += shmdat_lines
                else:
                    (stack[-1][1] if stack else lines).update(counted)
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
    own = sum(n for (path, _), n in per_function.items() if not path.startswith("bench/"))
    print(f"{args.layer} {args.test} {args.size} B: {own / iterations:.0f} shmdat lines per "
          f"iteration, the bench's own loop left out ({sum(per_function.values()) / iterations:.0f} "
          f"with it: its waiting loop varies with the load), {sum(calls.values()) / iterations:.0f} calls")
    for (path, name), n in per_function.most_common(args.top):
        print(f"{n / iterations:7.1f}  {path}:{name}")
    if looks["looks"]:
        print(f"a look at the peers: {looks['lines'] / looks['looks']:.0f} shmdat lines "
              f"({looks['looks'] / iterations:.2f} per iteration here, left out above)")
    if empty["polls"]:
        print(f"an empty poll: {empty['lines'] / empty['polls']:.0f} shmdat lines "
              f"({empty['polls'] / iterations:.1f} per iteration here, left out above)")


if __name__ == "__main__":
    main()
