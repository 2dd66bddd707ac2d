"""The tables of run.sh's output: edgeload Open over the C++ Verifier
load, ratios of medians, plain loop (before and after) and pairbench
(after). Usage: python3 table.py DIR > DIR/tables.md"""
import collections, json, os, statistics, sys

d = sys.argv[1]


def name(path):
    f = os.path.basename(path)
    for ext in ('.pte', '.tflite'):
        f = f.removesuffix(ext)
    return f


for fmt in ('pte', 'tflite'):
    loop = os.path.join(d, f'loop-{fmt}.jsonl')
    if not os.path.exists(loop):
        continue
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    lines = [json.loads(l) for l in open(loop)]
    for i in range(0, len(lines), 3):  # C++, before, after for one file
        cxx, before, after = lines[i:i + 3]
        f = name(cxx['file'])
        assert name(before['file']) == f and name(after['file']) == f
        rows[f]['c'].append(cxx['median_us'])
        rows[f]['b'].append(before['median_us'])
        rows[f]['a'].append(after['median_us'])
    pair = {}
    for l in open(os.path.join(d, f'pairbench-{fmt}.jsonl')):
        j = json.loads(l)
        pair[name(j['a'].split()[2])] = j
    print(f"### .{fmt}\n")
    print("| file | C++ verify | edgeload before | edgeload after | plain loop: before ÷ C++ | plain loop: after ÷ C++ | pairbench: after ÷ C++ (pair ratios p10–p90) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for f, r in rows.items():
        m = {k: statistics.median(v) for k, v in r.items()}
        p = pair.get(f)
        ps = f"{p['ratio_median']:.2f} ({p['pair_ratio_p10']:.2f}–{p['pair_ratio_p90']:.2f})" if p else "–"
        print(f"| {f} | {m['c']:.1f} µs | {m['b']:.1f} µs | {m['a']:.1f} µs | {m['b'] / m['c']:.2f} | {m['a'] / m['c']:.2f} | {ps} |")
    print()
print(f"Medians of {len(lines) // 3 // max(1, len(rows))} rounds of the plain loop (each round's median of its loads); pairbench's ratio of medians over all its loads.")
