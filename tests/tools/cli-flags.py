#!/usr/bin/python3
"""tests/tools/cli-flags.py: the flag tables of helm, kubeadm and kubectl in
the project's own format (tests/fakes/cli/TOOL-VERSION.flags; the format is
described in tests/fakes/README.md, "Flags").

    cli-flags.py dump helm|kubectl BINARY OUT [SOURCE]
        run the real BINARY (`helm SUB --help` for every command and
        subcommand its help lists, `kubectl options`, `kubectl SUB --help`)
        and write its table to OUT; SOURCE: where the binary came from (a
        comment line).  Flags the help hides (pflag's MarkHidden and
        MarkDeprecated) are the candidates of HIDDEN below, each tried on
        the binary (`TOOL SUB --help --FLAG`): a flag the binary rejects
        is left out, a deprecated one gets the binary's own message.
    cli-flags.py check FILE...
        read each table (exit 1, naming FILE:LINE, on a malformed line)
    cli-flags.py embed FILE
        print the table as the stand-ins' CLI_FLAGS (a Python literal:
        "global" and "sub"[COMMAND], each a list of "--long" and "-s"
        names; hidden and deprecated flags included: the real tool accepts
        them; "deprecated"[COMMAND or "global"]: "--long" -> the binary's
        message), for tests/fakes/kube-debs/build.sh
    cli-flags.py pick helm|kubectl VERSION DIR
        print the path of the table build.sh embeds for that version:
        helm: the table of the same major, the newest not newer than
        VERSION (else the oldest); kubectl: the
        table of the same minor, else the nearest minor (the older of two
        as near)
    cli-flags.py compare FILE JSON [--subset]
        compare a table with a flag table of ../shared/upstream/cli (the
        team's reference data, JSON: "global", "sub", and where present
        "shorthands", "value_type", "deprecated", "hidden"); prints each
        difference and exits 1 when there is one.  --subset: JSON lists
        only some flags of each command (kubeadm-flags.json): each must be
        in FILE, FILE may have more.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

GLOBAL = "(global)"

# Flags the help does not show, from the tools' sources (MarkHidden,
# MarkDeprecated): tried on each binary, kept when it accepts them.
#   helm/helm tag v3.17.1 (980d8ac1939e39138101364400756af2bdee1da5):
#     cmd/helm/upgrade.go MarkDeprecated("recreate-pods"), cmd/helm/version.go MarkHidden("client")
#   helm/helm tag v4.1.4 (05fa37973dc9e42b76e1d2883494c87174b6074f):
#     pkg/cmd/install.go addInstallFlags (install, template) MarkDeprecated("force"), ("atomic");
#     pkg/cmd/upgrade.go ("force"), ("atomic"); pkg/cmd/rollback.go ("force"); pkg/cmd/template.go ("validate")
# Not listed: helm's klog flags (flags.go addKlogFlags: --v, --vmodule,
# --log-file ..., hidden on every command), which the stand-ins do not
# take (tests/fakes/README.md).
HIDDEN = {
    "helm": {
        "upgrade": ["--recreate-pods", "--force", "--atomic"],
        "install": ["--force", "--atomic"],
        "template": ["--force", "--atomic", "--validate"],
        "rollback": ["--force"],
        "version": ["-c --client"],  # f.BoolP("client", "c", ...)
    },
    "kubectl": {},
}


# ---------------------------------------------------------------- the format


class Table:
    """commands: COMMAND -> {"--long": Flag}; COMMAND "(global)" for the
    flags every command takes."""

    def __init__(self):
        self.comments = []
        self.commands = {}

    def names(self, command):
        out = []
        for f in self.commands.get(command, {}).values():
            out.append(f.long)
            if f.short:
                out.append(f.short)
        return out


class Flag:
    __slots__ = ("short", "long", "kind", "hidden", "deprecated")

    def __init__(self, long, kind, short=None, hidden=False, deprecated=None):
        self.long, self.kind, self.short, self.hidden, self.deprecated = long, kind, short, hidden, deprecated

    def line(self):
        s = "%s%s %s" % (self.short + " " if self.short else "", self.long, self.kind)
        if self.hidden:
            s += " hidden"
        if self.deprecated is not None:
            s += " deprecated: " + self.deprecated
        return s


LINE = re.compile(r"^(?:(-[A-Za-z0-9]) )?(--[A-Za-z0-9][A-Za-z0-9_.-]*) (\S+)( hidden)?(?: deprecated: (.*))?$")


def load(path):
    t, cmd = Table(), None
    with open(path, encoding="utf-8") as f:
        for n, ln in enumerate(f, 1):
            ln = ln.rstrip("\n")
            where = "%s:%d" % (path, n)
            if not ln.strip():
                continue
            if ln.startswith("#"):
                t.comments.append(ln)
                continue
            m = re.match(r"^\[([a-z0-9() .-]+)\]$", ln)
            if m:
                cmd = m.group(1)
                if cmd in t.commands:
                    raise ValueError("%s: command [%s] a second time" % (where, cmd))
                t.commands[cmd] = {}
                continue
            m = LINE.match(ln)
            if not m or cmd is None:
                raise ValueError("%s: not a flag line ([-s] --long KIND [hidden] [deprecated: MESSAGE]) "
                                 "under a [COMMAND]: %r" % (where, ln))
            short, long_, kind, hidden, dep = m.groups()
            if long_ in t.commands[cmd]:
                raise ValueError("%s: %s twice in [%s]" % (where, long_, cmd))
            t.commands[cmd][long_] = Flag(long_, kind, short, bool(hidden), dep)
    if GLOBAL not in t.commands:
        raise ValueError("%s: no [%s] section" % (path, GLOBAL))
    return t


def write(t, path):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for c in t.comments:
            f.write(c + "\n")
        for cmd in [GLOBAL] + sorted(k for k in t.commands if k != GLOBAL):
            f.write("[%s]\n" % cmd)
            for name in sorted(t.commands[cmd]):
                f.write(t.commands[cmd][name].line() + "\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------- reading the help


def run(argv, env):
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                       timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def section(text, title):
    """The lines of the help's section TITLE ("Flags:", "Available Commands:")."""
    out, on = [], False
    for ln in text.split("\n"):
        if ln == title:
            on = True
            continue
        if on:
            if ln and not ln.startswith(" ") and not ln.startswith("\t"):
                break
            out.append(ln)
    return out


def commands_of(text, tool):
    """The subcommands a help text lists."""
    names = []
    titles = ["Available Commands:"]
    if tool == "kubectl":
        titles += [ln for ln in text.split("\n") if re.match(r"^[A-Z][A-Za-z ()]*Commands[A-Za-z ()]*:$", ln)]
    for title in titles:
        for ln in section(text, title):
            m = re.match(r"^  ([a-z][a-z0-9-]*)\s", ln + " ")
            if m and m.group(1) != "help":
                names.append(m.group(1))
    return names


def helm_flags(lines):
    """pflag's FlagUsages lines: "  -s, --long TYPE   usage" (no TYPE: a boolean)."""
    out = {}
    for ln in lines:
        m = re.match(r"^\s+(?:-([A-Za-z0-9]), )?--([A-Za-z0-9][A-Za-z0-9_.-]*)(?: (\S+))?(?:\s{2,}|$)", ln)
        if not m:
            continue
        short, name, typ = m.groups()
        if name == "help":
            continue
        out["--" + name] = Flag("--" + name, typ or "bool", "-" + short if short else None)
    return out


def kubectl_kind(default):
    if default in ("true", "false"):
        return "bool"
    if default.startswith("'") and default.endswith("'"):
        return "string"
    if default.startswith("[") and default.endswith("]"):
        return "list"
    if re.fullmatch(r"-?[0-9]+", default):
        return "int"
    if re.fullmatch(r"-?[0-9.]+", default):
        return "float"
    if re.fullmatch(r"(-?[0-9.]+(ns|us|ms|s|m|h))+", default):
        return "duration"
    return "value"


def kubectl_flags(lines):
    """kubectl's templater lines: "    -s, --long=DEFAULT:" then the usage."""
    out = {}
    for ln in lines:
        m = re.match(r"^\s+(?:-([A-Za-z0-9]), )?--([A-Za-z0-9][A-Za-z0-9_.-]*)=(.*):$", ln)
        if not m:
            continue
        short, name, default = m.groups()
        if name == "help":
            continue
        out["--" + name] = Flag("--" + name, kubectl_kind(default), "-" + short if short else None)
    return out


def probe(binary, path, flag, env):
    """(kind, deprecated message) of a flag the help hides, or None when the
    binary does not take it: `TOOL PATH --help FLAG` parses FLAG last, so a
    flag that wants a value stops with "flag needs an argument"."""
    rc, out, err = run([binary] + path + ["--help", flag], env)
    m = re.search(r"^Flag %s has been deprecated, (.*)$" % re.escape(flag), err, re.M)
    dep = m.group(1) if m else None
    if rc == 0:
        return "bool", dep
    if "flag needs an argument" in err:
        return "value", dep
    if re.search(r"unknown (shorthand )?flag", err):
        return None
    raise SystemExit("cli-flags.py: %s %s --help %s: exit %d, %s" % (binary, " ".join(path), flag, rc, err.strip()))


def dump(tool, binary, dest, source):
    home = tempfile.mkdtemp(prefix="cli-flags-")
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C", "LC_ALL": "C", "KUBECONFIG": home + "/none",
           "HELM_PLUGINS": home + "/plugins", "XDG_CONFIG_HOME": home + "/config", "XDG_CACHE_HOME": home + "/cache",
           "XDG_DATA_HOME": home + "/data", "COLUMNS": "200"}
    parse = helm_flags if tool == "helm" else kubectl_flags
    t = Table()
    rc, top, err = run([binary, "--help"], env)
    if rc != 0:
        raise SystemExit("cli-flags.py: %s --help: exit %d: %s" % (binary, rc, err))
    if tool == "helm":
        t.commands[GLOBAL] = parse(section(top, "Flags:"))
        _, ver, _ = run([binary, "version"], env)
    else:
        _, opts, _ = run([binary, "options"], env)
        t.commands[GLOBAL] = parse(section(opts, "The following options can be passed to any command:"))
        _, ver, _ = run([binary, "version", "--client"], env)
    queue = [[c] for c in commands_of(top, tool)]
    while queue:
        path = queue.pop(0)
        rc, text, err = run([binary] + path + ["--help"], env)
        if rc != 0:
            raise SystemExit("cli-flags.py: %s %s --help: exit %d: %s" % (binary, " ".join(path), rc, err))
        if tool == "helm":
            flags = parse(section(text, "Flags:"))
            # a parent's persistent flags: in "Global Flags:" beside the root's
            for k, f in parse(section(text, "Global Flags:")).items():
                if k not in t.commands[GLOBAL]:
                    flags[k] = f
        else:
            flags = parse(section(text, "Options:"))
        t.commands[" ".join(path)] = flags
        queue += [path + [c] for c in commands_of(text, tool)]
    for cmd, cands in HIDDEN[tool].items():
        if cmd not in t.commands:
            continue
        for cand in cands:
            short, flag = cand.split() if " " in cand else (None, cand)
            if flag in t.commands[cmd]:
                continue
            got = probe(binary, cmd.split(), flag, env)
            if got is None:
                continue
            kind, dep = got
            if short and probe(binary, cmd.split(), short, env) != got:
                raise SystemExit("cli-flags.py: %s %s: %s is not %s's shorthand" % (binary, cmd, short, flag))
            t.commands[cmd][flag] = Flag(flag, kind, short, dep is None, dep)
    t.comments = [
        "# %s: the real %s's flags per command, written by tests/tools/cli-flags.sh"
        % (os.path.basename(dest), tool),
        "# (tests/tools/cli-flags.py dump) from `%s`; do not edit by hand." %
        ("helm --help, helm COMMAND --help" if tool == "helm" else "kubectl options, kubectl COMMAND --help"),
        "# The format: tests/fakes/README.md, \"Flags\".",
        "# version: " + " ".join(ver.split()),
    ]
    if source:
        t.comments.append("# binary: " + source)
    write(t, dest)
    subprocess.run(["rm", "-rf", home])


# ---------------------------------------------------------------- the other uses


def embed(path):
    t = load(path)
    dep = {}
    for c, flags in t.commands.items():
        msgs = {f.long: f.deprecated for f in flags.values() if f.deprecated is not None}
        if msgs:
            dep["global" if c == GLOBAL else c] = msgs
    return {"global": t.names(GLOBAL), "sub": {c: t.names(c) for c in t.commands if c != GLOBAL}, "deprecated": dep}


def pick(tool, version, folder):
    have = []
    for f in os.listdir(folder):
        m = re.fullmatch(r"%s-([0-9]+)\.([0-9]+)\.([0-9]+)\.flags" % tool, f)
        if m:
            have.append((tuple(int(x) for x in m.groups()), f))
    want = tuple(int(x) for x in version.split(".")[:2])
    if tool == "helm":
        full = tuple(int(x) for x in version.split("."))
        same = [h for h in have if h[0][0] == want[0]]
        if not same:
            raise SystemExit("cli-flags.py: no helm %d.x table in %s" % (want[0], folder))
        older = [h for h in same if h[0] <= full]
        return os.path.join(folder, (max(older) if older else min(same))[1])
    if not have:
        raise SystemExit("cli-flags.py: no %s table in %s" % (tool, folder))
    same = [h for h in have if h[0][:2] == want]
    if same:
        return os.path.join(folder, max(same)[1])
    if want[0] != 1:
        raise SystemExit("cli-flags.py: %s %s: not a 1.x version" % (tool, version))
    best = min(have, key=lambda h: (abs(h[0][1] - want[1]), h[0][1] > want[1], h[0]))
    return os.path.join(folder, best[1])


def compare(path, ref_path, subset):
    t = load(path)
    with open(ref_path, encoding="utf-8") as f:
        ref = json.load(f)
    bad = []
    cmds = [GLOBAL] + list(ref["sub"])
    for cmd in cmds:
        want = set(ref["global"] if cmd == GLOBAL else ref["sub"][cmd])
        if cmd not in t.commands:
            bad.append("[%s]: not in %s" % (cmd, path))
            continue
        ours = t.commands[cmd]
        hidden = set(ref.get("hidden", {}).get(cmd, [])) | set(ref.get("deprecated", {}).get(cmd, {}))
        mine = set()
        for fl in ours.values():
            if (fl.hidden or fl.deprecated is not None) and not subset:
                continue
            mine.add(fl.long)
            if fl.short:
                mine.add(fl.short)
        if subset:
            for n in sorted(want - mine):
                bad.append("[%s] %s: in the reference table, not in ours" % (cmd, n))
        else:
            for n in sorted(want - mine):
                bad.append("[%s] %s: in the reference table, not in ours" % (cmd, n))
            for n in sorted(mine - want):
                bad.append("[%s] %s: in ours, not in the reference table" % (cmd, n))
        if "shorthands" in ref:
            theirs = ref["shorthands"].get(cmd, {})
            for fl in ours.values():
                if fl.short and fl.short not in theirs and fl.long not in hidden:
                    bad.append("[%s] %s %s: a shorthand the reference table does not give" % (cmd, fl.short, fl.long))
            for s, long_ in theirs.items():
                if long_ not in ours or ours[long_].short != s:
                    bad.append("[%s] %s %s: the reference table's shorthand, not ours" % (cmd, s, long_))
        if "value_type" in ref:
            for long_, typ in ref["value_type"].get(cmd, {}).items():
                if long_.startswith("--") and long_ in ours and ours[long_].kind != typ:
                    bad.append("[%s] %s: %s here, %s in the reference table" % (cmd, long_, ours[long_].kind, typ))
        if "deprecated" in ref or "hidden" in ref:
            for long_, msg in ref.get("deprecated", {}).get(cmd, {}).items():
                if long_ not in ours or ours[long_].deprecated != msg:
                    bad.append("[%s] %s: deprecated (%s) in the reference table, here %s" % (
                        cmd, long_, msg, ours[long_].line() if long_ in ours else "absent"))
            for n in ref.get("hidden", {}).get(cmd, []):
                fl = ours.get(n) or next((f for f in ours.values() if f.short == n), None)
                if fl is None or not fl.hidden:
                    bad.append("[%s] %s: hidden in the reference table, here %s" % (
                        cmd, n, fl.line() if fl else "absent"))
            for fl in ours.values():
                if fl.deprecated is not None and fl.long not in ref.get("deprecated", {}).get(cmd, {}):
                    bad.append("[%s] %s: deprecated here, not in the reference table" % (cmd, fl.long))
                if fl.hidden and fl.long not in ref.get("hidden", {}).get(cmd, []):
                    bad.append("[%s] %s: hidden here, not in the reference table" % (cmd, fl.long))
    for b in bad:
        print("%s vs %s: %s" % (os.path.basename(path), os.path.basename(ref_path), b))
    n = sum(len(ref["sub"][c]) for c in ref["sub"]) + len(ref["global"])
    print("%s vs %s: %d commands, %d flag names compared, %d differences" % (
        os.path.basename(path), os.path.basename(ref_path), len(cmds), n, len(bad)))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 4 and argv[0] == "dump" and argv[1] in ("helm", "kubectl"):
        dump(argv[1], argv[2], argv[3], argv[4] if len(argv) > 4 else "")
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        rc = 0
        for p in argv[1:]:
            try:
                t = load(p)
                print("%s: %d commands, %d flags" % (p, len(t.commands), sum(len(c) for c in t.commands.values())))
            except (ValueError, OSError) as e:
                print(e, file=sys.stderr)
                rc = 1
        return rc
    if len(argv) == 2 and argv[0] == "embed":
        print("CLI_FLAGS = %r" % embed(argv[1]))
        return 0
    if len(argv) == 4 and argv[0] == "pick" and argv[1] in ("helm", "kubectl"):
        print(pick(argv[1], argv[2], argv[3]))
        return 0
    if len(argv) in (3, 4) and argv[0] == "compare":
        return compare(argv[1], argv[2], "--subset" in argv[3:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ValueError as e:
        print("cli-flags.py: %s" % e, file=sys.stderr)
        sys.exit(1)
