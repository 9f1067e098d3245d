"""Records every flag call posthog-python's own tests make, with what the SDK decided.

Loaded as a pytest plugin (`-p record_python`) inside a checkout of posthog-python; writes one JSON
line per outermost public flag call to $SDK_CASES_OUT. extract.ts turns the lines into the fixture.
A recorded value is the SDK's answer in a passing test; `asserted` says whether the test checks it.
"""

import ast
import datetime
import json
import os
import sys
import threading

import pydantic

# Debian ships pydantic 1, whose BaseModel is what posthog's test utils import as pydantic.v1.
sys.modules.setdefault("pydantic.v1", pydantic)

from parameterized import param  # noqa: E402

# Debian's parameterized 0.8 rejects the bare (non-tuple) parameters newer releases accept.
_from_decorator = param.from_decorator.__func__
param.from_decorator = classmethod(
    lambda cls, args: _from_decorator(cls, args if isinstance(args, (tuple, dict, param)) else (args,))
)

import pytest  # noqa: E402
import posthog.client as client_module  # noqa: E402
from posthog.client import Client  # noqa: E402

OUT = open(os.environ["SDK_CASES_OUT"], "a", encoding="utf-8")
STATE = threading.local()
CURRENT = {"test": None, "file": None, "outcome": {}}
PUBLIC = [
    "feature_enabled",
    "get_feature_flag",
    "get_feature_flag_payload",
    "get_feature_flag_result",
    "get_all_flags",
    "get_all_flags_and_payloads",
    "evaluate_flags",
]
INCONCLUSIVE = "__inconclusive__"
_ast_cache = {}


def _plain(value):
    """JSON round trip, or None when the value is not plain JSON (datetime, Decimal, ...)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return None


def _call_site():
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if os.path.basename(name).startswith("test_") and "/posthog/test/" in name:
            return name, frame.f_lineno
        frame = frame.f_back
    return None, None


def _statements(path):
    if path not in _ast_cache:
        with open(path, encoding="utf-8") as source:
            _ast_cache[path] = ast.parse(source.read())
    return _ast_cache[path]


def _is_assert(stmt):
    if isinstance(stmt, ast.Assert):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return isinstance(func, ast.Attribute) and func.attr.startswith("assert")
    return False


def _assertion(path, line):
    """Whether the statement holding the call asserts on it, directly or through a variable it assigns."""
    tree = _statements(path)
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not (func.lineno <= line <= (func.end_lineno or func.lineno)):
            continue
        body = [s for s in ast.walk(func) if isinstance(s, ast.stmt) and s is not func]
        holders = [s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)]
        if not holders:
            continue
        stmt = min(holders, key=lambda s: (s.end_lineno or s.lineno) - s.lineno)
        if _is_assert(stmt):
            return "direct", []
        targets = []
        if isinstance(stmt, ast.Assign):
            targets = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            targets = [stmt.target.id]
        literals = set()
        found = False
        for later in body:
            if later.lineno <= (stmt.end_lineno or stmt.lineno) or not _is_assert(later):
                continue
            names = {n.id for n in ast.walk(later) if isinstance(n, ast.Name)}
            if names & set(targets):
                found = True
                literals |= {
                    c.value for c in ast.walk(later) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
        if found:
            return "via-variable", sorted(literals)
        return None, []
    return None, []


def _flags_mock_calls():
    flags = getattr(client_module, "flags", None)
    return getattr(flags, "call_count", 0)


def _wrap_public(name):
    original = getattr(Client, name)

    def wrapper(self, *args, **kwargs):
        depth = getattr(STATE, "depth", 0)
        if depth > 0:
            return original(self, *args, **kwargs)
        STATE.depth = 1
        STATE.local = {}
        STATE.remote = 0
        before = _flags_mock_calls()
        error = None
        try:
            result = original(self, *args, **kwargs)
        except BaseException as exc:  # recorded, then re-raised unchanged
            error = exc
            result = None
        finally:
            STATE.depth = 0
        remote = STATE.remote + max(0, _flags_mock_calls() - before)
        try:
            _record(self, name, args, kwargs, result, error, remote, dict(STATE.local))
        except Exception as exc:  # a recording problem never changes the test's outcome
            OUT.write(json.dumps({"test": CURRENT["test"], "recordError": repr(exc)}) + "\n")
        if error is not None:
            raise error
        return result

    setattr(Client, name, wrapper)


def _result_value(name, result):
    if name == "evaluate_flags":
        flags = getattr(result, "_flags", None) or {}
        out = {}
        for key, entry in flags.items():
            out[key] = {
                "enabled": getattr(entry, "enabled", None),
                "variant": getattr(entry, "variant", None),
                "payload": _plain(getattr(entry, "payload", None)),
            }
        return out
    if name == "get_feature_flag_result":
        if result is None:
            return None
        return {
            "enabled": result.enabled,
            "variant": result.variant,
            "payload": _plain(result.payload),
        }
    return _plain(result) if result is not None else None


def _record(client, name, args, kwargs, result, error, remote, local):
    path, line = _call_site()
    if path is None:
        return
    asserted, literals = _assertion(path, line)
    positional = list(args)
    call = {"method": name}
    if name in ("evaluate_flags", "get_all_flags", "get_all_flags_and_payloads"):
        call["distinct_id"] = positional[0] if positional else kwargs.get("distinct_id")
    else:
        call["key"] = positional[0] if positional else kwargs.get("key")
        call["distinct_id"] = positional[1] if len(positional) > 1 else kwargs.get("distinct_id")
    for option in (
        "groups",
        "person_properties",
        "group_properties",
        "only_evaluate_locally",
        "match_value",
        "device_id",
        "flag_keys",
        "flag_keys_to_evaluate",
    ):
        if option in kwargs:
            call[option] = kwargs[option]
    record = {
        "file": os.path.relpath(path, os.getcwd()),
        "test": CURRENT["test"],
        "line": line,
        "asserted": asserted,
        "assertLiterals": literals,
        "call": _plain(call),
        "callPlain": _plain(call) is not None,
        "flags": _plain(client.feature_flags),
        "cohorts": _plain(getattr(client, "cohorts", None)),
        "groupTypeMapping": _plain(getattr(client, "group_type_mapping", None)),
        "hasPersonalKey": bool(getattr(client, "personal_api_key", None)),
        "remoteCalls": remote,
        "local": local,
        "error": repr(error) if error is not None else None,
        "result": _result_value(name, result),
        "now": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }
    OUT.write(json.dumps(record) + "\n")
    OUT.flush()


def _wrap_local():
    original = Client._compute_flag_locally

    def wrapper(self, feature_flag, *args, **kwargs):
        key = feature_flag.get("key") if isinstance(feature_flag, dict) else None
        try:
            value = original(self, feature_flag, *args, **kwargs)
        except Exception:
            if hasattr(STATE, "local"):
                STATE.local[key] = INCONCLUSIVE
            raise
        if hasattr(STATE, "local"):
            STATE.local[key] = _plain(value)
        return value

    Client._compute_flag_locally = wrapper


def _wrap_remote():
    original = Client.get_flags_decision

    def wrapper(self, *args, **kwargs):
        STATE.remote = getattr(STATE, "remote", 0) + 1
        return original(self, *args, **kwargs)

    Client.get_flags_decision = wrapper


for _name in PUBLIC:
    _wrap_public(_name)
_wrap_local()
_wrap_remote()


@pytest.fixture(autouse=True)
def _current_test(request):
    CURRENT["test"] = request.node.nodeid
    yield


def pytest_runtest_logreport(report):
    if report.when == "call":
        OUT.write(json.dumps({"test": report.nodeid, "outcome": report.outcome}) + "\n")
        OUT.flush()
