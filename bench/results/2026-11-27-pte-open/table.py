import json, statistics, collections, os, sys
d = sys.argv[1]
loop = collections.defaultdict(list)
for l in open(os.path.join(d, 'loop.jsonl')):
    j = json.loads(l)
    f = os.path.basename(j['file']).replace('.pte', '')
    if f.startswith('pte-4G'): f = 'pte-4G'
    mode = j['mode']
    key = {'cxx-verify': 'cv', 'cxx-pread': 'cp'}.get(mode)
    if key is None:
        key = None
    loop[(f, mode)].append(j['median_us'])
# loadbench before/after both have mode "whole": order in file: cv, before, cp, after
rows = collections.defaultdict(lambda: collections.defaultdict(list))
lines = [json.loads(l) for l in open(os.path.join(d, 'loop.jsonl'))]
for i in range(0, len(lines), 4):
    cv, lb0, cp, lb1 = lines[i:i+4]
    f = os.path.basename(cv['file']).replace('.pte', '')
    if f.startswith('pte-4G'): f = 'pte-4G'
    rows[f]['cv'].append(cv['median_us']); rows[f]['b0'].append(lb0['median_us'])
    rows[f]['cp'].append(cp['median_us']); rows[f]['b1'].append(lb1['median_us'])
print("| file | C++ verify | C++ pread | edgeload before | edgeload after | before / verify | after / verify | after / pread |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for f, r in rows.items():
    m = {k: statistics.median(v) for k, v in r.items()}
    print(f"| {f} | {m['cv']:.1f} µs | {m['cp']:.1f} µs | {m['b0']:.1f} µs | {m['b1']:.1f} µs | {m['b0']/m['cv']:.2f} | {m['b1']/m['cv']:.2f} | {m['b1']/m['cp']:.2f} |")
print()
print("| file | C++ mode | C++ median | edgeload | edgeload median | ratio of medians | pair ratio median (p10–p90) |")
print("|---|---|---:|---|---:|---:|---:|")
for l in open(os.path.join(d, 'pairbench.jsonl')):
    j = json.loads(l)
    a = j['a'].split(); b = j['b'].split()
    f = os.path.basename(a[2]).replace('.pte', '')
    if f.startswith('pte-4G'): f = 'pte-4G'
    lb = 'before' if 'before' in b[0] else 'after'
    print(f"| {f} | {a[1]} | {j['a_median_us']:.1f} µs | {lb} | {j['b_median_us']:.1f} µs | {j['ratio_median']:.2f} | {j['pair_ratio_median']:.2f} ({j['pair_ratio_p10']:.2f}–{j['pair_ratio_p90']:.2f}) |")
