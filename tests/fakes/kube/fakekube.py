# fakekube.py: what every Kubernetes stand-in of provision's tests shares.
#
# tests/fakes/kube-debs/build.sh puts this file in front of each fake
# (kubeadm, kubelet, kubectl, crictl, helm and the control-plane "images"),
# after the line that sets FAKE_VERSION, so that every fake is one
# self-contained python3 script like the real tools are one static binary.
# Python 3.9+ standard library and the openssl command only.
#
# Contents: test knobs, time formats, a YAML subset (what Kubernetes
# manifests, kubeconfigs and kubeadm configs use), certificates through
# openssl, kubeconfig files, an HTTPS client for the fake API server, the
# table of API resources, klog-style log lines.
#
# Nothing here is copied from Kubernetes; formats follow the public
# documentation (kubernetes.io API reference, kubeconfig and kubeadm config
# references) and are noted where they matter.
# pylint: disable=too-many-lines

import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import secrets
import select
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

try:
    FAKE_VERSION  # noqa: F821  (set by build.sh in front of this file)
except NameError:
    FAKE_VERSION = os.environ.get("FAKE_KUBE_VERSION", "1.30.4")

FAKE_MINOR = int(FAKE_VERSION.split(".")[1])
GIT_COMMIT = hashlib.sha1(("fake-kubernetes-" + FAKE_VERSION).encode()).hexdigest()

# ---------------------------------------------------------------- knobs
#
# Test knobs are files in KNOB_DIR on a node; tests/fakes/README.md lists
# them.  The product never writes there.
KNOB_DIR = "/etc/fake-kubernetes/knobs"


def knob(name, default=None):
    try:
        with open(os.path.join(KNOB_DIR, name), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return default


# The node's real etcd (Debian's etcd-server in /usr/bin, or a copy of
# tests/testbed/etcd-debs.sh's in /usr/local/bin): when there is one, the
# kubelet runs the etcd static pod with it and the API server keeps its
# objects in it (tests/fakes/README.md, "etcd: real in the cluster").
ETCD_PATHS = ("/usr/local/bin/etcd", "/usr/bin/etcd")


def etcd_binary():
    for p in ETCD_PATHS:
        if os.access(p, os.X_OK):
            return p
    return None


# kubeadm's pause image per minor (cmd/kubeadm/app/constants PauseVersion, as
# `kubeadm config images list` prints it)
KUBEADM_PAUSE = {28: "3.9", 29: "3.9", 30: "3.9", 31: "3.10", 32: "3.10", 33: "3.10", 34: "3.10.1", 35: "3.10.1", 36: "3.10.2", 37: "3.10.2"}


def kubeadm_pause_image(minor=None):
    return "registry.k8s.io/pause:" + KUBEADM_PAUSE.get(minor or FAKE_MINOR, "3.9")


def sandbox_image_of(dump):
    """containerd's sandbox image from `containerd config dump`: 1.x
    sandbox_image (CRI plugin), 2.x pinned_images' sandbox."""
    m = re.search(r"""^\s*sandbox_image\s*=\s*["']([^"']*)["']""", dump, re.M) or \
        re.search(r"""^\s*sandbox\s*=\s*["']([^"']*)["']""", dump, re.M)
    return m.group(1) if m else None


def cgroup2_unified():
    """Whether /sys/fs/cgroup is a cgroup2 mount (what the kubelet's
    IsCgroup2UnifiedMode() asks statfs): the last mount there, from
    /proc/self/mountinfo (the filesystem type follows " - ")."""
    fstype = None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                pre, _, post = line.partition(" - ")
                fields = pre.split()
                if len(fields) > 4 and fields[4] == "/sys/fs/cgroup" and post:
                    fstype = post.split()[0]
    except OSError:
        return False
    return fstype == "cgroup2"


def proc_swaps():
    """/proc/swaps, or the swap-on knob's content (a test cannot swapon in
    a container; the knob holds what /proc/swaps would list)."""
    k = knob("proc-swaps")
    if k is not None:
        return "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" + k + "\n"
    try:
        with open("/proc/swaps", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


# ---------------------------------------------------------------- charts
#
# What a chart does to a cluster beyond its manifest (an operator labelling
# nodes, a device plugin adding allocatable GPUs, a provisioner binding
# claims) lives in one file per chart, tests/fakes/kube/chart_NAME.py,
# which build.sh puts into the helm program and into the kubelet (after
# this file, before the tool).  Such a file registers, at load time:
#   @chart_hooks("NAME")       a class (NAME: the chart's name in its
#                              Chart.yaml) whose static methods helm calls:
#                              installed(c, rel), ready(c, rel) -> None or
#                              why not yet, uninstalled(c, rel) (see helm.py)
#   @image_act("repo/image")   a function the kubelet calls to act out a
#                              container of that image (its image_base):
#                              act(kubelet, pod, container, argv, env,
#                              mounts, log); it returns when the container
#                              "runs", raises ContainerFailed(msg) when it
#                              fails, or ContainerFailed(msg, 0) when it
#                              cannot start yet (see kubelet.py)
# tests/fakes/README.md, "Charts", says more.
CHART_HOOKS = {}
IMAGE_ACTS = {}


def chart_hooks(name):
    def reg(cls):
        CHART_HOOKS[name] = cls
        return cls
    return reg


def image_act(*bases):
    def reg(fn):
        for b in bases:
            IMAGE_ACTS[b] = fn
        return fn
    return reg


# ---------------------------------------------------------------- time


def now():
    return time.time()


def rfc3339(t=None):
    t = now() if t is None else t
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(s):
    s = s.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    return datetime.datetime.fromisoformat(s).timestamp()


def parse_duration(s):
    """A Go duration ("15m", "1h30m", "90s", "0") in seconds."""
    s = str(s).strip()
    if s in ("0", ""):
        return 0.0
    total = 0.0
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    pos = 0
    for m in re.finditer(r"([0-9]+(?:\.[0-9]+)?)(ms|us|µs|ns|h|m|s)", s):
        if m.start() != pos:
            raise ValueError("time: invalid duration %s" % json.dumps(s))
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    if pos != len(s):
        raise ValueError("time: invalid duration %s" % json.dumps(s))
    return total


def format_duration(sec):
    """Seconds as Go prints a time.Duration rounded to seconds ("15m0s")."""
    sec = int(round(sec))
    h, rest = divmod(sec, 3600)
    m, s = divmod(rest, 60)
    if h:
        return "%dh%dm%ds" % (h, m, s)
    if m:
        return "%dm%ds" % (m, s)
    return "%ds" % s


def human_age(sec):
    """kubectl's AGE column (duration.HumanDuration shape)."""
    sec = max(0, int(sec))
    if sec < 120:
        return "%ds" % sec
    mins = sec // 60
    if mins < 10:
        s = sec % 60
        return "%dm%ds" % (mins, s) if s else "%dm" % mins
    if mins < 180:
        return "%dm" % mins
    hours = sec // 3600
    if hours < 8:
        m = mins % 60
        return "%dh%dm" % (hours, m) if m else "%dh" % hours
    if hours < 48:
        return "%dh" % hours
    days = hours // 24
    if days < 8:
        h = hours % 24
        return "%dd%dh" % (days, h) if h else "%dd" % days
    return "%dd" % days


# ---------------------------------------------------------------- YAML subset
#
# Enough YAML for Kubernetes objects, kubeconfigs and kubeadm configs:
# documents separated by "---", block mappings and sequences, flow
# collections ([a, b], {a: b}), plain, single- and double-quoted scalars,
# literal and folded block scalars (|, |-, |+, >, >-), comments.  Not:
# anchors, aliases, tags, complex keys.  Scalars resolve like YAML 1.2's
# core schema (null, true/false, integers, floats), which is what
# sigs.k8s.io/yaml gives for the files used here.


class YAMLError(Exception):
    pass


_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def _plain(s):
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if _INT.match(s):
        return int(s)
    if _FLOAT.match(s) and any(c.isdigit() for c in s):
        return float(s)
    return s


def _strip_comment(s):
    """s without a trailing comment (a # after a space, outside quotes)."""
    q = None
    i = 0
    while i < len(s):
        c = s[i]
        if q:
            if q == '"' and c == "\\":
                i += 2
                continue
            if c == q:
                q = None
        elif c in "\"'" and (i == 0 or s[i - 1] in " \t[{,:-"):
            q = c
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
        i += 1
    return s.rstrip()


def _dq(s, line):
    out = []
    i = 1
    esc = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "/": "/", " ": " ", "a": "\a",
           "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}
    while i < len(s):
        c = s[i]
        if c == "\\":
            n = s[i + 1] if i + 1 < len(s) else ""
            if n in esc:
                out.append(esc[n])
                i += 2
            elif n in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[n]
                out.append(chr(int(s[i + 2:i + 2 + width], 16)))
                i += 2 + width
            else:
                raise YAMLError("line %d: bad escape \\%s" % (line, n))
        elif c == '"':
            return "".join(out), i + 1
        else:
            out.append(c)
            i += 1
    raise YAMLError("line %d: unterminated double-quoted string" % line)


def _sq(s, line):
    out = []
    i = 1
    while i < len(s):
        if s[i] == "'":
            if i + 1 < len(s) and s[i + 1] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(s[i])
        i += 1
    raise YAMLError("line %d: unterminated single-quoted string" % line)


def _scalar(s, line):
    s = s.strip()
    if s.startswith('"'):
        v, end = _dq(s, line)
        if s[end:].strip():
            raise YAMLError("line %d: text after a quoted string: %r" % (line, s[end:]))
        return v
    if s.startswith("'"):
        v, end = _sq(s, line)
        if s[end:].strip():
            raise YAMLError("line %d: text after a quoted string: %r" % (line, s[end:]))
        return v
    if s[:1] in ("&", "*", "!"):
        raise YAMLError("line %d: anchors, aliases and tags are not supported" % line)
    return _plain(s)


class _Flow:
    def __init__(self, s, line):
        self.s = s
        self.i = 0
        self.line = line

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\n":
            self.i += 1

    def value(self):
        self.ws()
        c = self.s[self.i:self.i + 1]
        if c == "[":
            self.i += 1
            out = []
            self.ws()
            if self.s[self.i:self.i + 1] == "]":
                self.i += 1
                return out
            while True:
                out.append(self.value())
                self.ws()
                c = self.s[self.i:self.i + 1]
                self.i += 1
                if c == "]":
                    return out
                if c != ",":
                    raise YAMLError("line %d: expected , or ] in a flow sequence" % self.line)
                self.ws()
                if self.s[self.i:self.i + 1] == "]":
                    self.i += 1
                    return out
        if c == "{":
            self.i += 1
            out = {}
            self.ws()
            if self.s[self.i:self.i + 1] == "}":
                self.i += 1
                return out
            while True:
                k = self.atom(":,}")
                self.ws()
                if self.s[self.i:self.i + 1] == ":":
                    self.i += 1
                    v = self.value()
                else:
                    v = None
                out[str(k) if not isinstance(k, str) else k] = v
                self.ws()
                c = self.s[self.i:self.i + 1]
                self.i += 1
                if c == "}":
                    return out
                if c != ",":
                    raise YAMLError("line %d: expected , or } in a flow mapping" % self.line)
                self.ws()
                if self.s[self.i:self.i + 1] == "}":
                    self.i += 1
                    return out
        return self.atom(",]}")

    def atom(self, stops):
        self.ws()
        c = self.s[self.i:self.i + 1]
        if c == '"':
            v, end = _dq(self.s[self.i:], self.line)
            self.i += end
            return v
        if c == "'":
            v, end = _sq(self.s[self.i:], self.line)
            self.i += end
            return v
        start = self.i
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch in stops and (ch != ":" or self.s[self.i + 1:self.i + 2] in (" ", "", ",", "}", "]")):
                break
            self.i += 1
        return _plain(self.s[start:self.i].strip())


def _flow(text, line):
    f = _Flow(text, line)
    v = f.value()
    f.ws()
    if f.i != len(f.s):
        raise YAMLError("line %d: text after a flow collection: %r" % (line, f.s[f.i:]))
    return v


_KEY = re.compile(r"""^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"\[\]{},][^#]*?|)\s*:(?:\s+|$)""")


class _Parser:
    def __init__(self, lines, first_line):
        self.raw = lines
        self.first = first_line
        self.i = 0

    def lineno(self):
        return self.first + self.i

    def skip_blank(self):
        while self.i < len(self.raw):
            s = self.raw[self.i]
            t = s.strip()
            if t == "" or t.startswith("#"):
                self.i += 1
                continue
            return
        return

    def cur(self):
        self.skip_blank()
        if self.i >= len(self.raw):
            return None
        s = self.raw[self.i]
        if "\t" in s[:len(s) - len(s.lstrip())]:
            raise YAMLError("line %d: tabs are not allowed for indentation" % self.lineno())
        return len(s) - len(s.lstrip(" ")), s.strip()

    def parse(self):
        c = self.cur()
        if c is None:
            return None
        v = self.node(c[0])
        if self.cur() is not None:
            raise YAMLError("line %d: unexpected text %r" % (self.lineno(), self.raw[self.i].strip()))
        return v

    def node(self, indent):
        c = self.cur()
        if c is None:
            return None
        ind, text = c
        if text == "-" or text.startswith("- "):
            return self.seq(ind)
        if _KEY.match(_strip_comment(text)) and not text.startswith(("[", "{", '"', "'")) or \
                (text.startswith(('"', "'")) and _KEY.match(_strip_comment(text))):
            return self.mapping(ind)
        return self.scalar_lines(ind)

    def scalar_lines(self, ind):
        start = self.lineno()
        text = _strip_comment(self.raw[self.i].strip())
        self.i += 1
        if text.startswith(("[", "{")):
            while not _balanced(text) and self.i < len(self.raw):
                text += "\n" + _strip_comment(self.raw[self.i].strip())
                self.i += 1
            return _flow(text, start)
        if text.startswith(("|", ">")):
            return self.block_scalar(text, ind - 1)
        parts = [text]
        while True:
            c = self.cur()
            if c is None or c[0] < ind or c[1].startswith(("- ", "#")) or _KEY.match(c[1]):
                break
            parts.append(_strip_comment(c[1]))
            self.i += 1
        if len(parts) > 1 and not parts[0].startswith(('"', "'")):
            return _plain(" ".join(parts))
        return _scalar(" ".join(parts), start)

    def value_after(self, rest, ind, line):
        """The value of `key: rest` / `- rest` at indentation ind."""
        rest = _strip_comment(rest)
        if rest == "":
            c = self.cur()
            if c is None:
                return None
            if c[0] > ind:
                return self.node(c[0])
            if c[0] == ind and (c[1] == "-" or c[1].startswith("- ")):
                return self.seq(ind)
            return None
        if rest.startswith(("|", ">")):
            return self.block_scalar(rest, ind)
        if rest.startswith(("[", "{")):
            text = rest
            while not _balanced(text) and self.i < len(self.raw):
                text += "\n" + _strip_comment(self.raw[self.i].strip())
                self.i += 1
            return _flow(text, line)
        if rest.startswith(('"', "'")) and not _quoted_closed(rest):
            text = rest
            while not _quoted_closed(text) and self.i < len(self.raw):
                text += " " + self.raw[self.i].strip()
                self.i += 1
            return _scalar(text, line)
        # plain multi-line continuation
        parts = [rest]
        while True:
            c = self.cur()
            if c is None or c[0] <= ind or _KEY.match(c[1]) or c[1].startswith("- "):
                break
            parts.append(_strip_comment(c[1]))
            self.i += 1
        if len(parts) > 1:
            return _plain(" ".join(parts))
        return _scalar(rest, line)

    def block_scalar(self, header, ind):
        m = re.match(r"^([|>])([-+]?)([1-9]?)([-+]?)$", header.strip())
        if not m:
            raise YAMLError("line %d: bad block scalar header %r" % (self.lineno(), header))
        style = m.group(1)
        chomp = m.group(2) or m.group(4)
        explicit = m.group(3)
        lines = []
        block = None
        if explicit:
            block = ind + int(explicit)
        while self.i < len(self.raw):
            s = self.raw[self.i]
            if s.strip() == "":
                lines.append("")
                self.i += 1
                continue
            this = len(s) - len(s.lstrip(" "))
            if block is None:
                if this <= ind:
                    break
                block = this
            if this < block:
                break
            lines.append(s[block:])
            self.i += 1
        # trailing blank lines belong to chomping
        trail = 0
        while lines and lines[-1] == "":
            lines.pop()
            trail += 1
        if style == "|":
            body = "\n".join(lines)
        else:
            out = []
            for j, ln in enumerate(lines):
                if j and ln and lines[j - 1] and not ln.startswith(" ") and not lines[j - 1].startswith(" "):
                    out.append(" " + ln)
                elif j:
                    out.append("\n" + ln)
                else:
                    out.append(ln)
            body = "".join(out)
        if not lines:
            return ""
        if chomp == "-":
            return body
        if chomp == "+":
            return body + "\n" * (1 + trail)
        return body + "\n"

    def mapping(self, ind):
        out = {}
        while True:
            c = self.cur()
            if c is None or c[0] < ind:
                return out
            if c[0] > ind:
                raise YAMLError("line %d: bad indentation" % self.lineno())
            text = c[1]
            if text == "-" or text.startswith("- "):
                return out
            m = _KEY.match(text)
            if not m:
                raise YAMLError("line %d: expected 'key: value', got %r" % (self.lineno(), text))
            line = self.lineno()
            key = m.group(1)
            if key.startswith(('"', "'")):
                key = _scalar(key, line)
            rest = text[m.end():]
            self.i += 1
            if key in out:
                raise YAMLError("line %d: key %r already defined" % (line, key))
            out[key] = self.value_after(rest, ind, line)

    def seq(self, ind):
        out = []
        while True:
            c = self.cur()
            if c is None or c[0] != ind or not (c[1] == "-" or c[1].startswith("- ")):
                return out
            line = self.lineno()
            text = self.raw[self.i]
            rest = text[ind + 1:]
            inner = len(rest) - len(rest.lstrip(" "))
            rest_s = rest.strip()
            if rest_s == "" or rest_s.startswith("#"):
                self.i += 1
                out.append(self.value_after("", ind, line))
                continue
            if rest_s.startswith(("- ", "-")) and (rest_s == "-" or rest_s.startswith("- ")):
                # nested sequence on the dash line: treat the rest as its own line
                self.raw[self.i] = " " * (ind + 1 + inner) + rest_s
                out.append(self.seq(ind + 1 + inner))
                continue
            if _KEY.match(_strip_comment(rest_s)) and not rest_s.startswith(("[", "{")):
                self.raw[self.i] = " " * (ind + 1 + inner) + rest_s
                out.append(self.mapping(ind + 1 + inner))
                continue
            self.i += 1
            out.append(self.value_after(rest_s, ind, line))


def _balanced(s):
    depth = 0
    q = None
    i = 0
    while i < len(s):
        c = s[i]
        if q:
            if q == '"' and c == "\\":
                i += 2
                continue
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return depth <= 0


def _quoted_closed(s):
    try:
        if s.startswith('"'):
            _dq(s, 0)
        else:
            _sq(s, 0)
        return True
    except YAMLError:
        return False


def yaml_load_all(text):
    """Every document of text, in order (empty documents left out)."""
    docs = []
    cur = []
    first = 1
    lineno = 0
    for ln in text.splitlines():
        lineno += 1
        if ln.rstrip() == "---" or ln.startswith("--- "):
            if cur:
                docs.append((first, cur))
            cur = []
            first = lineno + 1
            rest = ln[4:].strip() if ln.startswith("--- ") else ""
            if rest and not rest.startswith("#"):
                cur.append(rest)
            continue
        if ln.rstrip() == "...":
            continue
        if ln.startswith("%"):
            continue
        cur.append(ln.rstrip("\r"))
    if cur:
        docs.append((first, cur))
    out = []
    for first, lines in docs:
        v = _Parser(lines, first).parse()
        if v is not None:
            out.append(v)
    return out


def yaml_load(text):
    docs = yaml_load_all(text)
    if not docs:
        return None
    if len(docs) > 1:
        raise YAMLError("expected one document, found %d" % len(docs))
    return docs[0]


_NEEDS_QUOTES = re.compile(r"^[\s]|[\s]$|^[-?:](\s|$)|^[,\[\]{}#&*!|>'\"%@`]|: |:$|\s#|^$|[\x00-\x1f]")


def _yq(s):
    if "\n" in s:
        return None
    if _NEEDS_QUOTES.search(s) or _plain(s) is not None and not isinstance(_plain(s), str) or s in ("~", "null"):
        if "'" not in s and not any(ord(c) < 32 for c in s):
            return "'" + s + "'"
        return json.dumps(s)
    if s.lower() in ("yes", "no", "on", "off", "y", "n"):
        return '"' + s + '"'
    return s


def _yscalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return _yq(str(v))


def yaml_dump(obj, sort_keys=True):
    """obj as block YAML the way kubectl -o yaml writes it: keys sorted,
    sequences at their parent key's indentation, multi-line strings as
    literal blocks."""
    out = []
    _ydump(obj, 0, out, sort_keys)
    return "".join(out)


def _ydump(obj, ind, out, sort_keys, in_seq=False):
    pad = " " * ind
    if isinstance(obj, dict):
        if not obj:
            out.append("{}\n")
            return
        keys = sorted(obj) if sort_keys else list(obj)
        first = True
        for k in keys:
            v = obj[k]
            prefix = "" if (first and in_seq) else pad
            first = False
            kq = _yq(str(k)) or json.dumps(str(k))
            if isinstance(v, dict) and v:
                out.append("%s%s:\n" % (prefix, kq))
                _ydump(v, ind + 2, out, sort_keys)
            elif isinstance(v, list) and v:
                out.append("%s%s:\n" % (prefix, kq))
                _ydump(v, ind, out, sort_keys)
            elif isinstance(v, str) and "\n" in v:
                out.append("%s%s: %s\n" % (prefix, kq, _yblock(v, ind + 2)))
            else:
                out.append("%s%s: %s\n" % (prefix, kq, _yempty(v) if isinstance(v, (dict, list)) else _yscalar(v)))
    elif isinstance(obj, list):
        if not obj:
            out.append("[]\n")
            return
        for v in obj:
            if isinstance(v, dict) and v:
                out.append("%s- " % pad)
                _ydump(v, ind + 2, out, sort_keys, in_seq=True)
            elif isinstance(v, list) and v:
                out.append("%s-\n" % pad)
                _ydump(v, ind + 2, out, sort_keys)
            elif isinstance(v, str) and "\n" in v:
                out.append("%s- %s\n" % (pad, _yblock(v, ind + 2)))
            else:
                out.append("%s- %s\n" % (pad, _yempty(v) if isinstance(v, (dict, list)) else _yscalar(v)))
    else:
        out.append(_yscalar(obj) + "\n")


def _yempty(v):
    return "{}" if isinstance(v, dict) else "[]"


def _yblock(s, ind):
    body = s[:-1] if s.endswith("\n") else s
    head = "|" if s.endswith("\n") and not s.endswith("\n\n") else ("|-" if not s.endswith("\n") else "|+")
    if body.startswith(" "):
        head = head[0] + "2" + head[1:]
    lines = body.split("\n")
    return head + "\n" + "\n".join((" " * ind + ln) if ln else "" for ln in lines)


# ---------------------------------------------------------------- JSON as kubectl prints it


def kjson(obj):
    """kubectl -o json: 4-space indentation, keys sorted, newline at end."""
    return json.dumps(obj, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- files


def write_file(path, data, mode=0o644):
    """Atomic write (temporary file beside it, then rename)."""
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_file(path, default=None):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        if default is not None:
            return default
        raise


# ---------------------------------------------------------------- certificates (openssl)
#
# kubeadm's defaults (kubeadm "PKI certificates and requirements" page):
# RSA 2048 keys, CAs valid 10 years, leaf certificates 1 year.


def openssl(*args, data=None):
    p = subprocess.run(["openssl"] + list(args), input=data, capture_output=True, check=False)
    if p.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (args[0], p.stderr.decode(errors="replace").strip()))
    return p.stdout


def gen_key(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pem = openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048")
    write_file(path, pem, 0o600)
    return pem


def _subject(cn, orgs=()):
    s = "".join("/O=%s" % o for o in orgs)
    return s + "/CN=%s" % cn


def make_ca(key_path, cert_path, cn, days=3650):
    gen_key(key_path)
    pem = openssl("req", "-x509", "-new", "-key", key_path, "-subj", _subject(cn), "-days", str(days),
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
                  "-addext", "subjectKeyIdentifier=hash")
    write_file(cert_path, pem, 0o644)
    return pem


def sign(ca_cert, ca_key, csr_pem, cn, orgs=(), dns=(), ips=(), usage="client", days=365):
    """A certificate for csr_pem signed by the CA; usage client|server|both."""
    eku = {"client": "clientAuth", "server": "serverAuth", "both": "serverAuth,clientAuth"}[usage]
    ext = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
           "extendedKeyUsage=%s" % eku, "authorityKeyIdentifier=keyid"]
    alt = ["DNS:%s" % d for d in dns] + ["IP:%s" % i for i in ips]
    if alt:
        ext.append("subjectAltName=" + ",".join(alt))
    with tempfile.TemporaryDirectory() as tmp:
        extfile = os.path.join(tmp, "ext")
        write_file(extfile, "\n".join(ext) + "\n", 0o600)
        csr = os.path.join(tmp, "csr")
        write_file(csr, csr_pem, 0o600)
        return openssl("x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-set_serial",
                       str(secrets.randbits(62)), "-days", str(days), "-extfile", extfile,
                       "-subj", _subject(cn, orgs)).decode()


def make_csr(key_path, cn, orgs=()):
    return openssl("req", "-new", "-key", key_path, "-subj", _subject(cn, orgs)).decode()


def make_leaf(ca_cert, ca_key, key_path, cert_path, cn, orgs=(), dns=(), ips=(), usage="client"):
    gen_key(key_path)
    pem = sign(ca_cert, ca_key, make_csr(key_path, cn, orgs), cn, orgs, dns, ips, usage)
    write_file(cert_path, pem, 0o644)
    return pem


def spki_sha256(cert_pem):
    """SHA-256 of the certificate's SubjectPublicKeyInfo (DER), hex: the
    value kubeadm pins with --discovery-token-ca-cert-hash sha256:..."""
    pub = openssl("x509", "-noout", "-pubkey", data=cert_pem.encode() if isinstance(cert_pem, str) else cert_pem)
    der = openssl("pkey", "-pubin", "-outform", "DER", data=pub)
    return hashlib.sha256(der).hexdigest()


def cert_subject(cert_pem):
    """(CN, [O...]) of a PEM certificate."""
    out = openssl("x509", "-noout", "-subject", "-nameopt", "RFC2253",
                  data=cert_pem.encode() if isinstance(cert_pem, str) else cert_pem).decode().strip()
    out = out.split("=", 1)[1] if out.startswith("subject=") else out
    cn, orgs = "", []
    for part in re.split(r"(?<!\\),", out):
        k, _, v = part.strip().partition("=")
        if k == "CN":
            cn = v
        elif k == "O":
            orgs.append(v)
    return cn, orgs


def cert_not_after(cert_pem):
    out = openssl("x509", "-noout", "-enddate", data=cert_pem.encode()).decode().strip()
    return out.split("=", 1)[1]


def b64(data):
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def unb64(s):
    return base64.b64decode(s).decode()


# ---------------------------------------------------------------- bootstrap tokens
#
# "[a-z0-9]{6}.[a-z0-9]{16}" (kubeadm token docs); the cluster-info
# ConfigMap carries, per token, a detached JWS (HS256, key = the token's
# secret, kid = its id) of its kubeconfig (bootstrap tokens design,
# kubernetes.io "Authenticating with Bootstrap Tokens").

TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")


def new_token():
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    pick = lambda n: "".join(secrets.choice(alphabet) for _ in range(n))  # noqa: E731
    return pick(6) + "." + pick(16)


def _b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jws_detached(payload, token_id, token_secret):
    header = _b64url(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    body = _b64url(payload.encode())
    sig = hmac.new(token_secret.encode(), (header + "." + body).encode(), hashlib.sha256).digest()
    return header + ".." + _b64url(sig)


def jws_valid(jws, payload, token_id, token_secret):
    return hmac.compare_digest(jws, jws_detached(payload, token_id, token_secret))


# ---------------------------------------------------------------- kubeconfig


def kubeconfig_text(cluster, server, ca_pem, user, cert_pem=None, key_pem=None, token=None):
    """A kubeconfig in the shape kubeadm writes them (one cluster, one
    context USER@CLUSTER, one user; certificates embedded as *-data)."""
    lines = ["apiVersion: v1", "clusters:", "- cluster:",
             "    certificate-authority-data: %s" % b64(ca_pem),
             "    server: %s" % server,
             "  name: %s" % cluster,
             "contexts:", "- context:",
             "    cluster: %s" % cluster,
             "    user: %s" % user,
             "  name: %s@%s" % (user, cluster),
             "current-context: %s@%s" % (user, cluster),
             "kind: Config", "preferences: {}", "users:", "- name: %s" % user, "  user:"]
    if cert_pem:
        lines.append("    client-certificate-data: %s" % b64(cert_pem))
        lines.append("    client-key-data: %s" % b64(key_pem))
    if token:
        lines.append("    token: %s" % token)
    return "\n".join(lines) + "\n"


def _kc_path_field(user_or_cluster, data_key, file_key, base):
    if user_or_cluster.get(data_key):
        return base64.b64decode(user_or_cluster[data_key]).decode()
    if user_or_cluster.get(file_key):
        p = user_or_cluster[file_key]
        if not os.path.isabs(p):
            p = os.path.join(base, p)
        return read_file(p)
    return None


class KubeconfigError(Exception):
    pass


def load_kubeconfig(path, context=None):
    """The current context of a kubeconfig file as a dict: server, ca,
    cert, key, token, insecure, cluster, user, namespace."""
    try:
        text = read_file(path)
    except OSError as e:
        raise KubeconfigError("stat %s: no such file or directory" % path) from e
    try:
        cfg = yaml_load(text) or {}
    except YAMLError as e:
        raise KubeconfigError("error loading config file \"%s\": %s" % (path, e)) from e
    ctxname = context or cfg.get("current-context")
    ctx = next((c.get("context") or {} for c in cfg.get("contexts") or [] if c.get("name") == ctxname), None)
    if ctx is None:
        raise KubeconfigError("context was not found for specified context: %s" % ctxname)
    cluster = next((c.get("cluster") or {} for c in cfg.get("clusters") or [] if c.get("name") == ctx.get("cluster")), {})
    user = next((u.get("user") or {} for u in cfg.get("users") or [] if u.get("name") == ctx.get("user")), {})
    base = os.path.dirname(os.path.abspath(path))
    return {
        "server": cluster.get("server"),
        "ca": _kc_path_field(cluster, "certificate-authority-data", "certificate-authority", base),
        "insecure": bool(cluster.get("insecure-skip-tls-verify")),
        "cert": _kc_path_field(user, "client-certificate-data", "client-certificate", base),
        "key": _kc_path_field(user, "client-key-data", "client-key", base),
        "token": user.get("token"),
        "cluster": ctx.get("cluster"),
        "user": ctx.get("user"),
        "namespace": ctx.get("namespace"),
    }


# ---------------------------------------------------------------- HTTPS client


def kube_disk_cache(client):
    """The disk cache the real kubectl and helm keep of the API server's
    discovery (k8s.io/cli-runtime genericclioptions.ConfigFlags
    ToDiscoveryClient, which both use): under $KUBECACHEDIR, else
    ~/.kube/cache (homedir.HomeDir(): $HOME), a folder per server in
    discovery/ named by computeDiscoverCacheDir (the scheme dropped, every
    character but letters, digits, '_', '/', '.', '(' and ')' made '_':
    198.18.0.2_6443) with servergroups.json and GROUP/VERSION/
    serverresources.json, and the HTTP cache of those answers in http/ (one
    file per URL, named by its SHA-256, as client-go's sumDiskCache);
    folders 0750, files 0660, as client-go's disk cache makes them.  Written
    when missing or older than 6 h (the TTL ConfigFlags gives), by a
    command that maps resources (not `get --raw`, not `version`).  Errors
    are ignored, as the real clients ignore a cache they cannot write."""
    try:
        base = os.environ.get("KUBECACHEDIR") or os.path.join(os.path.expanduser("~"), ".kube", "cache")
        host = re.sub(r"[^(\w/.)]", "_", (client.server or "").replace("https://", "", 1).replace("http://", "", 1))
        disc = os.path.join(base, "discovery", host)
        groups = os.path.join(disc, "servergroups.json")
        try:
            if time.time() - os.stat(groups).st_mtime < 6 * 3600:
                return
        except OSError:
            pass
        answers = []
        for path in ("/api", "/apis"):
            status, body = client.raw("GET", path)
            if status == 200:
                answers.append((path, body))
        gl = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
        for path, body in answers:
            doc = json.loads(body or b"{}")
            if path == "/api":
                gl["groups"].insert(0, {"name": "", "versions": [{"groupVersion": v, "version": v}
                                                                 for v in doc.get("versions", [])]})
            else:
                gl["groups"].extend(doc.get("groups", []))
        old = os.umask(0o027)  # folders 0750 (intermediate ones too), files chmod 0660
        try:
            for d in (disc, os.path.join(base, "http")):
                os.makedirs(d, 0o750, exist_ok=True)
            for path, body in answers:
                url = "%s%s" % (client.server, path)
                write_file(os.path.join(base, "http", hashlib.sha256(url.encode()).hexdigest()),
                           b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body, 0o660)
            for g in gl["groups"]:
                for v in g.get("versions", []):
                    gv = v.get("groupVersion", "")
                    d = os.path.join(disc, *gv.split("/")) if gv else None
                    if d:
                        os.makedirs(d, 0o750, exist_ok=True)
                        write_file(os.path.join(d, "serverresources.json"),
                                   json.dumps({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                               "resources": []}), 0o660)
            write_file(groups, json.dumps(gl), 0o660)
        finally:
            os.umask(old)
    except (OSError, ValueError, ConnError):
        pass


class APIError(Exception):
    """An HTTP error from the API server with its Status object."""

    def __init__(self, code, status):
        self.code = code
        self.status = status if isinstance(status, dict) else {"message": str(status)}
        super().__init__(self.status.get("message", "HTTP %d" % code))

    @property
    def reason(self):
        return self.status.get("reason", "")


class ConnError(Exception):
    """The server could not be reached (refused, timed out, TLS)."""

    def __init__(self, msg, kind="refused"):
        super().__init__(msg)
        self.kind = kind


class _Conn:
    """The connection a keep-alive Client (and its copies) reuses."""

    def __init__(self):
        self.sock = None
        self.buf = b""
        self.lock = threading.Lock()

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock, self.buf = None, b""


class _Stale(Exception):
    """A reused connection the server had closed before answering."""


class Client:
    """An HTTP(S) client of the API server.  The command-line tools send
    each request on its own connection (Connection: close), as they make a
    few; the daemons (kubelet, controller manager, scheduler) pass
    keepalive=True and send theirs on one persistent connection, as the
    real components' client-go does, opened again when the server closed
    it (a request that got no answer on a reused connection is sent once
    more on a new one)."""

    def __init__(self, server, ca=None, cert=None, key=None, token=None, insecure=False, timeout=10.0, keepalive=False):
        u = urllib.parse.urlsplit(server or "http://localhost:8080")
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.server = server
        self.token = token
        self.timeout = timeout
        self.headers = []  # extra request headers ("Impersonate-User: ...")
        self.ctx = None
        self._tmp = None
        self.conn = _Conn() if keepalive else None
        self.writes = 0  # requests other than GET sent (a controller's "did I change anything")
        if self.scheme == "https":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            if insecure or not ca:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            else:
                ctx.load_verify_locations(cadata=ca)
                ctx.check_hostname = True
            if cert and key:
                # load_cert_chain reads files: a private folder, removed at once
                d = tempfile.mkdtemp(prefix="fakekube-")
                try:
                    os.chmod(d, 0o700)
                    cf, kf = os.path.join(d, "c"), os.path.join(d, "k")
                    write_file(cf, cert, 0o600)
                    write_file(kf, key, 0o600)
                    ctx.load_cert_chain(cf, kf)
                finally:
                    for f in ("c", "k"):
                        try:
                            os.unlink(os.path.join(d, f))
                        except OSError:
                            pass
                    os.rmdir(d)
            self.ctx = ctx

    @classmethod
    def from_kubeconfig(cls, path, timeout=10.0, keepalive=False):
        kc = load_kubeconfig(path)
        return cls(kc["server"], kc["ca"], kc["cert"], kc["key"], kc["token"], kc["insecure"], timeout, keepalive)

    def hostport(self):
        return "%s:%d" % (self.host, self.port)

    def raw(self, method, path, body=None, ctype="application/json", query=None):
        """(status, bytes) of one request; ConnError when unreachable.
        HTTP/1.1 by hand: http.client would pull in the email package,
        which costs more than the request."""
        if query:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(query)
        data = b""
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        head = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % self.hostport(), "Accept: application/json",
                "User-Agent: fake-kubernetes/" + FAKE_VERSION, "Content-Length: %d" % len(data)]
        if self.conn is None:
            head.insert(4, "Connection: close")
        if self.token:
            head.append("Authorization: Bearer " + self.token)
        head += self.headers
        if body is not None:
            head.append("Content-Type: " + ctype)
        req = ("\r\n".join(head) + "\r\n\r\n").encode() + data
        if method != "GET":
            self.writes += 1
        try:
            if self.conn is None:
                return self._once(req)
            with self.conn.lock:
                if self.conn.sock is not None and select.select([self.conn.sock], [], [], 0)[0]:
                    self.conn.close()  # readable while idle: the server closed it
                if self.conn.sock is not None:
                    try:
                        return self._exchange(req)
                    except _Stale:
                        pass  # closed by the server while idle: a new connection
                return self._exchange(req)
        except ConnectionRefusedError as e:
            raise ConnError("dial tcp %s: connect: connection refused" % self.hostport(), "refused") from e
        except ssl.SSLCertVerificationError as e:
            raise ConnError("tls: failed to verify certificate: x509: %s" % (e.verify_message or e), "x509") from e
        except ssl.SSLError as e:
            raise ConnError("remote error: tls: %s" % (e.reason or e), "tls") from e
        except (socket.timeout, TimeoutError) as e:
            raise ConnError("dial tcp %s: i/o timeout" % self.hostport(), "timeout") from e
        except _Stale as e:
            raise ConnError("read tcp %s: unexpected EOF" % self.hostport(), "reset") from e
        except OSError as e:
            msg = e.strerror or str(e)
            if e.errno in (113, 101):
                raise ConnError("dial tcp %s: connect: no route to host" % self.hostport(), "unreachable") from e
            if isinstance(e, ConnectionResetError) or "reset" in msg.lower():
                raise ConnError("read tcp %s: read: connection reset by peer" % self.hostport(), "reset") from e
            raise ConnError("dial tcp %s: %s" % (self.hostport(), msg.lower()), "other") from e

    def _connect(self):
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        try:
            if self.scheme == "https":
                sock = self.ctx.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        return sock

    def _once(self, req):
        """A request on a connection of its own, read to the server's close."""
        sock = self._connect()
        try:
            sock.sendall(req)
            chunks = []
            while True:
                b = sock.recv(65536)
                if not b:
                    break
                chunks.append(b)
        finally:
            sock.close()
        resp = b"".join(chunks)
        head_b, sep, rest = resp.partition(b"\r\n\r\n")
        if not sep:
            raise ConnError("read tcp %s: unexpected EOF" % self.hostport(), "reset")
        status, hdrs = self._head(head_b)
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            out, pos = [], 0
            while True:
                nl = rest.index(b"\r\n", pos)
                size = int(rest[pos:nl].split(b";")[0], 16)
                if size == 0:
                    break
                out.append(rest[nl + 2:nl + 2 + size])
                pos = nl + 2 + size + 2
            rest = b"".join(out)
        elif "content-length" in hdrs:
            rest = rest[:int(hdrs["content-length"])]
        return status, rest

    def _head(self, head_b):
        lines = head_b.decode("iso-8859-1").split("\r\n")
        try:
            status = int(lines[0].split()[1])
        except (IndexError, ValueError) as e:
            raise ConnError("malformed HTTP response %r" % lines[0], "other") from e
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        return status, hdrs

    def _exchange(self, req):
        """A request on the kept-alive connection (opened when there is
        none); _Stale when a reused one ends before any answer."""
        conn = self.conn
        reused = conn.sock is not None
        if not reused:
            conn.sock, conn.buf = self._connect(), b""
        got = False

        def more():
            nonlocal got
            try:
                b = conn.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError) as e:
                if reused and not got:
                    raise _Stale() from e
                raise
            if not b:
                if reused and not got:
                    raise _Stale()
                raise ConnError("read tcp %s: unexpected EOF" % self.hostport(), "reset")
            got = True
            conn.buf += b

        try:
            try:
                conn.sock.sendall(req)
            except (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError) as e:
                if reused:
                    raise _Stale() from e
                raise
            while b"\r\n\r\n" not in conn.buf:
                more()
            head_b, _, conn.buf = conn.buf.partition(b"\r\n\r\n")
            status, hdrs = self._head(head_b)
            if hdrs.get("transfer-encoding", "").lower() == "chunked":
                out = []
                while True:
                    while b"\r\n" not in conn.buf:
                        more()
                    line, _, conn.buf = conn.buf.partition(b"\r\n")
                    size = int(line.split(b";")[0], 16)
                    while len(conn.buf) < size + 2:
                        more()
                    out.append(conn.buf[:size])
                    conn.buf = conn.buf[size + 2:]
                    if size == 0:
                        break
                rest = b"".join(out)
            elif "content-length" in hdrs:
                n = int(hdrs["content-length"])
                while len(conn.buf) < n:
                    more()
                rest, conn.buf = conn.buf[:n], conn.buf[n:]
            else:  # the body ends with the connection
                try:
                    while True:
                        more()
                except ConnError:
                    pass
                rest, conn.buf = conn.buf, b""
                hdrs["connection"] = "close"
        except BaseException:
            conn.close()
            raise
        if hdrs.get("connection", "").lower() == "close":
            conn.close()
        return status, rest

    def call(self, method, path, body=None, ctype="application/json", query=None):
        status, out = self.raw(method, path, body, ctype, query)
        try:
            obj = json.loads(out) if out else {}
        except ValueError:
            obj = {"message": out.decode(errors="replace")}
        if status >= 400:
            raise APIError(status, obj)
        return obj

    def get(self, path, query=None):
        return self.call("GET", path, query=query)

    def post(self, path, body):
        return self.call("POST", path, body)

    def put(self, path, body):
        return self.call("PUT", path, body)

    def patch(self, path, body, ctype="application/merge-patch+json"):
        return self.call("PATCH", path, body, ctype)

    def delete(self, path):
        return self.call("DELETE", path)


# ---------------------------------------------------------------- API resources
#
# (group, version, kind, plural, namespaced, short names): the resources
# of the Kubernetes API reference that provision and its add-ons use.

RESOURCES = [
    ("", "v1", "Namespace", "namespaces", False, ["ns"]),
    ("", "v1", "Node", "nodes", False, ["no"]),
    ("", "v1", "Pod", "pods", True, ["po"]),
    ("", "v1", "ConfigMap", "configmaps", True, ["cm"]),
    ("", "v1", "Secret", "secrets", True, []),
    ("", "v1", "ServiceAccount", "serviceaccounts", True, ["sa"]),
    ("", "v1", "Service", "services", True, ["svc"]),
    ("", "v1", "Endpoints", "endpoints", True, ["ep"]),
    ("", "v1", "Event", "events", True, ["ev"]),
    ("", "v1", "PersistentVolume", "persistentvolumes", False, ["pv"]),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ["pvc"]),
    ("apps", "v1", "DaemonSet", "daemonsets", True, ["ds"]),
    ("apps", "v1", "Deployment", "deployments", True, ["deploy"]),
    ("apps", "v1", "ReplicaSet", "replicasets", True, ["rs"]),
    ("apps", "v1", "StatefulSet", "statefulsets", True, ["sts"]),
    ("batch", "v1", "Job", "jobs", True, []),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, []),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, []),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", True, []),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, []),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", False, ["csr"]),
    ("coordination.k8s.io", "v1", "Lease", "leases", True, []),
    ("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ["sc"]),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ["pc"]),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ["pdb"]),
    ("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False, []),
    ("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ["netpol"]),
    ("networking.k8s.io", "v1", "Ingress", "ingresses", True, ["ing"]),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, ["crd", "crds"]),
]


class Resource:
    def __init__(self, group, version, kind, plural, namespaced, short):
        self.group, self.version, self.kind, self.plural = group, version, kind, plural
        self.namespaced, self.short = namespaced, short

    @property
    def api_version(self):
        return self.group + "/" + self.version if self.group else self.version

    @property
    def qualified(self):
        """nodes, daemonset.apps: how kubectl names the kind in its messages."""
        return self.kind.lower() + ("." + self.group if self.group else "")

    def path(self, namespace=None, name=None, sub=None):
        base = "/apis/%s/%s" % (self.group, self.version) if self.group else "/api/v1"
        if self.namespaced and namespace:
            base += "/namespaces/" + namespace
        base += "/" + self.plural
        if name:
            base += "/" + name
        if sub:
            base += "/" + sub
        return base


RESOURCE_LIST = [Resource(*r) for r in RESOURCES]


def resource_for_kind(api_version, kind):
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    for r in RESOURCE_LIST:
        if r.kind == kind and r.group == group:
            return r
    return None


def resource_by_name(name):
    """kubectl's resource argument: plural, singular, short name, kind, or
    any of those with .group."""
    name = name.lower()
    base, _, group = name.partition(".")
    for r in RESOURCE_LIST:
        names = [r.plural, r.kind.lower()] + r.short
        if base in names and (not group or group == r.group):
            return r
    return None


def resource_by_path(group, version, plural):
    for r in RESOURCE_LIST:
        if r.group == group and r.version == version and r.plural == plural:
            return r
    return None


# ---------------------------------------------------------------- labels and selectors


def parse_selector(sel):
    """A label selector string ("a=b,c!=d,e,!f,g in (x,y)") as a list of
    (key, op, values)."""
    out = []
    if not sel:
        return out
    parts = re.findall(r"[^,(]+(?:\([^)]*\))?", sel)
    for p in parts:
        p = p.strip()
        if not p:
            continue
        m = re.match(r"^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$", p)
        if m:
            out.append((m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",")]))
        elif "!=" in p:
            k, v = p.split("!=", 1)
            out.append((k.strip(), "!=", [v.strip()]))
        elif "==" in p:
            k, v = p.split("==", 1)
            out.append((k.strip(), "=", [v.strip()]))
        elif "=" in p:
            k, v = p.split("=", 1)
            out.append((k.strip(), "=", [v.strip()]))
        elif p.startswith("!"):
            out.append((p[1:].strip(), "!", []))
        else:
            out.append((p, "exists", []))
    return out


def selector_matches(sel, labels):
    labels = labels or {}
    for k, op, vals in sel:
        if op == "=" and labels.get(k) != vals[0]:
            return False
        if op == "!=" and labels.get(k) == vals[0]:
            return False
        if op == "in" and labels.get(k) not in vals:
            return False
        if op == "notin" and k in labels and labels[k] in vals:
            return False
        if op == "exists" and k not in labels:
            return False
        if op == "!" and k in labels:
            return False
    return True


def label_selector_matches(sel, labels):
    """A LabelSelector object (matchLabels, matchExpressions with In,
    NotIn, Exists, DoesNotExist) against labels; an empty one matches
    everything, as metav1.LabelSelectorAsSelector makes it."""
    terms = [(k, "=", [v]) for k, v in ((sel or {}).get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for e in (sel or {}).get("matchExpressions") or []:
        terms.append((e.get("key"), ops.get(e.get("operator"), "?"), e.get("values") or []))
    if any(op == "?" for _, op, _ in terms):
        return False
    return selector_matches(terms, labels)


def get_path(obj, dotted):
    """metadata.name -> obj["metadata"]["name"] (None when absent)."""
    for part in dotted.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def field_selector_matches(sel, obj):
    for k, op, vals in parse_selector(sel):
        v = get_path(obj, k)
        v = "" if v is None else str(v)
        if op == "=" and v != vals[0]:
            return False
        if op == "!=" and v == vals[0]:
            return False
    return True


# ---------------------------------------------------------------- log lines


# ---------------------------------------------------------------- flags
#
# Flags are parsed as cobra and pflag parse them for the real helm, kubeadm
# and kubectl: "--name=value", "--name value", "-s value", "-svalue",
# "-s=value", bundled booleans "-ab", booleans with an optional "=value"
# (Go's strconv.ParseBool), "--" ends the flags, flags and arguments
# interleave.  WHICH flags a (sub)command accepts is not the stand-in's
# choice: it is the real tool's table, CLI_FLAGS, that build.sh embeds in
# front of this file from tests/fakes/cli/TOOL-VERSION.flags ("global" plus
# "sub"[COMMAND], the names with their shorthands).  A stand-in only says, for the flags it acts on,
# what kind of value each takes (kinds) and which long name a shorthand
# stands for in that command (shorts: helm list's -f is --filter, helm
# upgrade's is --values); a real flag it does not act on stops it with
# FlagNotModelled (a stand-in's limit, never a silent pass).  A flag the
# table marks deprecated (pflag's MarkDeprecated: helm 4's --atomic and
# --force, helm 3's upgrade --recreate-pods) prints pflag's line on standard
# error each time it is given, "Flag --atomic has been deprecated, use
# --rollback-on-failure instead", as the real binary does, before anything
# else happens.


class FlagError(Exception):
    """A command line the real tool rejects while parsing its flags; the
    text is pflag's ("unknown flag: --x", "unknown shorthand flag: 'x' in
    -x", "flag needs an argument: --x", "invalid argument ...")."""


class FlagNotModelled(Exception):
    """A flag the real tool accepts here but the stand-in does not act on."""


GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def go_duration_error(s):
    """None when s parses as Go's time.ParseDuration does, else its error."""
    q = json.dumps(s)
    if s in ("0", "+0", "-0"):
        return None
    body = s[1:] if s[:1] in "+-" else s
    if not body:
        return "time: invalid duration " + q
    units = ("ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h")
    i = 0
    while i < len(body):
        m = re.match(r"([0-9]*(?:\.[0-9]*)?)", body[i:])
        if not m.group(1) or m.group(1) == ".":
            return "time: invalid duration " + q
        i += len(m.group(1))
        u = re.match(r"([^0-9.]*)", body[i:]).group(1)
        if not u:
            return "time: missing unit in duration " + q
        if u not in units:
            return "time: unknown unit %s in duration %s" % (json.dumps(u), q)
        i += len(u)
    return None


def cli_names(command):
    """The flag names ("--long", "-s") the real tool accepts for COMMAND
    ("list", "token create", ...): its global flags and the command's own,
    from the embedded CLI_FLAGS."""
    table = CLI_FLAGS["sub"].get(command)  # noqa: F821  (build.sh embeds it)
    if table is None:
        raise FlagNotModelled("no flag table for %s" % json.dumps(command))
    names = FlagNames(set(table) | set(CLI_FLAGS["global"]))  # noqa: F821
    dep = CLI_FLAGS.get("deprecated", {})  # noqa: F821
    names.deprecated = dict(dep.get("global", {}), **dep.get(command, {}))
    return names


class FlagNames(set):
    """The names cli_names returns, with .deprecated: "--long" -> the real
    binary's deprecation message."""
    deprecated = {}


def pflag_parse(argv, names, kinds, shorts=None):
    """argv as the real command's flag set parses it.  names: the real
    flags (cli_names); kinds: long name -> 'bool' | 'str' | 'list' (repeat
    appends) | 'csv' (repeat appends, commas split) | 'dur' (a Go
    duration) | 'int' | 'opt:DEFAULT' (a string whose bare --name means
    DEFAULT, pflag's NoOptDefVal: a value only after '='); shorts: letter -> long name.  Returns (flags, args):
    flags by long name (lists for list/csv), args the positional words."""
    shorts = shorts or {}
    rev = {v: k for k, v in shorts.items()}
    flags, args = {}, []

    deprecated = getattr(names, "deprecated", {})

    def warn_deprecated(name):
        if "--" + name in deprecated:
            sys.stderr.write("Flag --%s has been deprecated, %s\n" % (name, deprecated["--" + name]))

    def label(name):
        return "-%s, --%s" % (rev[name], name) if name in rev else "--" + name

    def kind_of(name, shown):
        warn_deprecated(name)
        k = kinds.get(name)
        if k is None:
            raise FlagNotModelled("%s is a real flag here that the stand-in does not act on" % shown)
        return k

    def put(name, kind, val):
        if kind == "bool":
            if val not in GO_BOOLS:
                raise FlagError('invalid argument %s for %s flag: strconv.ParseBool: parsing %s: invalid syntax'
                                % (json.dumps(val), json.dumps(label(name)), json.dumps(val)))
            flags[name] = GO_BOOLS[val]
        elif kind == "dur":
            err = go_duration_error(val)
            if err:
                raise FlagError("invalid argument %s for %s flag: %s" % (json.dumps(val), json.dumps(label(name)), err))
            flags[name] = val
        elif kind == "int":
            if not re.match(r"^[+-]?[0-9]+$", val):
                raise FlagError('invalid argument %s for %s flag: strconv.ParseInt: parsing %s: invalid syntax'
                                % (json.dumps(val), json.dumps(label(name)), json.dumps(val)))
            flags[name] = int(val)
        elif kind == "list":
            flags.setdefault(name, []).append(val)
        elif kind == "csv":
            flags.setdefault(name, []).extend(v for v in val.split(",") if v)
        else:
            flags[name] = val

    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            args.extend(argv[i:])
            break
        if not a.startswith("-") or a == "-":
            args.append(a)
            continue
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            if "--" + name not in names:
                raise FlagError("unknown flag: --" + name)
            kind = kind_of(name, "--" + name)
            if eq:
                put(name, kind, val)
            elif kind == "bool":
                flags[name] = True
            elif kind.startswith("opt:"):
                flags[name] = kind[4:]
            elif i < len(argv):
                put(name, kind, argv[i])
                i += 1
            else:
                raise FlagError("flag needs an argument: " + a)
            continue
        rest = a[1:]
        while rest:
            c, rest = rest[0], rest[1:]
            if "-" + c not in names:
                raise FlagError("unknown shorthand flag: %s in -%s" % ("'%s'" % c, c + rest))
            name = shorts.get(c)
            if name is None:
                raise FlagNotModelled("-%s is a real flag here that the stand-in does not act on" % c)
            kind = kind_of(name, "-" + c)
            if kind == "bool":
                if rest.startswith("="):
                    put(name, kind, rest[1:])
                    rest = ""
                else:
                    flags[name] = True
                continue
            if rest.startswith("="):
                put(name, kind, rest[1:])
            elif rest:
                put(name, kind, rest)
            elif i < len(argv):
                put(name, kind, argv[i])
                i += 1
            else:
                raise FlagError("flag needs an argument: %s in -%s" % ("'%s'" % c, c))
            rest = ""
    return flags, args


def klog(severity, msg, **kv):
    """One structured klog line ("I0601 12:00:00.123456    4242 file.go:1]
    "msg" key="value"") on standard error."""
    t = time.time()
    lt = time.localtime(t)
    head = "%s%02d%02d %02d:%02d:%02d.%06d %7d %s]" % (
        severity, lt.tm_mon, lt.tm_mday, lt.tm_hour, lt.tm_min, lt.tm_sec, int((t % 1) * 1e6), os.getpid(),
        os.path.basename(sys.argv[0]) + ".go:1")
    parts = [json.dumps(msg)]
    for k, v in kv.items():
        parts.append("%s=%s" % (k, json.dumps(v) if isinstance(v, str) else v))
    sys.stderr.write(head + " " + " ".join(parts) + "\n")
    sys.stderr.flush()


def die(msg, code=1):
    sys.stderr.write(msg.rstrip("\n") + "\n")
    sys.exit(code)


def version_info(version=FAKE_VERSION):
    """The version.Info every component reports (/version, version -o json).
    The fields a fake cannot know (build date, exact commit) are derived
    from the version so that they stay the same from run to run."""
    major, minor = version.split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": "v" + version,
        "gitCommit": hashlib.sha1(("fake-kubernetes-" + version).encode()).hexdigest(),
        "gitTreeState": "clean",
        "buildDate": "2024-08-14T19:04:48Z",
        "goVersion": "go1.22.5",
        "compiler": "gc",
        "platform": "linux/amd64",
    }
