# fault's plugin for a Locust run, loaded with the locustfile. On each worker it keeps every request Locust
# reports (name, start time, response time, status, error, length) and sends them to the master with the
# stats of the same report, so that they count exactly what Locust's own statistics count. On the master it
# writes them to the file fault reads ($FAULT_LOCUST_RECORDS, one JSON array per line, the worker's id first),
# tells fault on stdout when workers connect and when the test starts, and holds the start until fault has
# readied its proxies and sent the host to load ("go URL" on stdin); it ends the test after
# $FAULT_LOCUST_DURATION seconds from that start.
import json as _fault_json
import os as _fault_os
import sys as _fault_sys
import time as _fault_time

import gevent as _fault_gevent
from locust import events as _fault_events
from locust.runners import MasterRunner as _FaultMaster

_fault_pending = []
_fault_master = {"out": None, "requests": 0, "failures": 0}


def _fault_say(*words):
    print("FAULT-LOCUST", *words, flush=True)


@_fault_events.request.add_listener
def _fault_on_request(
    request_type, name, response_time, response_length, response=None, exception=None, start_time=None, **_
):
    status = getattr(response, "status_code", 0) or 0
    error = None if exception is None else f"{type(exception).__name__}: {exception}"[:300]
    if start_time is None:
        start_time = _fault_time.time() - (response_time or 0) / 1000.0
    _fault_pending.append([name, start_time, response_time or 0, status, error, response_length or 0])


@_fault_events.report_to_master.add_listener
def _fault_on_report(client_id, data, **_):
    global _fault_pending
    data["fault_requests"] = _fault_pending
    _fault_pending = []


@_fault_events.init.add_listener
def _fault_on_init(environment, **_):
    path = _fault_os.environ.get("FAULT_LOCUST_RECORDS")
    if isinstance(environment.runner, _FaultMaster) and path:
        _fault_master["out"] = open(path, "w", encoding="utf-8")


@_fault_events.worker_connect.add_listener
def _fault_on_worker_connect(client_id, **_):
    _fault_say("worker", client_id)


@_fault_events.worker_report.add_listener
def _fault_on_worker_report(client_id, data, **_):
    out = _fault_master["out"]
    rows = data.get("fault_requests") or []
    if out is None or not rows:
        return
    for row in rows:
        out.write(_fault_json.dumps([client_id] + row) + "\n")
        _fault_master["requests"] += 1
        _fault_master["failures"] += row[4] is not None
    out.flush()
    _fault_say("progress", _fault_master["requests"], _fault_master["failures"])


@_fault_events.test_start.add_listener
def _fault_on_test_start(environment, **_):
    if not isinstance(environment.runner, _FaultMaster) or _fault_master["out"] is None:
        return
    _fault_say("ready")
    line = _fault_sys.stdin.readline().split()
    if len(line) != 2 or line[0] != "go":
        _fault_say("abort")
        _fault_os._exit(3)
    environment.host = line[1]
    for user_class in environment.runner.user_classes:
        user_class.host = line[1]
    _fault_say("start", repr(_fault_time.time()))
    duration = float(_fault_os.environ.get("FAULT_LOCUST_DURATION", "0"))
    if duration > 0:
        _fault_gevent.spawn_later(duration, environment.runner.quit)


@_fault_events.quit.add_listener
def _fault_on_quit(**_):
    out = _fault_master["out"]
    if out is not None:
        out.close()
        _fault_master["out"] = None
        _fault_say("end", _fault_master["requests"])
