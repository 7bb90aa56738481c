"""Decide what of a pod's secrets may be shown or kept, and mask the rest once, where data enters.

No output and no file then ever holds a secret (docs/architecture.md, Redaction).

What is masked (`MASK`), in the pod specs every sink receives:

- every container `env` value, unless its name is on the env allow-list;
- every HTTP probe header value, unless its name is a harmless one (`BUILTIN_ALLOW_HEADERS`) or
  on the header allow-list;
- every query parameter value of an HTTP probe's path, unless its name is on the query
  allow-list;
- in exec probe commands and in containers' `command` and `args`, the values the argument
  rules find (`argv_spans`): `--password=X`, `--password X`, `-pX` after a mysql-family tool,
  `-u user:pw` after curl, `user:pw@` userinfo anywhere, `name=value` where the name looks
  like a credential, and the same inside a `sh -c` script.

What is masked in every free text (an attempt's target, output, body and error, the kubelet's
event messages, a container's waiting message, its output tail): every known secret value of
the pod where it reappears (`Shown.secrets`: those masked above, as long as `MIN_NAMED` or
`MIN_OTHER`), and whatever the same rules find in the text itself, plus URL query values.

The probe as sent is never changed: the prober keeps the real pod; `Redactor` makes the
masked copy that the engine hands its sinks (the screen's store, JSONL, the recorder).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

from probetui.probe.base import Attempt
from probetui.prober.prober import ProbeOutcome
from probetui.prober.status import ContainerStatus, PodStatus, Terminated, Waiting
from probetui.prober.worker import ProbeRecord
from probetui.spec.model import Container, EnvVar, ExecAction, HTTPHeader, Pod, Probe

MASK = "••••••"

# A known secret value is searched for elsewhere (an output, an error, an event message) only
# from this length: masking "1" or "true" wherever it stands would destroy every output. A
# value under a credential-looking name, or one an argument rule found, counts from MIN_NAMED;
# one masked only because no allow-list names it (any env value, query value, other header)
# from MIN_OTHER, so that PORT=8080 does not blank every port. Shorter values are still masked
# where they stand.
MIN_NAMED = 4
MIN_OTHER = 6

# header names shown in the clear whatever the configuration: they carry no credentials
BUILTIN_ALLOW_HEADERS = frozenset(
    name.lower()
    for name in (
        "Accept",
        "Accept-Charset",
        "Accept-Encoding",
        "Accept-Language",
        "Cache-Control",
        "Connection",
        "Content-Length",
        "Content-Type",
        "Host",
        "Pragma",
        "User-Agent",
        "X-Forwarded-Host",
        "X-Forwarded-Port",
        "X-Forwarded-Proto",
    )
)

# a name holding one of these says its value is a credential ("auth" finds "Authorization")
SECRET_WORDS = (
    "auth",
    "cookie",
    "token",
    "secret",
    "key",
    "passw",
    "pwd",
    "credential",
    "session",
    "signature",
)


@dataclass(frozen=True, slots=True)
class Policy:
    """Holds the allow-lists: the names whose values are shown in the clear (config `redact:`).

    Env and query names are compared exactly (both are case-sensitive), header names without
    regard to case; `allow_headers` adds to `BUILTIN_ALLOW_HEADERS`.
    """

    allow_env: frozenset[str] = frozenset()
    allow_query: frozenset[str] = frozenset()
    allow_headers: frozenset[str] = frozenset()  # lower-cased

    @classmethod
    def of(
        cls, env: Iterable[str] = (), query: Iterable[str] = (), headers: Iterable[str] = ()
    ) -> Policy:
        return cls(frozenset(env), frozenset(query), frozenset(h.lower() for h in headers))

    def env_shown(self, name: str) -> bool:
        return name in self.allow_env

    def query_shown(self, name: str) -> bool:
        return name in self.allow_query or unquote(name) in self.allow_query

    def header_shown(self, name: str) -> bool:
        low = name.lower()
        return low in BUILTIN_ALLOW_HEADERS or low in self.allow_headers

    def name_shown(self, name: str) -> bool:
        """A `name=value` pair in free text whose name an allow-list names stays as it is."""
        if name in self.allow_env or name in self.allow_query:
            return True
        low = name.lower()
        return low in BUILTIN_ALLOW_HEADERS or low in self.allow_headers

    def to_json(self) -> dict[str, list[str]]:
        return {
            "allowEnv": sorted(self.allow_env),
            "allowQuery": sorted(self.allow_query),
            "allowHeaders": sorted(self.allow_headers),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Policy:
        data = data or {}
        return cls.of(
            data.get("allowEnv", ()), data.get("allowQuery", ()), data.get("allowHeaders", ())
        )


DEFAULT = Policy()


def is_secret_name(name: str) -> bool:
    """Tells whether a header, env var, flag or pair name says its value is a credential."""
    low = name.lower()
    return any(word in low for word in SECRET_WORDS)


# -- the rules on text ------------------------------------------------------------------------

Span = tuple[int, int]

# `?a=1&b=2` after a URL or a path: every value
# (a scheme starts only where a word does: no backtracking through a long word, such as base64)
_QUERY = re.compile(
    r"(?:(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://|(?<![\w.~-])/)[^\s?#\"'<>`]*\?(?P<q>[^\s#\"'<>`]*)",
    re.I,
)
_QUERY_PAIR = re.compile(r"(?P<name>[^&;=]+)=(?P<value>[^&;]*)")
# `scheme://user:pw@host`, or `user:pw@host` standing alone (a mongo or curl argument)
_USERINFO = re.compile(
    r"(?:(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://|(?<![^\s\"'=(,]))[^\s/@:\"'`]*:(?P<pw>[^\s/@\"'`]+)"
    r"@(?=[\w\[])",
    re.I,
)
# `Authorization: Bearer X` once the name is gone (an echo of the value alone)
_SCHEME_TOKEN = re.compile(r"\b(?:bearer|basic)\s+(?P<v>[A-Za-z0-9._~+/=-]{6,})", re.I)
# name=value, name: value, "name": "value" (the name is judged by `SECRET_WORDS`)
_PAIR = re.compile(
    r"(?<![\w.-])(?P<name>[\w.-]+)[\"']?[ \t]*[=:][ \t]*(?P<q>[\"'])?"
    r"(?P<value>(?(q)[^\"'\n]+|(?:(?:bearer|basic)[ \t]+)?[^\s\"'&;,`]+))",
    re.I,
)
# curl's and wget's `-H 'Name: value'` / `--header=Name:value`: the value unless the name is shown
_HEADER_ARG = re.compile(
    r"(?<!\S)(?:-H|--header)(?:[ \t]+|=)(?P<q>[\"'])?(?P<name>[\w-]+):[ \t]*"
    r"(?P<value>(?(q)[^\"'\n]*|\S*))"
)
# a shell word, or one of the separators that end a command
_WORD = re.compile(r"[;&|()`\n]|[^\s;&|()`]+")
# `$VAR`, `${VAR}`, `$(VAR)`: a reference, not a secret (its value is masked where it shows)
_REFERENCE = re.compile(r"\$(?:\w+|\{\w+\}|\(\w+\))")
# a flag whose next argument is a credential: --password X, --auth-token X (not --token-file)
_SECRET_FLAG = re.compile(r"--?(?!no-)[\w-]*(?:passw|pwd|secret|token|credential|api-?key)[\w-]*")
_NOT_A_VALUE_FLAG = re.compile(r".*[-_](?:file|path|dir|env|name|id)$", re.I)

# Tools whose short flags carry a credential (basename of argv[0], or of a word in a script):
# flag -> how its value comes: "attached" (-pSECRET only: `-p 3306` is a port or a prompt),
# "next" (the following argument, or attached), "userinfo" (user:pw, the part after the colon).
_MYSQL = {"-p": "attached"}
TOOL_FLAGS: dict[str, dict[str, str]] = {
    **{
        tool: _MYSQL
        for tool in (
            "mysql",
            "mysqladmin",
            "mysqldump",
            "mysqlcheck",
            "mysqlshow",
            "mysqlimport",
            "mysqlslap",
            "mysqlpump",
            "mariadb",
            "mariadb-admin",
            "mariadb-dump",
            "mariadb-check",
            "mariadb-show",
            "mariadb-import",
            "mariadb-slap",
        )
    },
    "curl": {"-u": "userinfo", "--user": "userinfo", "-U": "userinfo", "--proxy-user": "userinfo"},
    "redis-cli": {"-a": "next", "--pass": "next"},
    "mongo": {"-p": "next"},
    "mongosh": {"-p": "next"},
    "sshpass": {"-p": "next"},
}


# a text the argument rules may find something in names a credential or one of these
_TOOL_WORDS = ("mysql", "mariadb", "curl", "redis-cli", "mongo", "sshpass")


def _name_start(text: str, at: int) -> int:
    """Finds where the name (`[\\w.-]` characters) that holds position `at` begins."""
    while at > 0 and (text[at - 1].isalnum() or text[at - 1] in "_.-"):
        at -= 1
    return at


def _unquoted(word: str, start: int) -> tuple[str, int]:
    """Takes off the quotes a script put around a word; returns it and where it now starts."""
    lead = len(word) - len(word.lstrip("'\""))
    core = word[lead:].rstrip("'\"")
    return core, start + lead


def _value_span(core: str, at: int, how: str) -> Span | None:
    if how == "userinfo":
        colon = core.find(":")
        return (at + colon + 1, at + len(core)) if 0 <= colon < len(core) - 1 else None
    return (at, at + len(core)) if core else None


def _command_spans(text: str) -> list[Span]:
    """Finds what the argument rules mask in a command line or a script (split at `;`, `&&`,
    `|`)."""
    spans: list[Span] = []
    flags: dict[str, str] = {}
    pending: str | None = None  # how the next word is a value
    for m in _WORD.finditer(text):
        word = m.group()
        if len(word) == 1 and word in ";&|()`\n":
            flags, pending = {}, None
            continue
        core, at = _unquoted(word, m.start())
        if pending is not None:
            how, pending = pending, None
            if not core.startswith("-"):
                span = _value_span(core, at, how)
                if span is not None:
                    spans.append(span)
                continue
        tool = TOOL_FLAGS.get(core.rsplit("/", 1)[-1])
        if tool is not None:
            flags = tool
            continue
        if "=" in core:
            name, _, value = core.partition("=")
            how = flags.get(name)
            if how is not None and value:
                span = _value_span(value, at + len(name) + 1, "next" if how == "attached" else how)
                if span is not None:
                    spans.append(span)
            continue  # a credential-named name=value is the pairs' rule
        if core in flags and flags[core] != "attached":
            pending = flags[core]
            continue
        if core.startswith("-") and not core.startswith("--"):
            for flag, how in flags.items():
                if len(flag) == 2 and core.startswith(flag) and len(core) > 2:
                    span = _value_span(core[2:], at + 2, "next" if how == "attached" else how)
                    if span is not None:
                        spans.append(span)
                    break
            continue
        if _SECRET_FLAG.fullmatch(core) and not _NOT_A_VALUE_FLAG.match(core):
            pending = "next"
    return spans


def text_spans(text: str, policy: Policy = DEFAULT) -> list[Span]:
    """Lists every stretch of `text` the rules mask, in order, overlaps merged."""
    return _merged(text, _rule_spans(text, policy))


def _rule_spans(text: str, policy: Policy) -> list[Span]:
    """Collects the stretches each rule masks, unsorted.

    Each rule runs only where the text holds what it needs (a `?`, an `@`, a credential word,
    a tool's name): a 10 KiB body costs a few scans, not a rule's walk through every word.
    """
    spans: list[Span] = []
    if "?" in text:
        for m in _QUERY.finditer(text):
            base = m.start("q")
            for p in _QUERY_PAIR.finditer(m.group("q")):
                if p.group("value") and not policy.query_shown(p.group("name")):
                    spans.append((base + p.start("value"), base + p.end("value")))
    if "@" in text:
        spans.extend(m.span("pw") for m in _USERINFO.finditer(text))
    if "-H" in text or "--header" in text:
        for m in _HEADER_ARG.finditer(text):
            if m.group("value") and not policy.header_shown(m.group("name")):
                spans.append(m.span("value"))
    # the case-insensitive regexes are dear per character in Python, so each runs only where a
    # plain search of the lower-cased text found what it needs
    low = text.lower()
    starts: set[int] = set()
    for word in SECRET_WORDS:
        at = low.find(word)
        while at >= 0:
            starts.add(_name_start(text, at))
            at = low.find(word, at + len(word))
    for start in sorted(starts):
        m = _PAIR.match(text, start)
        if m is not None and not policy.name_shown(m.group("name").lstrip("-")):
            spans.append(m.span("value"))
    if "bearer" in low or "basic" in low:
        spans.extend(m.span("v") for m in _SCHEME_TOKEN.finditer(text))
    # a credential flag (--password X) or a tool of TOOL_FLAGS: the argument rules
    if any(text[i] == "-" for i in starts) or any(tool in low for tool in _TOOL_WORDS):
        spans.extend(_command_spans(text))
    return spans


def _merged(text: str, spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for start, end in sorted(spans):
        if end <= start or _REFERENCE.fullmatch(text, start, end) or text[start:end] == MASK:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _apply(text: str, spans: Sequence[Span], stop: int | None = None) -> str:
    """Replaces each span of `text` by MASK and cuts at `stop` (a span across it masked whole)."""
    if not spans and stop is None:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        if stop is not None and start >= stop:
            break
        parts.append(text[last:start])
        parts.append(MASK)
        last = end
    parts.append(text[last:stop] if stop is None or last < stop else "")
    return "".join(parts)


# characters read past a cut: a value whose name stands before the cut is found whole
_CUT_PAD = 64


def mask(
    text: str, secrets: Iterable[str] = (), policy: Policy = DEFAULT, limit: int | None = None
) -> str:
    """Masks the known `secrets` in `text` and whatever the rules find; with `limit`, keeps only
    its first `limit` characters are kept, read far enough past them that a secret begun
    before the cut is masked whole rather than cut in two (so a 10 KiB body costs 2 KiB)."""
    if not text:
        return text
    secrets = tuple(secrets)
    stop: int | None = None
    if limit is not None and len(text) > limit:
        stop = limit
        text = text[: limit + max((len(s) for s in secrets), default=0) + _CUT_PAD]
    spans = _rule_spans(text, policy)
    for s in secrets:
        at = text.find(s)
        while at >= 0:
            spans.append((at, at + len(s)))
            at = text.find(s, at + len(s))
    return _apply(text, _merged(text, spans), stop)


# -- a pod's redacted copy ------------------------------------------------------------------


@dataclass(slots=True)
class _Found:
    """Gathers the secret values met while redacting one pod, to mask wherever they reappear."""

    values: set[str] = field(default_factory=set)

    def add(self, value: str, named: bool) -> None:
        if len(value) >= (MIN_NAMED if named else MIN_OTHER) and value != MASK:
            self.values.add(value)
            decoded = unquote(value)
            if decoded != value and len(decoded) >= MIN_NAMED:
                self.values.add(decoded)
            # "Bearer abc": the token alone may show up too
            parts = value.split(None, 1)
            if len(parts) == 2 and len(parts[1]) >= MIN_NAMED:
                self.values.add(parts[1])


def argv_spans(argv: Sequence[str], policy: Policy = DEFAULT) -> list[list[Span]]:
    """Finds, per argument, the stretches the rules mask; reads them as one command line, so `-u
    user:pw` and `mysql ... -pX` are seen across arguments, and a `sh -c` script inside one."""
    joined = " ".join(argv)
    out: list[list[Span]] = [[] for _ in argv]
    starts = []
    at = 0
    for arg in argv:
        starts.append(at)
        at += len(arg) + 1
    for start, end in text_spans(joined, policy):
        # a quoted value may run on into the next argument: each gets its part
        for i, base in enumerate(starts):
            stop = base + len(argv[i])
            if start < stop and end > base:
                out[i].append((max(start, base) - base, min(end, stop) - base))
    return out


def _argv(argv: tuple[str, ...], policy: Policy, found: _Found) -> tuple[str, ...]:
    spans = argv_spans(argv, policy)
    if not any(spans):
        return argv
    for arg, arg_spans in zip(argv, spans, strict=True):
        for start, end in arg_spans:
            found.add(arg[start:end], True)
    return tuple(_apply(arg, s) for arg, s in zip(argv, spans, strict=True))


def _path(path: str, policy: Policy, found: _Found) -> str:
    spans = text_spans(path, policy)
    for start, end in spans:
        found.add(path[start:end], False)
    return _apply(path, spans)


def _allowed(value: str, policy: Policy, found: _Found) -> str:
    # a value an allow-list shows still goes through the rules: DB_URL=postgres://u:pw@db
    spans = text_spans(value, policy)
    for start, end in spans:
        found.add(value[start:end], True)
    return _apply(value, spans)


def _header(h: HTTPHeader, policy: Policy, found: _Found) -> HTTPHeader:
    if not h.value:
        return h
    if policy.header_shown(h.name):
        value = _allowed(h.value, policy, found)
        return h if value == h.value else HTTPHeader(h.name, value)
    found.add(h.value, is_secret_name(h.name))
    return HTTPHeader(h.name, MASK)


def _env(e: EnvVar, policy: Policy, found: _Found) -> EnvVar:
    if e.value is None or not e.value:
        return e
    if policy.env_shown(e.name):
        value = _allowed(e.value, policy, found)
        return e if value == e.value else replace(e, value=value)
    found.add(e.value, is_secret_name(e.name))
    return replace(e, value=MASK)


def _probe(p: Probe | None, policy: Policy, found: _Found) -> Probe | None:
    if p is None:
        return None
    if p.exec is not None:
        command = _argv(p.exec.command, policy, found)
        return p if command == p.exec.command else replace(p, exec=ExecAction(command))
    h = p.http_get
    if h is not None:
        path = _path(h.path, policy, found)
        headers = tuple(_header(x, policy, found) for x in h.http_headers)
        if path == h.path and headers == h.http_headers:
            return p
        return replace(p, http_get=replace(h, path=path, http_headers=headers))
    return p


def _container(c: Container, policy: Policy, found: _Found) -> Container:
    env = tuple(_env(e, policy, found) for e in c.env)
    argv = _argv((*c.command, *c.args), policy, found)
    probes = [
        _probe(p, policy, found) for p in (c.liveness_probe, c.readiness_probe, c.startup_probe)
    ]
    return replace(
        c,
        env=env,
        command=argv[: len(c.command)],
        args=argv[len(c.command) :],
        liveness_probe=probes[0],
        readiness_probe=probes[1],
        startup_probe=probes[2],
    )


def _literal_pass(c: Container, secrets: tuple[str, ...]) -> Container:
    """Masks a secret met in one place where it is written out in another (an env value
    repeated in an argument or a path)."""

    def lit(text: str) -> str:
        for s in secrets:
            if s in text:
                text = text.replace(s, MASK)
        return text

    def probe(p: Probe | None) -> Probe | None:
        if p is None:
            return None
        if p.exec is not None:
            return replace(p, exec=ExecAction(tuple(lit(a) for a in p.exec.command)))
        if p.http_get is not None:
            h = p.http_get
            headers = tuple(HTTPHeader(x.name, lit(x.value)) for x in h.http_headers)
            return replace(p, http_get=replace(h, path=lit(h.path), http_headers=headers))
        return p

    return replace(
        c,
        command=tuple(lit(a) for a in c.command),
        args=tuple(lit(a) for a in c.args),
        liveness_probe=probe(c.liveness_probe),
        readiness_probe=probe(c.readiness_probe),
        startup_probe=probe(c.startup_probe),
    )


def redact_pod(pod: Pod, policy: Policy = DEFAULT) -> tuple[Pod, tuple[str, ...]]:
    """Returns the pod as it may be shown and kept, and its secret values to mask wherever they
    reappear (longest first); the pod itself where nothing in it is secret."""
    found = _Found()
    containers = tuple(_container(c, policy, found) for c in pod.containers)
    inits = tuple(_container(c, policy, found) for c in pod.init_containers)
    secrets = tuple(sorted(found.values, key=lambda s: (-len(s), s)))
    if secrets:
        containers = tuple(_literal_pass(c, secrets) for c in containers)
        inits = tuple(_literal_pass(c, secrets) for c in inits)
    if containers == pod.containers and inits == pod.init_containers:
        return pod, secrets
    return replace(pod, containers=containers, init_containers=inits), secrets


# -- the redactor the engine runs -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shown:
    """Pairs a pod as received (`real`, what the prober uses) with its redacted copy and its
    secrets."""

    real: Pod
    pod: Pod
    secrets: tuple[str, ...]
    sid: int  # the secrets' number in the redactor's cache keys


_MISSING: Any = object()
# the redactor's cache of masked texts holds at most this many characters, then starts anew
CACHE_CHARS = 4_000_000
# pods (and distinct sets of secrets) the redactor remembers before it starts anew
MAX_PODS = 100_000


class Redactor:
    """Makes, once per pod spec, the redacted copy every sink receives, and masks the texts
    that come with that pod (attempts, kubelet events, statuses, output tails).

    Masked texts are cached by pod secrets and text: a steady probe says the same each time.
    """

    def __init__(self, policy: Policy = DEFAULT, body_limit: int | None = None) -> None:
        self.policy = policy
        # what of an HTTP body any sink keeps: the rest is neither masked nor handed on
        self.body_limit = body_limit
        self._shown: dict[str, Shown] = {}
        # each distinct set of secrets gets a number for the cache's keys, never reused: a
        # number standing for another pod's secrets would hand back a text not masked for these
        self._sids: dict[tuple[str, ...], int] = {}
        self._next_sid = 0
        self._cache: dict[tuple[int, int | None, str], str | None] = {}
        self._cache_chars = 0

    def pod(self, pod: Pod) -> Shown:
        """Gives the redacted copy of `pod`, made again only when its spec changed."""
        s = self._shown.get(pod.uid)
        if s is not None and s.real is pod:
            return s
        if s is not None and (
            s.real.containers == pod.containers and s.real.init_containers == pod.init_containers
        ):
            shown = s.pod
            if s.real is not s.pod:
                shown = replace(
                    pod, containers=s.pod.containers, init_containers=s.pod.init_containers
                )
            else:
                shown = pod
            s = Shown(pod, shown, s.secrets, s.sid)
        else:
            shown, secrets = redact_pod(pod, self.policy)
            sid = self._sids.get(secrets)
            if sid is None:
                if len(self._sids) > MAX_PODS:
                    self._sids.clear()
                sid = self._sids[secrets] = self._next_sid
                self._next_sid += 1
            s = Shown(pod, shown, secrets, sid)
        if len(self._shown) > MAX_PODS:
            # a deleted pod's late events (Killing, after the delete) bring it back: bounded
            self._shown.clear()
        self._shown[pod.uid] = s
        return s

    def forget(self, pod_uid: str) -> None:
        self._shown.pop(pod_uid, None)

    def text(self, shown: Shown | None, text: str, limit: int | None = None) -> str:
        """Masks `text` with the pod's secrets and the rules (returns the same text when clean),
        keeping its first `limit` characters only where given."""
        if not text:
            return text
        key = (shown.sid if shown is not None else -1, limit, text)
        out = self._cache.get(key, _MISSING)
        if out is _MISSING:
            masked = mask(text, shown.secrets if shown is not None else (), self.policy, limit)
            out = None if masked == text else masked  # None: clean, hand back `text` itself
            if self._cache_chars > CACHE_CHARS:
                self._cache.clear()
                self._cache_chars = 0
            self._cache[key] = out
            self._cache_chars += len(text)
        return text if out is None else out

    def optional(self, shown: Shown | None, text: str | None) -> str | None:
        return None if text is None else self.text(shown, text)

    def fields(self, shown: Shown | None, value: Any) -> Any:
        """Masks every string in a JSON-like value (an event's fields)."""
        if isinstance(value, str):
            return self.text(shown, value)
        if isinstance(value, dict):
            return {k: self.fields(shown, v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.fields(shown, v) for v in value]
        return value

    def lines(self, shown: Shown | None, lines: list[str]) -> list[str]:
        return [self.text(shown, line) for line in lines]

    def attempt(self, shown: Shown | None, a: Attempt) -> Attempt:
        target, output = self.text(shown, a.target), self.text(shown, a.output)
        error = self.optional(shown, a.error)
        body = None if a.body is None else self.text(shown, a.body, self.body_limit)
        if target is a.target and output is a.output and error is a.error and body is a.body:
            return a
        return replace(a, target=target, output=output, error=error, body=body)

    def record(self, shown: Shown | None, record: ProbeRecord) -> ProbeRecord:
        """Masks every text of a doProbe record's attempts, error and event."""
        o = record.outcome
        if o is None:
            return record
        masked = self.outcome(shown, o)
        return record if masked is o else replace(record, outcome=masked)

    def outcome(self, shown: Shown | None, o: ProbeOutcome) -> ProbeOutcome:
        """Masks the texts of a prober outcome's attempts, error and event."""
        attempts = tuple(self.attempt(shown, a) for a in o.attempts)
        error = self.optional(shown, o.error)
        event = o.event
        if event is not None:
            message = self.text(shown, event.message)
            if message is not event.message:
                event = replace(event, message=message)
        same = all(a is b for a, b in zip(attempts, o.attempts, strict=True))
        if same and error is o.error and event is o.event:
            return o
        return replace(o, attempts=attempts, error=error, event=event)

    def status(self, shown: Shown | None, status: PodStatus) -> PodStatus:
        """Masks the waiting messages and reasons of a pod status's containers."""
        regular = self._statuses(shown, status.container_statuses)
        init = self._statuses(shown, status.init_container_statuses)
        if regular is status.container_statuses and init is status.init_container_statuses:
            return status
        return replace(status, container_statuses=regular, init_container_statuses=init)

    def _statuses(
        self, shown: Shown | None, statuses: tuple[ContainerStatus, ...]
    ) -> tuple[ContainerStatus, ...]:
        out = tuple(self._container_status(shown, c) for c in statuses)
        return statuses if all(a is b for a, b in zip(out, statuses, strict=True)) else out

    def _container_status(self, shown: Shown | None, c: ContainerStatus) -> ContainerStatus:
        state, last = self._state(shown, c.state), c.last_state
        if last is not None:
            last = self._state(shown, last)
        if state is c.state and last is c.last_state:
            return c
        return replace(c, state=state, last_state=last)

    def _state(self, shown: Shown | None, s: Any) -> Any:
        if isinstance(s, Waiting):
            reason, message = self.text(shown, s.reason), self.text(shown, s.message)
            return s if reason is s.reason and message is s.message else Waiting(reason, message)
        if isinstance(s, Terminated):
            reason = self.text(shown, s.reason)
            return s if reason is s.reason else replace(s, reason=reason)
        return s


__all__ = [
    "BUILTIN_ALLOW_HEADERS",
    "DEFAULT",
    "MASK",
    "MIN_NAMED",
    "MIN_OTHER",
    "TOOL_FLAGS",
    "Policy",
    "Redactor",
    "Shown",
    "argv_spans",
    "is_secret_name",
    "mask",
    "redact_pod",
    "text_spans",
]
