#!/usr/bin/env python3
"""Merge the CSVs of one bench/run-all.sh run into ratio tables, judge the issue's targets 1-6, and
write OUT_DIR/results.md (the targets, the cases of the issue's table of peers, every case),
OUT_DIR/merged.csv and OUT_DIR/bench.png (GB/s against n).

  report.py --out-dir OUT [--env OUT/env.txt] [--log OUT/ew.txt ...] CSV...

Needs only the standard library; the plot needs matplotlib (skipped with a note when it is missing).
CSV columns: impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy. impl is ew (the library), memcpy
(cudaMemcpy D2D moving the same bytes, from ew-bench's run), cub, torch, memcpy_cub, memcpy_torch,
ew_ctypes; offsets "host" marks host-overhead rows (us = host microseconds per call; launchers ew, raw,
cub, raw_chevron, raw_cub).
"""

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from torch_peer import DTYPE_SIZE  # noqa: E402  (torch_peer imports torch only inside main)

PEERS = ("cub", "torch")
# The cases of the issue's table of peers (op, out, in, log2 n, offsets), in its order.
ISSUE_CASES = (
    [("add", "f32", "f32", k, "aligned") for k in (20, 22, 24, 26, 28)]
    + [("add", d, d, 28, "aligned") for d in ("f16", "bf16")]
    + [("add", "i8", "i8", k, "aligned") for k in (24, 26, 28)]
    + [("add", d, d, 26, "aligned") for d in ("u8", "bool", "f64")]
    + [("relu", d, d, 26, "aligned") for d in ("f32", "f16", "i8")]
    + [("relu", "i8", "i8", 28, "aligned")]
    + [
        ("cast", out, source, 26, "aligned")
        for out, source in (("f16", "f32"), ("f32", "f16"), ("f32", "bf16"), ("f16", "f8e5m2"))
    ]
    + [("scale_add", "f32", "f32", 26, "aligned"), ("cast", "f8e4m3", "f32", 26, "aligned")]
    + [("add", "f32", "f32", k, offsets) for k, offsets in ((26, "same"), (26, "mixed"), (28, "mixed"))]
    + [("add", d, d, 26, o) for d in ("f16", "i8") for o in ("same", "mixed")]
)
ONE_BYTE = {"i8", "u8", "bool"}
COLUMNS = ["impl", "op", "out_dtype", "in_dtype", "n", "offsets", "us", "gbps", "vs_memcpy"]


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = set(COLUMNS) - set(reader.fieldnames or [])
            if missing:
                sys.exit("%s: missing columns %s" % (path, ", ".join(sorted(missing))))
            for r in reader:
                r["n"] = int(r["n"])
                r["us"] = float(r["us"])
                r["gbps"] = float(r["gbps"]) if r["gbps"] else 0.0
                rows.append(r)
    return rows


def log2_text(n):
    k = int(round(math.log2(n))) if n > 0 else 0
    return "2^%d" % k if (1 << k) == n else str(n)


def entry_text(entry):
    op, out, inp = entry
    return "%s %s" % (op, out) if out == inp else "%s %s←%s" % (op, out, inp)


def case_text(key):
    return "%s n=%s %s" % (entry_text(key[:3]), log2_text(key[3]), key[4])


def fmt(x, digits=1):
    return "—" if x is None else ("%.*f" % (digits, x))


class Results:
    def __init__(self, rows):
        self.gbps = {}  # (impl, op, out, in, n, offsets) -> GB/s
        self.host = {}  # launcher -> host us per call (from the run it came from)
        self.entries = []
        for r in rows:
            if r["offsets"] == "host":
                self.host[r["impl"]] = r["us"]
                continue
            key = (r["op"], r["out_dtype"], r["in_dtype"], r["n"], r["offsets"])
            self.gbps[(r["impl"],) + key] = r["gbps"]
            if r["impl"] == "ew" and key[:3] not in self.entries:
                self.entries.append(key[:3])
        self.cases = sorted(
            {k[1:] for k in self.gbps if k[0] == "ew"},
            key=lambda k: (
                self.entries.index(k[:3]),
                k[3],
                ("aligned", "same", "mixed").index(k[4]) if k[4] in ("aligned", "same", "mixed") else 9,
            ),
        )

    def get(self, impl, key):
        return self.gbps.get((impl,) + key)

    def best_peer(self, key):
        values = [(self.get(p, key), p) for p in PEERS if self.get(p, key)]
        return max(values) if values else (None, None)

    def ratios(self, key):
        ew = self.get("ew", key)
        memcpy = self.get("memcpy", key)
        best, who = self.best_peer(key)
        aligned = self.get("ew", key[:4] + ("aligned",))
        return {
            "ew": ew,
            "memcpy": memcpy,
            "best": best,
            "who": who,
            "vs_best": ew / best if ew and best else None,
            "vs_memcpy": ew / memcpy if ew and memcpy else None,
            "vs_aligned": ew / aligned if ew and aligned and key[4] != "aligned" else None,
            "vs_torch": ew / self.get("torch", key) if ew and self.get("torch", key) else None,
        }


def case_row(results, key):
    r = results.ratios(key)
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        entry_text(key[:3]),
        log2_text(key[3]),
        key[4],
        fmt(r["ew"]),
        fmt(r["memcpy"]),
        fmt(results.get("cub", key)),
        fmt(results.get("torch", key)),
        fmt(r["vs_best"], 3),
        fmt(r["vs_memcpy"], 3),
        fmt(r["vs_aligned"], 3),
    )


def judge(results, bit_exact):
    """Each target: (number, text, status, detail, failing case keys)."""
    targets = []

    def worst(keys, ratio_name):
        pairs = [
            (results.ratios(k)[ratio_name], k) for k in keys if results.ratios(k)[ratio_name] is not None
        ]
        return min(pairs) if pairs else (None, None)

    def verdict(checked, missed):
        return "not measured" if not checked else ("met" if not missed else "missed")

    def ratio_floor(keys, ratio_name, floor):
        """The measured cases, those below floor, and the worst-case detail of a ratio target."""
        keys = [k for k in keys if results.ratios(k)[ratio_name] is not None]
        missed = [k for k in keys if results.ratios(k)[ratio_name] < floor]
        w, kw = worst(keys, ratio_name)
        detail = "worst %s (%s); %d/%d cases met" % (
            fmt(w, 3),
            case_text(kw) if kw else "—",
            len(keys) - len(missed),
            len(keys),
        )
        return keys, missed, detail

    aligned = [k for k in results.cases if k[4] == "aligned"]

    # 1. n >= 2^26: >= 1.00x best peer and >= 1.02x memcpy; aim 4450 GB/s for 2-, 4-, 8-byte dtypes.
    keys = [k for k in aligned if k[3] >= 1 << 26]
    missed = [
        k
        for k in keys
        if (results.ratios(k)["vs_best"] or 1.0) < 1.0 or (results.ratios(k)["vs_memcpy"] or 0.0) < 1.02
    ]
    wb, kb = worst(keys, "vs_best")
    wm, km = worst(keys, "vs_memcpy")
    wide = [results.get("ew", k) for k in keys if min(dtype_size(k[1]), dtype_size(k[2])) >= 2]
    detail = "worst vs best peer %s (%s); worst vs memcpy %s (%s); %d/%d cases met" % (
        fmt(wb, 3),
        case_text(kb) if kb else "—",
        fmt(wm, 3),
        case_text(km) if km else "—",
        len(keys) - len(missed),
        len(keys),
    )
    if wide:
        detail += "; slowest 2/4/8-byte case %.0f GB/s (aim 4450)" % min(wide)
    targets.append(
        (
            1,
            "n ≥ 2^26: ≥ 1.00× best of {CUB, PyTorch} and ≥ 1.02× cudaMemcpy",
            verdict(keys, missed),
            detail,
            missed,
        )
    )

    # 2. 2^20 <= n <= 2^24: >= 1.00x best peer.
    keys, missed, detail = ratio_floor([k for k in aligned if (1 << 20) <= k[3] <= (1 << 24)], "vs_best", 1.0)
    targets.append((2, "2^20 ≤ n ≤ 2^24: ≥ 1.00× best peer", verdict(keys, missed), detail, missed))

    # 3. 1-byte dtypes at 2^26 and 2^28: >= 1.00x PyTorch.
    one_byte = [k for k in aligned if k[3] in (1 << 26, 1 << 28) and {k[1], k[2]} <= ONE_BYTE]
    keys, missed, detail = ratio_floor(one_byte, "vs_torch", 1.0)
    text = "1-byte dtypes, n = 2^26 and 2^28: ≥ 1.00× PyTorch"
    targets.append((3, text, verdict(keys, missed), detail, missed))

    # 4. Misaligned (same offset, mixed offsets) >= 0.97x aligned, bit-exact.
    misaligned = [k for k in results.cases if k[4] != "aligned"]
    keys, missed, detail = ratio_floor(misaligned, "vs_aligned", 0.97)
    detail += "; bit-exact: %s" % {
        True: "yes (ew-bench spot checks)",
        False: "NO (ew-bench check failures)",
        None: "unknown",
    }[bit_exact]
    peer_keys = [k for k in misaligned if results.ratios(k)["vs_best"] is not None]
    if peer_keys:
        wp, kp = worst(peer_keys, "vs_best")
        detail += "; against the best peer at the same offsets: worst %s (%s)" % (fmt(wp, 3), case_text(kp))
    status = verdict(keys, missed)
    if status == "met" and bit_exact is False:
        status = "missed"
    targets.append(
        (4, "misaligned pointers (same / mixed offsets): ≥ 0.97× aligned, bit-exact", status, detail, missed)
    )

    # 5. Host time per call at n = 1024 <= raw launch + 0.15 us.
    ew, raw = results.host.get("ew"), results.host.get("raw")
    if ew is not None and raw is not None:
        status = "met" if ew <= raw + 0.15 else "missed"
        detail = "ew_binary %.3f µs, raw cudaLaunchKernel %.3f µs: %+.3f µs (limit +0.15)" % (
            ew,
            raw,
            ew - raw,
        )
        # CUB's figures come from the CUB peer's own process: set against that process's raw launch.
        cub, raw_cub = results.host.get("cub"), results.host.get("raw_cub")
        if cub is not None and raw_cub is not None:
            detail += "; CUB %.3f µs, %+.3f µs over a raw cudaLaunchKernel in its own process" % (
                cub,
                cub - raw_cub,
            )
        elif cub is not None:
            detail += "; CUB %.3f µs" % cub
    else:
        status, detail = "not measured", "no host-overhead rows"
    targets.append((5, "host time per call at n = 1024 ≤ raw launch + 0.15 µs", status, detail, []))

    # 6. f16 -> f32 cast >= 4000 GB/s at 2^26.
    key = ("cast", "f32", "f16", 1 << 26, "aligned")
    value = results.get("ew", key)
    targets.append(
        (
            6,
            "cast f16→f32 at 2^26 ≥ 4000 GB/s",
            "not measured" if value is None else ("met" if value >= 4000 else "missed"),
            "%s GB/s" % fmt(value),
            [],
        )
    )
    return targets


def dtype_size(name):
    return DTYPE_SIZE.get(name, 0)


def read_env(path):
    env = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if ":" in line:
                    name, value = line.split(":", 1)
                    env[name.strip()] = value.strip()
    return env


def read_logs(paths):
    """Summary lines ('# ...' totals, cross-check results) and whether ew-bench's checks all passed."""
    lines, bit_exact = [], None
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if line.startswith("cross-check") or (line.startswith("# ") and "failures" in line):
                    lines.append(line)
                if line.startswith("# ew:") and "checked bit-exact" in line:
                    failures = int(line.rsplit(",", 1)[1].split()[0])
                    checked = int(line.split(",")[1].split()[0])
                    bit_exact = failures == 0 and checked > 0
    return lines, bit_exact


def markdown(results, targets, env, log_lines, plot_name):
    out = ["# libelementwise benchmark: one run, library against CUB, PyTorch and cudaMemcpy", ""]
    for name in ("date", "gpu", "device", "driver", "cuda", "torch"):
        if name in env:
            out.append("- %s: %s" % (name, env[name]))
    out += [
        "- method: bench/NOTES.md (rotating slices of ≥ 2 GiB pools, CUDA events, warm-up, median of "
        "≥ 5 batches; GB/s = bytes read + written / time; memcpy = cudaMemcpy D2D moving the same "
        "bytes, same run)",
        "",
        "## Targets (issue 3)",
        "",
        "| # | target | status | detail |",
        "|---|---|---|---|",
    ]
    for number, text, status, detail, _ in targets:
        mark = {"met": "**met**", "missed": "**MISSED**"}.get(status, status)
        out.append("| %d | %s | %s | %s |" % (number, text, mark, detail))
    for number, _, status, _, missed in targets:
        if missed:
            out.append("")
            out.append(
                "Target %d missed on: %s"
                % (number, "; ".join(case_text(k) for k in missed[:40]) + (" …" if len(missed) > 40 else ""))
            )
    header = [
        "GB/s; ratios are the library's figure over the other. best peer = the faster of CUB and PyTorch.",
        "",
        "| case | n | offsets | library | memcpy | CUB | PyTorch "
        "| lib / best peer | lib / memcpy | lib / aligned |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    issue_keys = [c[:3] + (1 << c[3], c[4]) for c in ISSUE_CASES]
    issue_keys = [key for key in issue_keys if results.get("ew", key)]
    if issue_keys:
        out += ["", "## The issue's cases", ""] + header + [case_row(results, key) for key in issue_keys]
    out += ["", "## Every case", ""] + header + [case_row(results, key) for key in results.cases]
    if results.host:
        out += [
            "",
            "## Host time per call (add f32, n = 1024, batches of 256 calls)",
            "",
            "| launcher | µs per call |",
            "|---|---:|",
        ]
        names = {
            "ew": "libelementwise ew_binary",
            "raw": "raw cudaLaunchKernel (ew-bench process)",
            "cub": "CUB DeviceTransform",
            "raw_chevron": "raw <<<>>> (CUB peer process)",
            "raw_cub": "raw cudaLaunchKernel (CUB peer process)",
        }
        for launcher, us in results.host.items():
            out.append("| %s | %.3f |" % (names.get(launcher, launcher), us))
    if log_lines:
        out += ["", "## Checks and summaries", "", "```"] + log_lines + ["```"]
    if plot_name:
        out += ["", "## GB/s against n", "", "![GB/s against n](%s)" % plot_name]
    return "\n".join(out) + "\n"


def plot(results, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        print("report: no plot (%s)" % error)
        return False
    entries = results.entries
    columns = 4
    rows = max(1, (len(entries) + columns - 1) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows), squeeze=False)
    styles = [
        ("ew", "aligned", "library", dict(color="C0", marker="o")),
        ("ew", "same", "library, +1 element", dict(color="C0", linestyle="--", alpha=0.6)),
        ("ew", "mixed", "library, +1/+2/+0", dict(color="C0", linestyle=":", alpha=0.6)),
        ("memcpy", "aligned", "cudaMemcpy D2D", dict(color="gray", linestyle="--")),
        ("cub", "aligned", "CUB", dict(color="C2", marker="s", markersize=3)),
        ("torch", "aligned", "PyTorch", dict(color="C3", marker="^", markersize=3)),
    ]
    for index, entry in enumerate(entries):
        ax = axes[index // columns][index % columns]
        for impl, offsets, label, style in styles:
            points = sorted(
                (k[3], v)
                for k, v in ((k[1:], v) for k, v in results.gbps.items() if k[0] == impl)
                if k[:3] == entry and k[4] == offsets
            )
            if points:
                ax.plot([math.log2(n) for n, _ in points], [v for _, v in points], label=label, **style)
        ax.set_title(entry_text(entry), fontsize=10)
        ax.set_xlabel("log2 n", fontsize=8)
        ax.set_ylabel("GB/s", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    for index in range(len(entries), rows * columns):
        axes[index // columns][index % columns].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=9)
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (3.0 * rows)))  # room for the legend
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return True


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--env", help="env.txt written by run-all.sh (date, gpu, driver, cuda, torch)")
    parser.add_argument(
        "--log", action="append", default=[], help="stdout of a bench program, for its summary"
    )
    args = parser.parse_args()

    rows = read_rows(args.csv)
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "merged.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    results = Results(rows)
    log_lines, bit_exact = read_logs(args.log)
    targets = judge(results, bit_exact)
    plot_name = (
        "bench.png" if results.cases and plot(results, os.path.join(args.out_dir, "bench.png")) else None
    )
    with open(os.path.join(args.out_dir, "results.md"), "w") as f:
        f.write(markdown(results, targets, read_env(args.env), log_lines, plot_name))
    for number, text, status, detail, _ in targets:
        print(
            "target %d %-7s %s: %s" % (number, status.upper() if status == "missed" else status, text, detail)
        )
    print("report: %s" % os.path.join(args.out_dir, "results.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
