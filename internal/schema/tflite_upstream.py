"""Compares edgeload's TFLite schema with LiteRT's, and writes the options tables.

LiteRT's Python package (ai-edge-litert) ships the Python code flatc wrote
from upstream's schema.fbs (ai_edge_litert/schema_py_generated.py). This
script reads the tables, their field ids and wire types, and the unions'
member tags from it, and:

  python3 tflite_upstream.py options > tflite_options.fbs
      writes the tables tflite.fbs leaves out: the builtin options tables
      and the quantization details, which only the verifier visits (the C++
      Verifier LiteRT runs checks every field of them, and so must edgeload's);
  python3 tflite_upstream.py check tflite.fbs tflite_options.fbs
      prints every difference between the two schemas and LiteRT's (a table,
      field, field id or wire type, a union member or its tag) and exits 1
      if there is one.

Enums are written as their underlying types: the verifier needs only the
size. Deprecated fields (those flatc wrote no accessor for) keep their id as
"(deprecated)" fields.
"""

import os
import re
import sys

SCALAR = {
    "Int8": "byte", "Uint8": "ubyte", "Bool": "bool", "Int16": "short", "Uint16": "ushort",
    "Int32": "int", "Uint32": "uint", "Int64": "long", "Uint64": "ulong",
    "Float32": "float", "Float64": "double",
}
SIZE = {"byte": 1, "ubyte": 1, "bool": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4,
        "long": 8, "ulong": 8, "float": 4, "double": 8}
# The unions edgeload's schema declares; their members are what the
# verifier walks into.
UNIONS = ["QuantizationDetails", "SparseIndexVector", "BuiltinOptions", "BuiltinOptions2"]


def upstream_source():
    import ai_edge_litert
    return open(os.path.join(os.path.dirname(ai_edge_litert.__file__), "schema_py_generated.py")).read()


def snake(camel):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", camel)
    s = re.sub(r"([A-Z])([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def upstream():
    """Returns {table: [(CamelName, type) or None per field id]}, {union: {member: tag}}."""
    src = upstream_source()
    classes = {m.group(1): m.group(2) for m in
               re.finditer(r"^class (\w+)\(object\):\n(.*?)(?=^class |\Z)", src, re.M | re.S)}
    unions = {}
    for name, body in classes.items():
        if "__slots__" not in body and re.search(r"^    NONE = 0$", body, re.M):
            unions[name] = {m: int(t) for m, t in re.findall(r"^    (\w+) = (\d+)$", body, re.M) if m != "NONE"}
    tables = {}
    for name, n in re.findall(r"^def (\w+)Start\(builder\):\n    builder\.StartObject\((\d+)\)", src, re.M):
        tables[name] = [None] * int(n)
    adds = re.findall(r"^def (\w+)Add(\w+)\(builder, \w+\):\n    builder\.(\w+)\((\d+), ", src, re.M)
    for table, field, call, slot in adds:
        if table not in tables:
            continue
        body = classes[table]
        m = re.search(r"    # %s\n    def %s\(self(?:, j)?\):\n(.*?)(?=\n    # |\n\n|\Z)" % (table, field), body, re.S)
        acc = m.group(1) if m else ""
        sm = re.match(r"Prepend(\w+?)Slot$", call)
        if sm and sm.group(1) in SCALAR:
            typ = SCALAR[sm.group(1)]
        elif "self._tab.Union(" in acc:
            tm = re.search(r"(\w+)Creator\(self\.\w+Type, \w+\.%s\(\)\)" % field, classes.get(table + "T", ""))
            typ = "UNION:" + (tm.group(1) if tm else "?")
        elif "self._tab.Vector(o)" in acc:
            em = re.search(r"number_types\.(\w+)Flags, a \+", acc)
            om = re.search(r"obj = (\w+)\(\)", acc)
            if em:
                typ = "[%s]" % SCALAR[em.group(1)]
            elif "self._tab.String(a" in acc:
                typ = "[string]"
            elif om:
                typ = "[%s]" % om.group(1)
            else:
                typ = "[?]"
        elif "self._tab.String(o" in acc:
            typ = "string"
        else:
            om = re.search(r"obj = (\w+)\(\)", acc)
            typ = om.group(1) if om else "?"
        tables[table][int(slot)] = (field, typ)
    # A union is two slots: its tag (Type, ubyte) and its value. Merge them.
    for name, fields in tables.items():
        out = []
        for f in fields:
            if f and f[1].startswith("UNION:") and out and out[-1] and out[-1][0] == f[0] + "Type":
                out[-1] = (f[0], f[1][6:])
                out.append("value")
            else:
                out.append(f)
        tables[name] = out
    return tables, unions


def parse_fbs(paths):
    """Returns {table: [(snake_name, type, deprecated)] by id}, {union: {member: tag}}, {enum: scalar}."""
    tables, unions, enums = {}, {}, {}
    for path in paths:
        src = re.sub(r"//[^\n]*", "", open(path).read())
        for name, typ in re.findall(r"\benum (\w+)\s*:\s*(\w+)", src):
            enums[name] = typ
        for name, body in re.findall(r"\bunion (\w+)\s*\{(.*?)\}", src, re.S):
            members, tag = {}, 0
            for m in re.finditer(r"(\w+)\s*(?:=\s*(\d+))?", body):
                tag = int(m.group(2)) if m.group(2) else tag + 1
                members[m.group(1)] = tag
            unions[name] = members
        for name, body in re.findall(r"\btable (\w+)\s*(?:\([^)]*\))?\s*\{(.*?)\}", src, re.S):
            fields = []
            for m in re.finditer(r"(\w+)\s*:\s*(\[?\w+\]?)\s*(?:=\s*[-\w.]+)?\s*(\([^)]*\))?\s*;", body):
                fields.append((m.group(1), m.group(2), "deprecated" in (m.group(3) or "")))
            tables[name] = fields
    return tables, unions, enums


def check(paths):
    up_tables, up_unions = upstream()
    tables, unions, enums = parse_fbs(paths)
    problems = []
    for u in UNIONS:
        if unions.get(u) != up_unions.get(u):
            mine, theirs = unions.get(u, {}), up_unions.get(u, {})
            diff = sorted(set(mine.items()) ^ set(theirs.items()))
            problems.append("union %s: members differ from LiteRT's: %s" % (u, diff[:8]))
    # Every table reachable from Model and the unions must be LiteRT's.
    todo, seen = ["Model"] + [m for u in UNIONS for m in up_unions.get(u, {})], set()
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        if t not in tables:
            problems.append("table %s: missing" % t)
            continue
        mine = []
        for name, typ, depr in tables[t]:
            mine.append(None if depr else (camel(name), enums.get(typ, typ)))
            if typ in up_unions:
                mine.append("value")
        theirs = up_tables.get(t)
        if theirs is None:
            problems.append("table %s: not LiteRT's" % t)
            continue
        if len(mine) != len(theirs):
            problems.append("table %s: %d field ids, LiteRT's has %d" % (t, len(mine), len(theirs)))
        for i, (a, b) in enumerate(zip(mine, theirs)):
            if a != b:
                problems.append("table %s: field id %d is %s, LiteRT's is %s" % (t, i, a, b))
        for f in theirs:
            if f and f != "value":
                base = f[1].strip("[]")
                if base in up_tables:
                    todo.append(base)
    for p in problems:
        print(p)
    return 1 if problems else 0


def options(main_path):
    up_tables, up_unions = upstream()
    tables, _, _ = parse_fbs([main_path])
    out = []
    todo = [m for u in UNIONS for m in up_unions[u]]
    done = set(tables)
    while todo:
        t = todo.pop(0)
        if t in done:
            continue
        done.add(t)
        out.append("table %s {" % t)
        for i, f in enumerate(up_tables[t]):
            if f == "value":
                continue
            if f is None:
                out.append("  deprecated_%d:ubyte (deprecated);" % i)
                continue
            name, typ = f
            out.append("  %s:%s;" % (snake(name), typ))
            base = typ.strip("[]")
            if base in up_tables and base not in done:
                todo.append(base)
        out.append("}")
        out.append("")
    print(HEADER + "\n".join(out).rstrip() + "\n")


HEADER = """// Generated by tflite_upstream.py from LiteRT's schema (the Python code
// flatc wrote from upstream's schema.fbs, in ai-edge-litert): the tables of
// the unions tflite.fbs declares that tflite.fbs leaves out. No loader
// reads them; the verifier checks every field, as the C++ Verifier LiteRT
// runs does. Enums are written as their underlying types. Regenerate with
// `python3 tflite_upstream.py options > tflite_options.fbs`.

namespace tflitefb;

"""

if __name__ == "__main__":
    if sys.argv[1:2] == ["options"]:
        options(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite.fbs"))
    elif sys.argv[1:2] == ["check"]:
        sys.exit(check(sys.argv[2:]))
    else:
        sys.exit(__doc__)
