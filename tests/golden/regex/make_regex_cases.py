#!/usr/bin/env python3
"""Makes the golden cases for constraint/regex_parser and constraint/json_formats.

regex_cases.json: for each pattern (ours: the ECMA-262/Python common subset of
constraint/regex_parser.h) and mode (fullmatch, or search as JSON Schema's `pattern`),
strings that match and strings that do not, as Python's `re` decides on the pattern
translated to ECMA-262 meanings:
  .        -> [^\\n\\r\\u2028\\u2029]     (ECMA's line terminators; Python excludes only \\n)
  \\s \\S    -> ECMA's whitespace set     (Python's is Unicode's, or ASCII's under re.ASCII)
  \\d \\w    -> ASCII (re.ASCII)
  $        -> \\Z                      (Python's $ also matches before a final \\n)
  (?<n>    -> (?P<n>                  \\u{H} and \\uHHHH\\uHHHH pairs -> \\U0010FFFF form
The translator refuses what our parser refuses (lookaround, backreferences, \\b, \\p, ...),
so every pattern in the file must compile. Strings are sampled from the pattern (via
Python's own parse of it), mutated, and mixed with fixed awkward ones (controls, quotes,
backslashes, non-ASCII, line separators).

format_cases.json: candidates for the formats that python3-jsonschema's FormatChecker
really checks with no extra packages installed: date (datetime.date.fromisoformat),
ipv4, ipv6 (ipaddress), uuid (uuid.UUID plus hyphen positions). email is only checked
for an "@", and date-time, time, duration, hostname, uri need packages that are absent,
so their cases are hand-written in tests/unit/json_formats_test.cc.

Usage: make_regex_cases.py [MASKBENCH_DATA_DIR]  (default /work/shared/golden/maskbench/data)
Writes next to this script. Deterministic (fixed seed).
"""
import glob
import json
import os
import random
import re
import sys
import warnings

try:
    import re._parser as sre_parse  # Python 3.11+
    from re import _constants as C
except ImportError:  # pragma: no cover
    import sre_parse
    import sre_constants as C

warnings.simplefilter("ignore")  # FutureWarning on [[ and -- in classes

HERE = os.path.dirname(os.path.abspath(__file__))
ECMA_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
ECMA_NOT_SPACE = ("\x00-\x08\x0e-\x1f\x21-\x9f\xa1-\u167f\u1681-\u1fff\u200b-\u2027"
                  "\u202a-\u202e\u2030-\u205e\u2060-\u2fff\u3001-\ufefe\uff00-\U0010ffff")


class Unsupported(Exception):
    pass


def esc(cp):
    return "\\U%08x" % cp


def translate(p):
    """Our pattern -> an equivalent Python pattern (with re.ASCII); Unsupported if ours refuses it."""
    out = []
    i = 0
    n = len(p)

    def hexn(j, k):
        s = p[j:j + k]
        if len(s) != k or not all(c in "0123456789abcdefABCDEF" for c in s):
            raise Unsupported("bad hex escape")
        return int(s, 16)

    def escape(i, in_class):
        """At p[i] == '\\': returns (python text, next index)."""
        if i + 1 >= n:
            raise Unsupported("trailing backslash")
        c = p[i + 1]
        j = i + 2
        if c in "dDwW":
            return "\\" + c, j
        if c == "s":
            return (ECMA_SPACE if in_class else "[" + ECMA_SPACE + "]"), j
        if c == "S":
            return (ECMA_NOT_SPACE if in_class else "[^" + ECMA_SPACE + "]"), j
        if c in "ntrfv":
            return "\\" + c, j
        if c == "0":
            if j < n and p[j].isdigit():
                raise Unsupported("octal")
            return "\\x00", j
        if c == "x":
            return esc(hexn(j, 2)), j + 2
        if c == "u":
            if j < n and p[j] == "{":
                k = p.index("}", j)
                v = int(p[j + 1:k], 16)
                if v > 0x10FFFF or k == j + 1:
                    raise Unsupported("bad \\u{}")
                return esc(v), k + 1
            v = hexn(j, 4)
            j += 4
            if 0xD800 <= v <= 0xDBFF and p[j:j + 2] == "\\u":
                try:
                    lo = hexn(j + 2, 4)
                    if 0xDC00 <= lo <= 0xDFFF:
                        return esc(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)), j + 6
                except Unsupported:
                    pass
            return esc(v), j
        if c == "b" and in_class:
            return "\\x08", j
        if c.isascii() and (c.isalnum()):
            raise Unsupported("escape \\" + c)
        return re.escape(c), j

    depth = 0
    while i < n:
        c = p[i]
        if c == "\\":
            t, i = escape(i, False)
            out.append(t)
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
            i += 1
        elif c == "$":
            out.append("\\Z")
            i += 1
        elif c == "(":
            if p.startswith("(?:", i) or p.startswith("(?P<", i):
                out.append(p[i:i + 3])
                i += 3
            elif p.startswith("(?<", i) and not p.startswith("(?<=", i) and not p.startswith("(?<!", i):
                out.append("(?P<")
                i += 3
            elif p.startswith("(?", i):
                raise Unsupported("group extension")
            else:
                out.append("(")
                i += 1
        elif c == "{" and re.match(r"\{,\d*\}", p[i:]):
            raise Unsupported("{,n}")
        elif c == "[":
            j = i + 1
            cls = ["["]
            if j < n and p[j] == "^":
                cls.append("^")
                j += 1
            if j < n and p[j] == "]":
                raise Unsupported("] first in a class")
            while True:
                if j >= n:
                    raise Unsupported("unterminated class")
                if p[j] == "]":
                    cls.append("]")
                    j += 1
                    break
                if p[j] == "\\":
                    t, j = escape(j, True)
                    cls.append(t)
                elif p[j] == "[":
                    cls.append("\\[")
                    j += 1
                else:
                    cls.append(p[j])
                    j += 1
            out.append("".join(cls))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --- String sampling from Python's parse of the translated pattern ---------------------

POOL = (list("abcxyzABCXYZ019_-. /:@") + ["\n", "\r", "\t", '"', "\\", "\x00", "\x1f", "\x7f",
        "é", "ü", "€", "\u2028", "\xa0", "\ufeff", "😀", "中", "{", "}", "[", "]", "(", ")"])


def in_set(items, ch):
    neg = False
    hit = False
    o = ord(ch)
    for op, av in items:
        if op == C.NEGATE:
            neg = True
        elif op == C.LITERAL:
            hit |= o == av
        elif op == C.RANGE:
            hit |= av[0] <= o <= av[1]
        elif op == C.CATEGORY:
            hit |= {
                C.CATEGORY_DIGIT: ch in "0123456789",
                C.CATEGORY_NOT_DIGIT: ch not in "0123456789",
                C.CATEGORY_WORD: ch.isascii() and (ch.isalnum() or ch == "_"),
                C.CATEGORY_NOT_WORD: not (ch.isascii() and (ch.isalnum() or ch == "_")),
            }[av]
    return hit != neg


def sample(tree, rng, out):
    for op, av in tree:
        if op == C.LITERAL:
            out.append(chr(av))
        elif op == C.NOT_LITERAL:
            out.append(rng.choice([c for c in POOL if ord(c) != av]))
        elif op == C.ANY:
            out.append(rng.choice([c for c in POOL if c != "\n"]))
        elif op == C.IN:
            cands = [c for c in POOL if in_set(av, c)]
            for op2, av2 in av:
                if op2 == C.LITERAL:
                    cands.append(chr(av2))
                elif op2 == C.RANGE:
                    cands += [chr(av2[0]), chr(av2[1]), chr(rng.randint(av2[0], av2[1]))]
            cands = [c for c in cands if in_set(av, c) and not 0xD800 <= ord(c) <= 0xDFFF]
            if cands:
                out.append(rng.choice(cands))
        elif op == C.BRANCH:
            sample(rng.choice(av[1]), rng, out)
        elif op == C.SUBPATTERN:
            sample(av[-1], rng, out)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            hi = min(hi, lo + 3)
            for _ in range(rng.randint(lo, hi) if lo <= 30 else lo):
                sample(sub, rng, out)
        elif op == C.AT:
            pass
        else:
            raise Unsupported("sampling " + str(op))


def mutate(s, rng):
    s = list(s)
    k = rng.randint(0, 2) if s else 0
    if k == 0:
        s.insert(rng.randint(0, len(s)), rng.choice(POOL))
    elif k == 1:
        del s[rng.randrange(len(s))]
    else:
        s[rng.randrange(len(s))] = rng.choice(POOL)
    return "".join(s)


FIXED = ["", "a", "0", " ", "\n", "\r", '"', "\\", "/", "é", "😀", "\u2028", "abc", "a\nb", "x\x00y",
         "\t\"\\/\x08\x0c\n\r\x01\x1f"]


def cases_for(pattern, search, rng, samples=10):
    py = re.compile(translate(pattern), re.ASCII)
    tree = sre_parse.parse(translate(pattern), re.ASCII)
    strings = set(FIXED)
    for _ in range(samples):
        out = []
        sample(tree, rng, out)
        s = "".join(out)
        if len(s) > 80:
            continue
        strings.add(s)
        strings.add(mutate(s, rng))
        strings.add(mutate(mutate(s, rng), rng))
        if search:
            strings.add(rng.choice(POOL) + s + rng.choice(POOL))
    yes, no = [], []
    for s in sorted(strings):
        m = py.search(s) if search else py.fullmatch(s)
        (yes if m else no).append(s)
    return {"pattern": pattern, "search": search, "match": yes, "nomatch": no}


HAND_FULL = [
    "abc", "a|b|c", "a*", "a+b?", "a{3}", "a{2,}", "a{2,4}", "a{0}", "a{0,0}b", "(ab)*c", "(?:ab|cd)+",
    "(?<year>\\d{4})-(?P<m>\\d{2})", "[a-z]+", "[^a-z]", "[^\\n]*", ".", ".*", ".+x", "\\d+\\.\\d*",
    "\\w+", "\\W", "\\s", "\\S+", "[\\s\\S]*", "[\\S]", "[^\\s]+", "[\\w-]+", "[-a]", "[a-]", "[\\]]",
    "[\\\\]", "[\\-]", "\\.", "\\/", "\\x41\\x7e", "\\u00e9", "\\u{1F600}", "\\uD83D\\uDE00",
    "[\\uD83D\\uDE00-\\uD83D\\uDE4F]+", "[é-ü]", "é+", "😀|x", "[😀-😂]", "\\t\\n\\r\\f\\v\\0", "[\\b]",
    "a*?b", "a+?", "a??", "a{2,3}?", "x{", "x{a}", "x{1,2", "}", "]", "a{1,2}{", '"', '\\"', "\\\\",
    "^abc$", "^abc", "abc$", "^$", "^", "$", "^a|b$", "(^a|b)c", "a(b$|c)", "^(?:a|b)$",
    "(a|ab)(c|bcd)(d*)", "(a|a)*b", "((a*)*)*b", "(x+x+)+y", "[a-c]{2}[^a-c]{2}", "\\d{1,3}(,\\d{3})*",
    "[\\x00-\\x1f]", "[^\\x00-\\x1f\"\\\\]*", "[\\u0000-\\uFFFF]", "()", "(|a)", "a||b", "[\\d\\D]",
    "[^\\d]", "[^\\W]", "a.c", "\\u2028", "[.]", "[$^]", "[\\^a]", "[a^]", "[[]", "[a[]", "\\{\\}",
    "[\\t-\\r]+", "[ -~]*", "[^ -~]", "\\u00A0", "[\\u{10000}-\\u{10FFFF}]", "\\x5c\\x22", "a{0,1}{",
    "(?:a{2}){2}", "((ab){1,2}c){2}", "[\\s\\d]+", "[^\\s\\d]+", "[\\S\\d]", "[^\\S]", "-?(0|[1-9]\\d*)(\\.\\d+)?",
    "[A-Za-z_$][\\w$]*", "(a|b|)+", "(a*b*)*c", "(?:)", "\\'", "\\ ", "\\é", "\\#", "[/]", "[\\/]+",
]
HAND_SEARCH = [
    "abc", "a|^b", "x$", "^x", "^$", "", "a.b", "\\d{3}", "^", "$", "^a|b$", "(^a|b)c", "^(a|b)", "(a|b)$",
    "\\s", "^\\S+$", "(?:^a)", "(?:x$)", "[\"\\\\]", "^(?:a|b$)",
]


def maskbench_patterns(root):
    pats = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "pattern" and isinstance(v, str):
                    pats.add(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for f in sorted(glob.glob(os.path.join(root, "*.json"))):
        try:
            with open(f, encoding="utf-8") as fh:
                d = json.load(fh)
        except (ValueError, UnicodeDecodeError):
            continue
        walk(d.get("schema", d))
    return sorted(pats)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/golden/maskbench/data"
    rng = random.Random(20240611)
    cases = []
    refused = []
    for p in HAND_FULL:
        cases.append(cases_for(p, False, rng))
    for p in HAND_SEARCH:
        cases.append(cases_for(p, True, rng))
    if os.path.isdir(root):
        for p in maskbench_patterns(root):
            try:
                translate(p)
                re.compile(translate(p), re.ASCII)
            except (Unsupported, re.error, ValueError):
                refused.append(p)
                continue
            cases.append(cases_for(p, True, rng, samples=6))
    with open(os.path.join(HERE, "regex_cases.json"), "w", encoding="utf-8") as f:
        f.write("{\n\"cases\": [\n")
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n],\n\"refused\": ")
        f.write(json.dumps(refused, ensure_ascii=False))
        f.write("\n}\n")
    write_formats(random.Random(7))
    print(f"{len(cases)} patterns, {sum(len(c['match']) + len(c['nomatch']) for c in cases)} strings, "
          f"{len(refused)} refused")


# --- Formats -----------------------------------------------------------------------------

def write_formats(rng):
    from jsonschema import FormatChecker
    fc = FormatChecker()

    def dates():
        years = ["0001", "1900", "1999", "2000", "2023", "2024", "2100", "2400", "9999", "1600", "1700", "2004"]
        for _ in range(600):
            y = rng.choice(years)
            m = "%02d" % rng.randint(0, 13)
            d = "%02d" % rng.choice([0, 1, 9, 10, 19, 20, 28, 29, 30, 31, 32])
            yield f"{y}-{m}-{d}"
        yield from ["2020-1-01", "2020-01-1", "20200101", "2020-W01-1", "2020-01-01T", " 2020-01-01",
                    "2020/01/01", "2020-01-01\n", "２０２０-01-01", "2020-02-3０"]

    def octet():
        return rng.choice(["0", "1", "9", "10", "99", "100", "199", "200", "249", "250", "255", "256", "300",
                           "01", "00", "000", "1a", "", " 1", "-1"])

    def ipv4s():
        for _ in range(300):
            k = rng.choice([4, 4, 4, 4, 3, 5])
            yield ".".join(octet() for _ in range(k))

    def ipv6s():
        hexes = ["0", "1", "a", "F", "ff", "0db8", "abcd", "ABCD", "0000", "12345", "g", ""]
        for _ in range(600):
            k = rng.randint(1, 9)
            groups = [rng.choice(hexes[:-3]) if rng.random() < 0.9 else rng.choice(hexes) for _ in range(k)]
            if rng.random() < 0.25:
                groups[-1] = ".".join(rng.choice(["1", "2", "127", "255", "256", "01"]) for _ in range(4))
            s = ":".join(groups)
            if rng.random() < 0.6:
                pos = rng.randint(0, k)
                parts = s.split(":")
                s = ":".join(parts[:pos]) + "::" + ":".join(parts[pos:])
            if rng.random() < 0.05:
                s += rng.choice([":", "%eth0", " ", ":::"])
            yield s
        yield from ["::", "::1", "1::", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4",
                    "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1::8", "1:::8", "1::2::3", "fe80::1%eth0"]

    def uuids():
        hx = "0123456789abcdefABCDEF"
        for _ in range(200):
            lens = [8, 4, 4, 4, 12]
            if rng.random() < 0.3:
                i = rng.randrange(5)
                lens[i] += rng.choice([-1, 1])
            parts = ["".join(rng.choice(hx) for _ in range(n)) for n in lens]
            s = "-".join(parts)
            if rng.random() < 0.1:
                i = rng.randrange(len(s))
                s = s[:i] + rng.choice("gxZ -") + s[i + 1:]
            yield s
        yield from ["", "{12345678-1234-1234-1234-123456789abc}", "urn:uuid:12345678-1234-1234-1234-123456789abc",
                    "12345678123412341234123456789abc"]

    def checked(fmt, cands, guard=None):
        valid, invalid = set(), set()
        for s in cands:
            ok = fc.conforms(s, fmt)
            if guard is not None:
                ok = ok and bool(re.fullmatch(guard, s, re.ASCII))
            (valid if ok else invalid).add(s)
        return {"format": fmt, "valid": sorted(valid), "invalid": sorted(invalid)}

    out = [
        # fromisoformat also reads 20200101 and 2020-W01-1 (not RFC 3339): only the
        # extended YYYY-MM-DD form is taken from it.
        checked("date", dates(), r"\d{4}-\d{2}-\d{2}"),
        checked("ipv4", ipv4s()),
        checked("ipv6", ipv6s()),
        # uuid.UUID also reads the 32 digits without hyphens, in braces or as a URN; the
        # hyphen-position check refuses those forms when they are 36 characters long.
        checked("uuid", uuids(), r".{36}"),
    ]
    with open(os.path.join(HERE, "format_cases.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in out) + "\n]\n")


if __name__ == "__main__":
    main()
