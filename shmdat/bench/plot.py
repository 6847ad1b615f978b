"""The --plot figure: latency and bandwidth against size (needs matplotlib, imported
only when --plot is given)."""

from matplotlib.figure import Figure       # not pyplot: no backend, no display, no global state
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from .report import SHORT, TITLES, WAIT_TITLES, size_text

# A colour per transport; a line style and a hollow marker per operation, so that
# lines lying on one another (RDMA read and write) both stay visible.
COLORS = {"shmdat": "tab:blue", "shmdat.verbs": "tab:purple", "multiprocessing.Pipe": "tab:orange",
          "pyzmq": "tab:green", "mpi4py": "tab:red", "memcpy": "tab:gray"}
STYLES = {"send": ("-", "o"), "rdma_write": ("--", "s"), "rdma_read": (":", "^"), "memcpy": ("-.", "D")}


def _label(transport, op):
    return "memcpy (numpy.copyto)" if op == "memcpy" else f"{SHORT.get(transport, transport)} {TITLES[op]}"


def _plain_numbers(axis, low, high):
    """Label a log axis 0.01, 1, 100 (not 10^-2, 10^0, 10^2); one that spans less than
    a decade also gets 2, 3 and 5 times a power of ten, or it would show one label."""
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    axis.set_major_formatter(plain)
    if high / low < 10:
        axis.set_minor_locator(LogLocator(subs=(2, 3, 5)))
        axis.set_minor_formatter(plain)


def draw(rows, path, machine, command):
    """Latency and bandwidth against size: a panel per metric and wait mode, a line per
    transport and operation (numpy.copyto, the memory's limit, in every bandwidth panel);
    titled with the command, the date and the machine."""
    metrics = [m for m in ("latency", "bandwidth") if any(r["metric"] == m for r in rows)]
    waits = [w for w in WAIT_TITLES if any(r["wait"] == w and r["op"] != "memcpy" for r in rows)]
    sizes = sorted({r["size"] for r in rows})
    fig = Figure(figsize=(6 * len(waits), 4 * len(metrics)))
    axes = fig.subplots(len(metrics), len(waits), squeeze=False)
    for (metric, wait), ax in zip([(m, w) for m in metrics for w in waits], axes.flat):
        shown = [r for r in rows if r["metric"] == metric and (r["wait"] == wait or r["op"] == "memcpy")]
        for transport, op in sorted({(r["transport"], r["op"]) for r in shown},
                                    key=lambda s: (list(COLORS).index(s[0]), list(STYLES).index(s[1]))):
            pts = sorted((r["size"], r["median"]) for r in shown if (r["transport"], r["op"]) == (transport, op))
            linestyle, marker = STYLES[op]
            ax.plot(*zip(*pts), color=COLORS[transport], linestyle=linestyle, marker=marker,
                    markerfacecolor="none", label=_label(transport, op))
        ax.set_title(f"{metric}, {WAIT_TITLES[wait]}", fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sizes, [size_text(n) for n in sizes], fontsize=8)
        ax.xaxis.set_minor_locator(NullLocator())
        _plain_numbers(ax.yaxis, *ax.get_ylim())
        ax.set_xlabel("message size")
        ax.set_ylabel("us (lower is better)" if metric == "latency" else "GB/s (higher is better)")
        ax.grid(True, which="both", alpha=0.3)
    # One legend for every panel, beside them: it never covers a point.
    handles, labels = {}, []
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    fig.legend([handles[label] for label in labels], labels, loc="center left", bbox_to_anchor=(1.0, 0.5),
               fontsize=9, frameon=False)
    fig.suptitle(f"{command}\n{machine['date'].replace('T', ' ')}, {machine['cpu']}, {machine['cores']} cores,"
                 f" host {machine['host']}, Python {machine['python']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
