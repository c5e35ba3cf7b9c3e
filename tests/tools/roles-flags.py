#!/usr/bin/python3
"""tests/tools/roles-flags.py: every helm, kubeadm and kubectl command line
in the roles, and whether each flag it passes is one the real tool accepts
for that command.

    roles-flags.py ROLES TABLE... [-v]
    roles-flags.py ROLES TABLE... [-v] --run BINARY...

ROLES is roles/ (lib.sh, */steps/*.sh; */templates/* that are shell
scripts), each TABLE a flag table of the project (tests/fakes/cli/
TOOL-VERSION.flags, kubeadm.flags; the format: tests/fakes/README.md,
"Flags").  A flag passes when every given table of its tool has it for
that command or among the global flags (t0402 gives every kubectl minor's
table: the roles run against all of them).  Prints one line per flag that
does not ("FILE:LINE: TOOL COMMAND: FLAG ..."), then the counts:

    invocations N (helm H, kubeadm K, kubectl C); flags checked F; ...

and exits 1 when a flag is not in a table (or a command has no table),
0 otherwise.  -v lists every invocation with its flags.

Helm 3 and 4: a helm command line in a branch of `case "$PV_HELM_MAJOR"
in 3) ... ;; *) ... ;; esac` (roles/lib.sh) runs with that branch's major
only (`*`: the majors no other branch names): it is checked against the
helm tables of that major (helm-3.*.flags, helm-4.*.flags); every other
helm line against all of them.

--run BINARY...: run every helm and kubectl command line with the real
binaries named (helm-X.Y.Z, kubectl-X.Y.Z: a helm line with the helms of
its majors, a kubectl line with every kubectl) against an API server that
does not answer (https://127.0.0.1:1, a scratch kubeconfig and HOME), the
words the reader cannot know filled in by the kind of their flag (a
duration 30s, an int 1, a path a small manifest, else "x"); prints each
line a binary refused (an unknown flag, bad usage) or that failed in
another way, and the counts; exits 1 when any did.

The scripts are read, not run: a small POSIX sh reader (comments, quotes,
line continuations, here-documents, $(...) also inside double quotes,
pipes and lists, if/while/case, functions) finds the simple commands.
A command is a tool's when its first word is the tool's name, or a variable
whose value starts with it (KC="kubectl --kubeconfig=..." then `$KC get
nodes`: the value's words are put in front), or a variable holding a path
to the tool (BIN=/usr/local/bin/helm; "$BIN" version), or a function whose
body runs the tool with "$@" (kc() { kubectl ... "$@"; } then `kc get`:
each call is an invocation).  In a function that rebuilds its arguments
with `set -- "$@" --values "$_v"` (pv_helm_install in lib.sh), "$@" of
the tool's command line is the flags given to `set --`.  Words the reader
cannot know (an unquoted variable that is not one of those, e.g. the
labels of `$KC label node "$n" $c`) are counted as opaque and listed
with -v; they are positional in the roles.

To find the command among the words the reader must know which global
flags take a value (`kubectl -n "$NS" get ...`) and which shorthand
letters do (`-ojson` is -o with "json"): the tables say (a flag's kind,
"bool" or the type of its value).  The command is the longest run of
words, up to three, that a table has (`kubeadm certs renew all`, `helm
get values`, `kubectl rollout status`).
"""

import importlib.util
import os
import re
import sys

TOOLS = ("helm", "kubeadm", "kubectl")
_spec = importlib.util.spec_from_file_location("cli_flags", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "cli-flags.py"))
cli_flags = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_flags)
GLOBAL = cli_flags.GLOBAL
KEYWORDS = {"if", "then", "elif", "else", "fi", "while", "until", "do", "done", "!", "{", "}", "time"}


class Word:
    __slots__ = ("text", "var", "at")

    def __init__(self, text, var=None, at=False):
        self.text = text  # quotes removed, expansions kept as written ($X, ${X}, $(...))
        self.var = var  # NAME when the word is exactly an unquoted $NAME / ${NAME}
        self.at = at  # the word is exactly "$@"

    def __repr__(self):
        return self.text


class Ctx:
    def __init__(self, parent=None):
        self.raw = dict(parent.raw) if parent else {}  # NAME -> the text assigned to it
        self.wrappers = dict(parent.wrappers) if parent else {}  # function -> words with "$@"
        self.set_flags = {}  # function -> words given to `set --` in it
        self.called = set()


class Reader:
    """POSIX sh text -> simple commands [(line, [Word...], function or None)]."""

    def __init__(self, text, line=1):
        self.s = text
        self.i = 0
        self.line = line
        self.heredocs = []
        self.out = []  # (line, words): the simple commands
        self.sub = []  # a Reader for each $(...) and `...`

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def skip_heredocs(self):
        for delim in self.heredocs:
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                ln = self.s[self.i:end]
                self.i = end + 1
                self.line += 1
                if ln.lstrip("\t") == delim:
                    break
        self.heredocs = []

    def matching(self, j, open_, close):
        """Index of the `close` that ends what starts after s[j-1] (== open_),
        quotes and nesting respected."""
        depth = 1
        while j < len(self.s):
            c = self.s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                j = self.s.index("'", j + 1) + 1
                continue
            if c == '"':
                j = self.dq_end(j + 1) + 1
                continue
            if c == "#" and (j == 0 or self.s[j - 1] in " \t\n;(") and open_ == "(":
                j = self.s.find("\n", j)
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        raise ValueError("unbalanced %s at line %d" % (open_, self.line))

    def dq_end(self, j):
        while self.s[j] != '"':
            if self.s[j] == "\\":
                j += 2
                continue
            if self.s.startswith("$(", j):
                j = self.matching(j + 2, "(", ")") + 1
                continue
            if self.s[j] == "`":
                j = self.s.index("`", j + 1) + 1
                continue
            j += 1
        return j

    def subst(self, body, line):
        r = Reader(body, line)
        r.run()
        self.sub.append(r)

    def dollar(self, quoted):
        """At '$': returns (text, var name or None); consumes it."""
        s, i = self.s, self.i
        if s.startswith("$((", i):
            self.i = s.index("))", i) + 2
            return s[i:self.i], None
        if s.startswith("$(", i):
            j = self.matching(i + 2, "(", ")")
            self.subst(s[i + 2:j], self.line)
            self.line += s.count("\n", i, j)
            self.i = j + 1
            return s[i:j + 1], None
        if s.startswith("${", i):
            j = self.matching(i + 2, "{", "}")
            self.i = j + 1
            name = s[i + 2:j]
            return s[i:j + 1], name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else None
        m = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*|[@*#?$!0-9-])", s[i:])
        if m:
            self.i = i + len(m.group(0))
            return m.group(0), m.group(1)
        self.i = i + 1
        return "$", None

    def word(self):
        s = self.s
        text, parts, at = "", 0, False
        var = None
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\n;&|()<>":
                break
            parts += 1
            if c == "\\":
                if self.peek(1) == "\n":
                    self.i += 2
                    self.line += 1
                    continue
                text += self.peek(1)
                self.i += 2
            elif c == "'":
                j = s.index("'", self.i + 1)
                text += s[self.i + 1:j]
                self.line += s.count("\n", self.i, j)
                self.i = j + 1
            elif c == '"':
                j = self.dq_end(self.i + 1)
                inner_start = self.i + 1
                self.i = inner_start
                piece = ""
                while self.i < j:
                    if s[self.i] == "$":
                        t, _ = self.dollar(True)
                        piece += t
                    elif s[self.i] == "\\":
                        piece += s[self.i + 1]
                        self.i += 2
                    else:
                        if s[self.i] == "\n":
                            self.line += 1
                        piece += s[self.i]
                        self.i += 1
                if piece == "$@" and text == "" and s[j + 1:j + 2] in ("", " ", "\t", "\n", ";", "|", "&", ")"):
                    at = True
                text += piece
                self.i = j + 1
            elif c == "$":
                t, name = self.dollar(False)
                if parts == 1 and name and (self.i >= len(s) or s[self.i] in " \t\n;&|)<>"):
                    var = name
                text += t
            elif c == "`":
                j = s.index("`", self.i + 1)
                self.subst(s[self.i + 1:j], self.line)
                self.i = j + 1
                text += "$(...)"
            else:
                text += c
                self.i += 1
        return Word(text, var, at)

    def run(self):
        s = self.s
        cur, cur_line = [], self.line

        def flush():
            nonlocal cur
            if cur:
                self.out.append((cur_line, cur))
            cur = []

        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
                continue
            if c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
                continue
            if c == "#":  # at the start of a word: a comment
                j = s.find("\n", self.i)
                self.i = len(s) if j < 0 else j
                continue
            if c == "\n":
                flush()
                self.i += 1
                self.line += 1
                if self.heredocs:
                    self.skip_heredocs()
                continue
            if c in ";&|":
                flush()
                self.i += 1
                continue
            if c == "(":
                if s.startswith("()", self.i) and cur:
                    # NAME() { ...: a function definition
                    self.out.append((self.line, [Word("()"), cur[-1]]))
                    cur = []
                    self.i += 2
                    continue
                flush()
                self.i += 1
                continue
            if c == ")":
                flush()
                self.i += 1
                continue
            m = re.match(r"[0-9]*(<<-?|>>|>&|<&|>|<)", s[self.i:])
            if m:
                op = m.group(1)
                self.i += len(m.group(0))
                while self.peek() in " \t":
                    self.i += 1
                w = self.word()
                if op.startswith("<<"):
                    self.heredocs.append(w.text)
                continue
            if not cur:
                cur_line = self.line
            cur.append(self.word())
        flush()
        return self


def flatten(reader, into):
    """Commands of a reader and of its $(...) readers, in source order
    (a substitution's commands before the command that uses it)."""
    for r in reader.sub:
        flatten(r, into)
    into.extend(reader.out)
    return into


# The helm majors provision drives; a command line in a branch of `case
# "$PV_HELM_MAJOR" in` runs with the majors of that branch only.
HELM_MAJORS = frozenset((3, 4))


def walk(text, ctx, path, found):
    """found: list of (path, line, tool, [words], majors): majors the helm
    majors the command line runs with (HELM_MAJORS outside a case on
    PV_HELM_MAJOR)."""
    cmds = flatten(Reader(text).run(), [])
    cmds.sort(key=lambda c: c[0])
    func, depth, fdepth = None, 0, None
    # one entry per open `case`: [is it on PV_HELM_MAJOR, majors of the
    # branch, majors named by its branches so far]
    cases = []
    for line, words in cmds:
        if words and words[0].text == "()":
            func, fdepth = words[1].text, None
            continue
        if words and words[0].text == "case" and not words[0].var:
            cases.append([len(words) > 1 and words[1].text in ("$PV_HELM_MAJOR", "${PV_HELM_MAJOR}"),
                          HELM_MAJORS, set()])
            continue
        if words and words[0].text == "esac" and not words[0].var and cases:
            cases.pop()
            continue
        if cases and cases[-1][0] and len(words) == 1 and re.fullmatch(r"[0-9]+|\*", words[0].text):
            # a branch's pattern (the reader ends it at its ")")
            pat = words[0].text
            if pat == "*":
                cases[-1][1] = HELM_MAJORS - cases[-1][2]
            else:
                cases[-1][1] = frozenset((int(pat),))
                cases[-1][2].add(int(pat))
            continue
        majors = HELM_MAJORS
        for c in cases:
            if c[0]:
                majors = majors & c[1]
        ws = list(words)
        while ws and ws[0].text in KEYWORDS and not ws[0].var:
            if ws[0].text == "{":
                depth += 1
                if func and fdepth is None:
                    fdepth = depth
            elif ws[0].text == "}":
                if func and fdepth == depth:
                    func, fdepth = None, None
                depth -= 1
            ws = ws[1:]
        if ws and ws[-1].text == "}" and not ws[-1].var:
            ws = ws[:-1]
            if func and fdepth == depth:
                func, fdepth = None, None
            depth -= 1
        if not ws or ws[0].text in ("for", "case", "in", "esac", ";;"):
            continue
        # assignments
        while ws and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", ws[0].text) and not ws[0].var:
            name, _, val = ws[0].text.partition("=")
            ctx.raw[name] = val
            ws = ws[1:]
        if not ws:
            continue
        if ws[0].text == "set" and len(ws) > 1 and ws[1].text == "--" and func:
            # the words appended to "$@" (set -- "$@" --values "$_v"), not
            # those set -- puts before it (shifted away again)
            if len(ws) > 2 and ws[2].at:
                ctx.set_flags.setdefault(func, []).extend(w for w in ws[3:] if not w.at)
            continue
        # wrappers that run the next word
        while ws and ws[0].text in ("command", "exec", "nice", "nohup", "timeout", "env"):
            if ws[0].text == "command" and len(ws) > 1 and ws[1].text.startswith("-"):
                ws = []
                break
            if ws[0].text == "timeout":
                ws = ws[1:]
                while ws and ws[0].text.startswith("-"):
                    ws = ws[1:]
            ws = ws[1:]
        if not ws:
            continue
        tool, words0 = resolve(ws, ctx)
        if tool is None:
            continue
        if any(w.at for w in words0):
            if func and func in ctx.set_flags:
                flags = ctx.set_flags[func]
                words0 = [x for w in words0 for x in (flags if w.at else [w])]
            elif func:
                ctx.wrappers[func] = (tool, words0, path, line)
                continue
        found.append((path, line, tool, words0, majors))
    return ctx


def resolve(ws, ctx):
    """(tool, words) when ws runs helm, kubeadm or kubectl, else (None, None)."""
    w0 = ws[0]
    name = w0.text
    if name in TOOLS:
        return name, [Word(name)] + ws[1:]
    if w0.var and w0.var in ctx.raw:
        val = ctx.raw[w0.var].strip('"\'')
        first = val.split()[0] if val.split() else ""
        if first in TOOLS:
            return first, [Word(x) for x in val.split()] + ws[1:]
    m = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", name)
    if m:
        t = tool_of_var(m.group(1), ctx)
        if t:
            return t, [Word(t)] + ws[1:]
    if name in ctx.wrappers:
        ctx.called.add(name)
        tool, body, _, _ = ctx.wrappers[name]
        return tool, [x for w in body for x in (ws[1:] if w.at else [w])]
    return None, None


def tool_of_var(name, ctx, seen=()):
    """The tool a variable holding a program path names: BIN=/usr/local/bin/helm,
    or tmp=$(mktemp "$BIN.XXXXXX") beside it."""
    val = ctx.raw.get(name)
    if val is None or name in seen:
        return None
    val = val.strip('"\'')
    base = os.path.basename(val)
    if base in TOOLS and "/" in val:
        return base
    m = re.match(r"^\$\(mktemp [\"']?\$\{?([A-Za-z_][A-Za-z0-9_]*)", val)
    if m:
        return tool_of_var(m.group(1), ctx, seen + (name,))
    return None


def names_of(tables, cmd):
    """{name: kind} of COMMAND's own flags in one table ("--long" and "-s")."""
    out = {}
    for t in tables:
        for f in t.commands.get(cmd, {}).values():
            out[f.long] = f.kind
            if f.short:
                out[f.short] = f.kind
    return out


def command_of(tool, words, tables):
    """(command, index of its words) of an invocation: the longest run of
    the words that are neither a flag nor a global flag's value (up to
    three) that a table has as a command."""
    glob = {}
    for t in tables:
        glob.update(names_of([t], GLOBAL))
    i, found = 1, []
    while i < len(words) and len(found) < 3:
        t = words[i].text
        if t == "--":
            break
        if t.startswith("--"):
            if "=" not in t and glob.get(t, "bool") != "bool":
                i += 1
        elif t.startswith("-") and t != "-":
            if len(t) == 2 and glob.get(t, "bool") != "bool":
                i += 1
        elif not words[i].var:
            found.append(i)
        i += 1
    if not found:
        return None, set()
    for n in range(len(found), 0, -1):
        cmd = " ".join(words[k].text for k in found[:n])
        if n == 1 or any(cmd in t.commands for t in tables):
            return cmd, set(found[:n])
    return None, set()


def flags_of(tool, words, kinds):
    """The flag names an invocation passes (--long, -s), and its opaque
    words; kinds: name -> kind of the command's and the global flags."""
    out, opaque = [], []
    for w in words[1:]:
        t = w.text
        if t == "--":
            break
        if w.var or w.at:
            opaque.append(t)
            continue
        if t.startswith("--"):
            out.append(t.split("=")[0])
        elif t.startswith("-") and t != "-" and not re.match(r"^-[0-9]", t):
            for c in t[1:]:
                if c == "=":
                    break
                out.append("-" + c)
                if kinds.get("-" + c, "bool") != "bool":
                    break
    return out, opaque


def table_major(tab):
    """The major version of a helm table (helm-4.1.4.flags: 4), else None."""
    m = re.match(r"^helm-([0-9]+)\.", tab.path)
    return int(m.group(1)) if m else None


def tables_for(tool, tables, majors):
    """The tables an invocation is checked against: every table of its tool;
    for helm those of the majors the command line runs with."""
    if tool != "helm":
        return tables[tool]
    return [t for t in tables[tool] if table_major(t) in majors]


def scan(roles):
    """(found, files, tmpl_sh, templates): every invocation of the roles."""
    lib = os.path.join(roles, "lib.sh")
    found = []
    base = Ctx()
    with open(lib) as f:
        walk(f.read(), base, "roles/lib.sh", found)
    files = []
    for role in sorted(os.listdir(roles)):
        sd = os.path.join(roles, role, "steps")
        if os.path.isdir(sd):
            files += [os.path.join(sd, x) for x in sorted(os.listdir(sd)) if x.endswith(".sh")]
    templates, tmpl_sh = 0, 0
    for role in sorted(os.listdir(roles)):
        td = os.path.join(roles, role, "templates")
        if os.path.isdir(td):
            for x in sorted(os.listdir(td)):
                templates += 1
                p = os.path.join(td, x)
                with open(p, errors="replace") as f:
                    head = f.read(2)
                if head == "#!" or re.search(r"\.sh(\.tmpl)?$", x):
                    files.append(p)
                    tmpl_sh += 1
    wrappers_seen = set()
    for p in files:
        ctx = Ctx(base)
        with open(p) as f:
            walk(f.read(), ctx, os.path.relpath(p, os.path.dirname(os.path.abspath(roles))), found)
        for name, (tool, body, path, line) in ctx.wrappers.items():
            if name not in ctx.called and name not in base.wrappers and (path, name) not in wrappers_seen:
                wrappers_seen.add((path, name))
                found.append((path, line, tool, [w for w in body if not w.at], HELM_MAJORS))
    return found, files, tmpl_sh, templates


# ---------------------------------------------------------------- --run
# Every helm and kubectl command line of the roles run by real binaries
# against an API server that does not answer: each must get past the
# tool's flag parsing.

# what a tool prints when the command line itself is wrong (cobra, pflag,
# kubectl's usage errors): the line fails
USAGE_ERRORS = re.compile(r"unknown (shorthand )?flag|flag needs an argument|invalid argument .* for .*flag|"
                          r"unknown command|accepts .* arg|requires (at least |exactly )?[0-9]+ arg|"
                          r"required flag\(s\)|flags cannot be placed before|See '.*--help' for usage|"
                          r"if any flags in the group|none of the others can be|Usage:")
# what it prints when it got as far as the API server: the line passes
CONN_ERRORS = re.compile(r"[Kk]ubernetes cluster unreachable|connect: connection refused|"
                         r"The connection to the server .* was refused|Unable to connect to the server")
VAR = re.compile(r"\$\(\(.*?\)\)|\$\([^()]*(\([^()]*\)[^()]*)*\)|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[@*#?$!0-9-]")
PLACEHOLDER = {"duration": "30s", "int": "1", "uint": "1", "float": "1", "float32": "1", "float64": "1",
               "bool": "true", "list": "x", "strings": "x", "stringArray": "x"}
MANIFEST = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: roles-flags-run\n  namespace: default\n"
            "data:\n  a: b\n")


def expand(text, kind, scratch):
    """A word with its expansions replaced by a value of the flag's kind."""
    if not VAR.search(text):
        return text
    if kind == "duration":
        # "${T}s": the variable a number, the word a duration
        out = VAR.sub("30", text)
        return out + "s" if re.fullmatch(r"[0-9]+", out) else out
    return VAR.sub(PLACEHOLDER.get(kind, "x"), text)


def argv_of(tool, words, tabs, binary, scratch):
    """The command line to run: words with the binary first, the kubeconfig
    the scratch one, files that exist, expansions replaced by values of
    the right kind."""
    cmd, used = command_of(tool, words, tabs)
    kinds = {}
    for t in tabs:
        kinds.update(names_of([t], GLOBAL))
        kinds.update(names_of([t], cmd))
    files = {"--kubeconfig", "-f", "--filename", "--values"}
    out = [binary]
    i = 1
    while i < len(words):
        w, t = words[i], words[i].text
        i += 1
        if w.at:
            continue
        if i - 1 in used or not t.startswith("-") or t == "-" or re.match(r"^-[0-9]", t):
            if VAR.search(t) and tool == "helm" and cmd == "rollback" and len(out) > 2 and out[-2] == "rollback":
                # rollback RELEASE REVISION: the revision a number (helm parses
                # it before any API call)
                out.append("1")
                continue
            if w.var and tool == "kubectl" and cmd in ("label", "annotate") and len(out) > 3:
                # the labels or annotations a variable holds (node-labels'
                # $c: "KEY=VALUE" or "KEY-" words)
                out.append("provision.dev/x=y")
                continue
            out.append(expand(t, "string", scratch))
            continue
        name, eq, val = t.partition("=")
        kind = kinds.get(name, "bool")
        if t.startswith("-") and not t.startswith("--") and len(t) > 2 and not eq:
            # -ojson, -ab: a shorthand with its value, or bundled booleans
            if kinds.get(t[:2], "bool") != "bool":
                name, val, eq, kind = t[:2], t[2:], "=", kinds.get(t[:2])
                t = t[:2]
        if name in files:
            path = os.path.join(scratch, "kubeconfig" if name == "--kubeconfig" else "manifest.yaml")
            if eq:
                out.append(name + "=" + (val if val == "-" else path))
            else:
                out.append(name)
                if i < len(words):
                    out.append(words[i].text if words[i].text == "-" else path)
                    i += 1
            continue
        if eq:
            out.append(name + "=" + expand(val, kind, scratch))
        elif kind != "bool" and not kind.startswith("string[=") and "[=" not in kind and i < len(words):
            out.append(name)
            out.append(expand(words[i].text, kind, scratch))
            i += 1
        else:
            out.append(t)
    return cmd, out


def run_real(found, tables, binaries, verbose):
    import subprocess
    import tempfile
    scratch = tempfile.mkdtemp(prefix="roles-flags-run.")
    with open(os.path.join(scratch, "kubeconfig"), "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
                "    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
                "current-context: c\nusers:\n- name: u\n  user:\n    token: roles-flags-run\n")
    with open(os.path.join(scratch, "manifest.yaml"), "w") as f:
        f.write(MANIFEST)
    env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "LANG": "C"}
    bins = []
    for b in binaries:
        m = re.match(r"^(helm|kubectl)-([0-9]+)\.([0-9]+)\.[0-9]+$", os.path.basename(b))
        if not m:
            sys.stderr.write("roles-flags.py: %s: not named helm-X.Y.Z or kubectl-X.Y.Z\n" % b)
            return 2
        bins.append((m.group(1), int(m.group(2)), b))
    jobs = []
    for path, line, tool, words, majors in found:
        if tool not in ("helm", "kubectl"):
            continue
        for btool, major, b in bins:
            if btool != tool or (tool == "helm" and major not in majors):
                continue
            tabs = [t for t in tables[tool] if tool != "helm" or table_major(t) == major] or tables[tool]
            cmd, argv = argv_of(tool, words, tabs, b, scratch)
            jobs.append((path, line, tool, cmd, b, argv))

    def one(job):
        path, line, tool, cmd, b, argv = job
        try:
            p = subprocess.run(argv, input=MANIFEST, capture_output=True, text=True, env=env, timeout=60)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = -1, "timed out after 60 s"
        if rc == 0:
            verdict = "ran"
        elif USAGE_ERRORS.search(err):
            verdict = "refused"
        elif CONN_ERRORS.search(err):
            verdict = "unreachable"
        else:
            verdict = "other"
        return job, rc, err, verdict

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=int(os.environ.get("ROLES_FLAGS_JOBS", "2"))) as ex:
        results = list(ex.map(one, jobs))
    bad = 0
    counts = {}
    for (path, line, tool, cmd, b, argv), rc, err, verdict in results:
        counts[verdict] = counts.get(verdict, 0) + 1
        last = (err.strip().split("\n") or [""])[-1][:200]
        if verdict in ("refused", "other"):
            bad += 1
            print("%s:%d: %s %s: %s %s: %s (exit %d): %s" % (path, line, tool, cmd, os.path.basename(b),
                                                               "refused the command line" if verdict == "refused"
                                                               else "neither ran nor reached the API server",
                                                               " ".join(argv[1:]), rc, last))
        elif verbose:
            print("%s:%d: %s %s: %s: %s (%s)" % (path, line, tool, cmd, os.path.basename(b), verdict, last))
    per_bin = {}
    for (path, line, tool, cmd, b, argv), rc, err, verdict in results:
        per_bin[os.path.basename(b)] = per_bin.get(os.path.basename(b), 0) + 1
    print("ran %d command lines with %s; past flag parsing %d (reached the unreachable API server %d, "
          "needed none %d); refused %d; other errors %d"
          % (len(results), " ".join("%s (%d)" % kv for kv in sorted(per_bin.items())),
             counts.get("unreachable", 0) + counts.get("ran", 0), counts.get("unreachable", 0), counts.get("ran", 0),
             counts.get("refused", 0), counts.get("other", 0)))
    import shutil
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if bad else 0


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    roles = sys.argv[1]
    args = sys.argv[2:]
    binaries = None
    if "--run" in args:
        k = args.index("--run")
        args, binaries = args[:k], args[k + 1:]
    verbose = "-v" in args
    tables = {t: [] for t in TOOLS}
    for p in args:
        if p == "-v":
            continue
        tool = os.path.basename(p).split("-")[0].split(".")[0]
        if tool not in tables:
            sys.stderr.write("roles-flags.py: %s: not a table of helm, kubeadm or kubectl\n" % p)
            return 2
        tab = cli_flags.load(p)
        tab.path = os.path.basename(p)
        tables[tool].append(tab)
    for t in TOOLS:
        if not tables[t] and (binaries is None or t != "kubeadm"):
            sys.stderr.write("roles-flags.py: no table of %s given\n" % t)
            return 2
    found, files, tmpl_sh, templates = scan(roles)
    if binaries is not None:
        return run_real(found, tables, binaries, verbose)
    bad, checked, opaque_n, per_tool = [], 0, 0, {t: 0 for t in TOOLS}
    for path, line, tool, words, majors in found:
        per_tool[tool] += 1
        tabs = tables_for(tool, tables, majors)
        if not tabs:
            continue
        cmd, used = command_of(tool, words, tabs)
        rest = [w for k, w in enumerate(words) if k not in used]
        kinds = {}
        for t in tabs:
            kinds.update(names_of([t], GLOBAL))
            kinds.update(names_of([t], cmd))
        flags, opaque = flags_of(tool, rest, kinds)
        opaque_n += len(opaque)
        if verbose:
            only = " [helm %s only]" % "/".join(str(m) for m in sorted(majors)) \
                if tool == "helm" and majors != HELM_MAJORS else ""
            print("%s:%d: %s %s: %s%s%s" % (path, line, tool, cmd, " ".join(flags) or "(no flags)",
                                            "  [opaque: %s]" % " ".join(opaque) if opaque else "", only))
        missing = [t.path for t in tabs if cmd not in t.commands]
        if missing:
            bad.append("%s:%d: %s %s: no such command in %s" % (path, line, tool, cmd, ", ".join(missing)))
            continue
        for fl in flags:
            checked += 1
            lacking = [t.path for t in tabs if fl not in names_of([t], cmd) and fl not in names_of([t], GLOBAL)]
            if lacking:
                bad.append("%s:%d: %s %s: %s is not a flag of the real %s %s (tests/fakes/cli/%s), nor a global one"
                           % (path, line, tool, cmd, fl, tool, cmd, ", ".join(lacking)))
    for b in bad:
        print(b)
    print("files %d (roles/lib.sh, %d steps, %d of %d templates are shell scripts); tables %s; invocations %d "
          "(helm %d, kubeadm %d, kubectl %d); flags checked %d; opaque words %d; not in the real tables %d"
          % (1 + len(files), len(files) - tmpl_sh, tmpl_sh, templates,
             " ".join(t.path for tool in TOOLS for t in tables[tool]), sum(per_tool.values()), per_tool["helm"],
             per_tool["kubeadm"], per_tool["kubectl"], checked, opaque_n, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
