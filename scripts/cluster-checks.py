#!/usr/bin/env python3
"""Checks scripts/cluster runs through the load balancer in front of `mcp serve --redis`
replicas. Standard library only.

  cluster-checks.py URL --replica PORT=PID ... --redis-cli "redis-cli -p P -n DB" CHECK...

CHECK is one of:
  session   a 2025-11-25 session whose requests land on every replica, all answered
  resume    an SSE stream cut by SIGKILL of its replica and resumed with Last-Event-ID
            through the balancer: every stored event after the last one read, once, in order
  outage    Redis paused (SIGSTOP) for 5 s: 503 within the store's timeout, then served
            again within 2 s of Redis coming back (needs --redis-pid)
  listen    a subscriptions/listen stream on one replica hears every resource update made
            through any replica, once
  elicit    an elicitation on a 2025-11-25 session answered through other replicas
  tasks     tasks of the extension (2026-07-28) started through one replica, polled, answered,
            cancelled and finished through the others, and a 2025-11-25 session's task listed
            and its result waited for through the others (needs the conformance fixture's tools)
  taskkill  SIGKILL of the replica running a task: the task still ends (failed, with its
            reason) and stays readable through the balancer; a finished task's result too
"""

import argparse
import http.client
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.parse

VERSION = "2025-11-25"


def fail(message):
    print(f"cluster: FAIL {message}", file=sys.stderr)
    sys.exit(1)


def ok(message):
    print(f"cluster: ok   {message}", flush=True)


class Target:
    def __init__(self, url):
        parsed = urllib.parse.urlparse(url)
        self.host = parsed.hostname
        self.port = parsed.port
        self.path = parsed.path or "/mcp"

    def connection(self, timeout=15):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def send(self, method, body=None, headers=None, timeout=15):
        """One exchange, read to the end: (status, headers, body text)."""
        conn = self.connection(timeout)
        all_headers = {"Accept": "application/json, text/event-stream"}
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        data = json.dumps(body) if body is not None else None
        conn.request(method, self.path, body=data, headers=all_headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        conn.close()
        return response.status, response, text


def session_headers(sid):
    return {"Mcp-Session-Id": sid, "MCP-Protocol-Version": VERSION}


def messages(text):
    """The JSON-RPC messages of a JSON or SSE body."""
    text = text.strip()
    if text.startswith("{") or text.startswith("["):
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    found = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            found.append(json.loads(line[5:].strip()))
    return found


def initialize_request(capabilities=None):
    """The `initialize` request of a 2025-11-25 session with these client capabilities."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "cluster-checks", "version": "1"},
        },
    }


def initialize(target, capabilities=None):
    """A 2025-11-25 session with these client capabilities, initialized: its id."""
    status, response, text = target.send("POST", initialize_request(capabilities))
    if status != 200:
        fail(f"initialize: HTTP {status}: {text}")
    sid = response.getheader("Mcp-Session-Id")
    if not sid:
        fail("initialize: no Mcp-Session-Id")
    status, _, text = target.send(
        "POST",
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        session_headers(sid),
    )
    if status != 202:
        fail(f"notifications/initialized: HTTP {status}: {text}")
    return sid


def check_session(target, replicas):
    sid = initialize(target)
    seen = set()
    calls = [
        ("tools/list", {}),
        ("ping", {}),
        ("tools/call", {"name": "echo", "arguments": {"text": "hello"}}),
        ("resources/read", {"uri": "example://readme"}),
        ("prompts/list", {}),
    ]
    for i in range(4 * len(replicas)):
        method, params = calls[i % len(calls)]
        status, response, text = target.send(
            "POST",
            {"jsonrpc": "2.0", "id": 100 + i, "method": method, "params": params},
            session_headers(sid),
        )
        if status != 200:
            fail(f"session: {method} #{i}: HTTP {status}: {text}")
        answer = messages(text)
        if not answer or "result" not in answer[-1]:
            fail(f"session: {method} #{i}: no result: {text}")
        if method == "tools/call" and "hello" not in text:
            fail(f"session: echo answered {text}")
        seen.add(response.getheader("X-Replica"))
    expected = {f"127.0.0.1:{port}" for port in replicas}
    if seen != expected:
        fail(f"session: requests reached {sorted(seen)}, not all of {sorted(expected)}")
    status, _, text = target.send("DELETE", None, session_headers(sid))
    if status != 200:
        fail(f"session: DELETE: HTTP {status}: {text}")
    # Replicas that hold the session notice the deletion on their next store touch (at most
    # one per second per session, `store_touch_interval`).
    time.sleep(1.2)
    status, _, _ = target.send(
        "POST", {"jsonrpc": "2.0", "id": 999, "method": "ping"}, session_headers(sid)
    )
    if status != 404:
        fail(f"session: a deleted session answered HTTP {status}")
    ok(
        f"a 2025-11-25 session: {4 * len(replicas)} requests served by all {len(replicas)} "
        "replicas, then deleted (404 after)"
    )


def sse_events(lines):
    """The SSE events that carry data, from an iterable of lines: (id, data) each."""
    event_id, data = None, []
    for line in lines:
        if line == "":
            if data:
                yield event_id, "\n".join(data)
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            value = line[5:].strip()
            if value:
                data.append(value)


def response_lines(response):
    """The lines of a streaming response, as they arrive, until it ends."""
    while True:
        line = response.readline()
        if not line:
            return
        yield line.decode("utf-8", "replace").rstrip("\r\n")


def read_events(response, count):
    """Reads `count` SSE events that carry data (fewer if the stream ends); returns [(id, data)]."""
    events = []
    if count <= 0:
        return events
    for event in sse_events(response_lines(response)):
        events.append(event)
        if len(events) >= count:
            break
    return events


def parse_sse(text):
    return list(sse_events(text.splitlines() + [""]))


def check_resume(target, replicas, redis_cli):
    sid = initialize(target)
    conn = target.connection(timeout=30)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "countdown",
            "arguments": {"steps": 40, "delay_ms": 50},
            "_meta": {"progressToken": "resume"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    headers.update(session_headers(sid))
    conn.request("POST", target.path, body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    if response.status != 200 or "event-stream" not in (response.getheader("Content-Type") or ""):
        fail(f"resume: the call was not answered with a stream: HTTP {response.status}")
    replica = response.getheader("X-Replica", "")
    port = replica.rsplit(":", 1)[-1]
    if port not in replicas:
        fail(f"resume: the stream came from {replica!r}, not a known replica")
    first = read_events(response, 3)
    if len(first) < 3 or any(i is None for i, _ in first):
        fail(f"resume: the first events have no ids: {first}")
    # The replica goes on storing events this client does not read; then it dies.
    time.sleep(0.6)
    os.kill(replicas[port], signal.SIGKILL)
    conn.close()
    last_id = first[-1][0]
    stream, seq = last_id.split("-", 1)
    stored = subprocess.run(
        shlex.split(redis_cli) + ["XRANGE", f"mcp:events:{sid}:{stream}", "-", "+"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    stored_seqs = [int(stored[i + 1]) for i, line in enumerate(stored) if line == "seq"]
    if not stored_seqs:
        fail("resume: no events of the stream in Redis")
    status, _, text = target.send(
        "GET", None, dict(session_headers(sid), **{"Last-Event-ID": last_id}), timeout=30
    )
    if status != 200:
        fail(f"resume: GET with Last-Event-ID {last_id}: HTTP {status}: {text}")
    replayed = parse_sse(text)
    ids = [i for i, _ in replayed]
    seqs = [int(i.split("-", 1)[1]) for i in ids if i and i.split("-", 1)[0] == stream]
    if len(seqs) != len(replayed):
        fail(f"resume: events of another stream or without ids: {ids}")
    expected = [s for s in sorted(set(stored_seqs)) if s > int(seq)]
    if seqs != expected:
        fail(f"resume: replayed {seqs}, stored after {seq}: {expected}")
    if seqs != list(range(int(seq) + 1, int(seq) + 1 + len(seqs))):
        fail(f"resume: a gap or a repeat in {seqs}")
    read_ids = {i for i, _ in first}
    if read_ids & set(ids):
        fail(f"resume: events repeated: {sorted(read_ids & set(ids))}")
    if len(seqs) < 3:
        fail(f"resume: only {len(seqs)} unread events were stored before the kill; expected more")
    ok(
        f"SSE stream of replica :{port} cut by SIGKILL after {len(first)} events; "
        f"{len(seqs)} more replayed through the balancer after {last_id}, none lost or repeated"
    )


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "cluster-checks", "version": "1"},
}


def open_stream(target, body, headers):
    conn = target.connection(timeout=15)
    all_headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    all_headers.update(headers)
    conn.request("POST", target.path, body=json.dumps(body), headers=all_headers)
    response = conn.getresponse()
    return conn, response


def next_message(response):
    events = read_events(response, 1)
    if not events:
        return None
    return json.loads(events[0][1])


def check_listen(target, replicas):
    conn, response = open_stream(
        target,
        {
            "jsonrpc": "2.0",
            "id": "listen",
            "method": "subscriptions/listen",
            "params": {
                "_meta": STATELESS_META,
                "notifications": {"resourceSubscriptions": ["example://readme"]},
            },
        },
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
    )
    if response.status != 200:
        fail(f"listen: HTTP {response.status}")
    listener = response.getheader("X-Replica")
    ack = next_message(response)
    if not ack or ack.get("method") != "notifications/subscriptions/acknowledged":
        fail(f"listen: no acknowledgement: {ack}")
    touches = 2 * len(replicas)
    elsewhere = 0
    for i in range(touches):
        status, answer, text = target.send(
            "POST",
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "touch", "arguments": {}, "_meta": STATELESS_META},
            },
            {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "touch"},
        )
        if status != 200:
            fail(f"listen: touch #{i}: HTTP {status}: {text}")
        if answer.getheader("X-Replica") != listener:
            elsewhere += 1
    if elsewhere == 0:
        fail("listen: every touch reached the listening replica; nothing crossed replicas")
    for i in range(touches):
        message = next_message(response)
        if not message or message.get("method") != "notifications/resources/updated":
            fail(f"listen: update {i + 1} of {touches} missing: {message}")
    conn.sock.settimeout(0.5)
    try:
        extra = next_message(response)
    except OSError:
        extra = None
    if extra is not None:
        fail(f"listen: more updates than changes: {extra}")
    conn.close()
    ok(
        f"a subscriptions/listen stream on {listener} heard all {touches} updates, "
        f"{elsewhere} of them made through other replicas, once each"
    )


def check_elicit(target, replicas):
    sid = initialize(target, {"elicitation": {}})
    crossed = 0
    for round_ in range(len(replicas)):
        conn, stream = open_stream(
            target,
            {"jsonrpc": "2.0", "id": 10 + round_, "method": "tools/call",
             "params": {"name": "greet", "arguments": {}}},
            session_headers(sid),
        )
        asker = stream.getheader("X-Replica")
        asked = next_message(stream)
        if not asked or asked.get("method") != "elicitation/create":
            fail(f"elicit: no elicitation request: {asked}")
        status, answer, text = target.send(
            "POST",
            {"jsonrpc": "2.0", "id": asked["id"],
             "result": {"action": "accept", "content": {"name": f"Ada {round_}"}}},
            session_headers(sid),
        )
        if status != 202:
            fail(f"elicit: the answer got HTTP {status}: {text}")
        if answer.getheader("X-Replica") != asker:
            crossed += 1
        result = next_message(stream)
        if not result or f"Hello, Ada {round_}!" not in json.dumps(result):
            fail(f"elicit: no greeting: {result}")
        conn.close()
    if crossed == 0:
        fail("elicit: every answer reached the asking replica; nothing crossed replicas")
    ok(f"{len(replicas)} elicitations answered, {crossed} of them through another replica")


def check_outage(target, redis_pid, timeout):
    sid = initialize(target)
    os.kill(redis_pid, signal.SIGSTOP)
    try:
        stopped_at = time.monotonic()
        statuses = []
        worst = 0.0
        while time.monotonic() - stopped_at < 5:
            started = time.monotonic()
            status, _, _ = target.send(
                "POST",
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                session_headers(sid),
                timeout=30,
            )
            worst = max(worst, time.monotonic() - started)
            statuses.append(status)
            status, _, _ = target.send("POST", initialize_request(), timeout=30)
            statuses.append(status)
    finally:
        os.kill(redis_pid, signal.SIGCONT)
    back_at = time.monotonic()
    if 503 not in statuses:
        fail(f"outage: no 503 while Redis was stopped: {statuses}")
    if any(s not in (200, 503) for s in statuses):
        fail(f"outage: statuses other than 200/503: {sorted(set(statuses))}")
    if worst > timeout + 1.0:
        fail(f"outage: a request took {worst:.1f} s (store timeout {timeout} s)")
    while True:
        status, _, _ = target.send(
            "POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, session_headers(sid)
        )
        if status == 200:
            break
        if time.monotonic() - back_at > 2:
            fail(f"outage: still HTTP {status} 2 s after Redis came back")
        time.sleep(0.05)
    recovered = time.monotonic() - back_at
    ok(
        f"Redis stopped 5 s: {statuses.count(503)} of {len(statuses)} requests got 503, "
        f"the slowest in {worst:.2f} s; served again {recovered:.2f} s after Redis came back"
    )


TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {"form": {}},
        "extensions": {TASKS_EXTENSION: {}},
    },
    "io.modelcontextprotocol/clientInfo": {"name": "cluster-checks", "version": "1"},
}


def task_rpc(target, method, name, params):
    """A stateless request declaring the tasks extension: (result or error, replica)."""
    params = dict(params, _meta=TASK_META)
    status, response, text = target.send(
        "POST",
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name},
    )
    if status != 200:
        fail(f"tasks: {method} {name}: HTTP {status}: {text}")
    answer = messages(text)
    if not answer:
        fail(f"tasks: {method} {name}: no answer: {text}")
    return answer[-1], response.getheader("X-Replica")


def start_task(target, tool, arguments):
    answer, replica = task_rpc(target, "tools/call", tool, {"name": tool, "arguments": arguments})
    result = answer.get("result") or {}
    if result.get("resultType") != "task":
        fail(f"tasks: {tool} did not become a task: {answer}")
    return result["taskId"], replica


def poll_task(target, task_id, wanted, within, seen=None):
    """Polls tasks/get through the balancer until the task is `wanted`; the last task read."""
    deadline = time.monotonic() + within
    while True:
        answer, replica = task_rpc(target, "tasks/get", task_id, {"taskId": task_id})
        task = answer.get("result")
        if task is None:
            fail(f"tasks: tasks/get {task_id}: {answer}")
        if seen is not None:
            seen.add(replica)
        if task.get("status") == wanted:
            return task
        if task.get("status") in ("completed", "failed", "cancelled"):
            fail(f"tasks: {task_id} ended {task.get('status')}, not {wanted}: {task}")
        if time.monotonic() > deadline:
            fail(f"tasks: {task_id} not {wanted} within {within} s: {task}")
        time.sleep(0.1)


def check_tasks(target, replicas):
    # Polled to its end through every replica.
    task_id, creator = start_task(target, "slow_compute", {"seconds": 2, "label": "cluster"})
    pollers = set()
    done = poll_task(target, task_id, "completed", 15, pollers)
    text = json.dumps(done.get("result"))
    if "Computed cluster in 2 second(s)" not in text:
        fail(f"tasks: the result read through the balancer is {text}")
    if pollers - {creator} == set():
        fail(f"tasks: every poll reached the creating replica {creator}")
    # Input asked on one replica, answered through whichever the balancer picks.
    task_id, asker = start_task(target, "confirm_delete", {"filename": "cluster.txt"})
    waiting = poll_task(target, task_id, "input_required", 15)
    keys = list((waiting.get("inputRequests") or {}).keys())
    if not keys:
        fail(f"tasks: input_required without input requests: {waiting}")
    answer, answerer = task_rpc(
        target,
        "tasks/update",
        task_id,
        {"taskId": task_id,
         "inputResponses": {keys[0]: {"action": "accept", "content": {"confirm": True}}}},
    )
    if "result" not in answer:
        fail(f"tasks: tasks/update: {answer}")
    done = poll_task(target, task_id, "completed", 15)
    if "Deleted cluster.txt" not in json.dumps(done.get("result")):
        fail(f"tasks: the answered task ended with {done}")
    # Cancelled through the balancer: every replica reads it cancelled.
    task_id, runner = start_task(target, "slow_compute", {"seconds": 600, "label": "cancel"})
    answer, canceller = task_rpc(target, "tasks/cancel", task_id, {"taskId": task_id})
    if "result" not in answer:
        fail(f"tasks: tasks/cancel: {answer}")
    readers = set()
    for _ in range(2 * len(replicas)):
        answer, replica = task_rpc(target, "tasks/get", task_id, {"taskId": task_id})
        readers.add(replica)
        status = (answer.get("result") or {}).get("status")
        if status != "cancelled":
            fail(f"tasks: after tasks/cancel through {canceller}, {replica} reads {status}")
    crossed = sum(1 for a, b in [(asker, answerer), (runner, canceller)] if a != b)
    ok(
        f"tasks: one created on {creator} polled to completion through {len(pollers)} replicas; "
        f"input asked on {asker} answered through {answerer}; one running on {runner} cancelled "
        f"through {canceller} and read cancelled by {len(readers)} replicas "
        f"({crossed} of 2 answers crossed replicas)"
    )
    check_session_tasks(target)


def session_call(target, sid, method, params):
    status, response, text = target.send(
        "POST",
        {"jsonrpc": "2.0", "id": 2, "method": method, "params": params},
        session_headers(sid),
        timeout=30,
    )
    if status != 200:
        fail(f"tasks (session): {method}: HTTP {status}: {text}")
    answers = [m for m in messages(text) if "result" in m or "error" in m]
    if not answers:
        fail(f"tasks (session): {method}: no answer: {text}")
    return answers[-1], response.getheader("X-Replica")


def check_session_tasks(target):
    sid = initialize(target)
    created, creator = session_call(
        target, sid, "tools/call",
        {"name": "slow_compute", "arguments": {"seconds": 1, "label": "session"},
         "task": {"ttl": 60000}},
    )
    task_id = ((created.get("result") or {}).get("task") or {}).get("taskId")
    if not task_id:
        fail(f"tasks (session): no task created: {created}")
    listed, lister = session_call(target, sid, "tasks/list", {})
    ids = [t.get("taskId") for t in (listed.get("result") or {}).get("tasks", [])]
    if ids != [task_id]:
        fail(f"tasks (session): tasks/list through {lister} answered {ids}, not [{task_id}]")
    result, waiter = session_call(target, sid, "tasks/result", {"taskId": task_id})
    if "Computed session in 1 second(s)" not in json.dumps(result.get("result")):
        fail(f"tasks (session): tasks/result through {waiter} answered {result}")
    got, getter = session_call(target, sid, "tasks/get", {"taskId": task_id})
    if (got.get("result") or {}).get("status") != "completed":
        fail(f"tasks (session): tasks/get through {getter} answered {got}")
    replicas = {creator, lister, waiter, getter}
    if len(replicas) < 2:
        fail(f"tasks (session): every request reached {creator}")
    ok(
        f"tasks (session): a 2025-11-25 task created on {creator}, listed through {lister}, "
        f"its result waited for through {waiter} and read through {getter}"
    )


def check_taskkill(target, replicas, lease):
    finished, _ = start_task(target, "slow_compute", {"seconds": 1, "label": "kept"})
    poll_task(target, finished, "completed", 15)
    task_id, runner = start_task(target, "slow_compute", {"seconds": 600, "label": "orphan"})
    port = (runner or "").rsplit(":", 1)[-1]
    if port not in replicas:
        fail(f"taskkill: the task was created by {runner!r}, not a known replica")
    poll_task(target, task_id, "working", 5)
    os.kill(replicas[port], signal.SIGKILL)
    killed = time.monotonic()
    task = poll_task(target, task_id, "failed", lease * 3 + 5)
    took = time.monotonic() - killed
    reason = (task.get("error") or {}).get("message", "")
    if "stopped before the task finished" not in reason:
        fail(f"taskkill: the orphaned task failed without its reason: {task}")
    kept = poll_task(target, finished, "completed", 5)
    if "Computed kept" not in json.dumps(kept.get("result")):
        fail(f"taskkill: a finished task's result was lost with its replica: {kept}")
    ok(
        f"taskkill: replica :{port} SIGKILLed while running a task; the task read failed "
        f"through the balancer {took:.1f} s later ({reason!r}); a finished task's result kept"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument(
        "checks",
        nargs="+",
        choices=["session", "resume", "outage", "listen", "elicit", "tasks", "taskkill"],
    )
    parser.add_argument("--replica", action="append", default=[], help="PORT=PID")
    parser.add_argument("--redis-cli", default="redis-cli")
    parser.add_argument("--redis-pid", type=int)
    parser.add_argument("--store-timeout", type=float, default=2.0)
    parser.add_argument("--task-lease", type=float, default=5.0)
    args = parser.parse_args()
    replicas = {}
    for item in args.replica:
        port, pid = item.split("=", 1)
        replicas[port] = int(pid)
    target = Target(args.url)
    for check in args.checks:
        if check == "session":
            check_session(target, replicas)
        elif check == "resume":
            check_resume(target, replicas, args.redis_cli)
        elif check == "listen":
            check_listen(target, replicas)
        elif check == "elicit":
            check_elicit(target, replicas)
        elif check == "tasks":
            check_tasks(target, replicas)
        elif check == "taskkill":
            check_taskkill(target, replicas, args.task_lease)
        elif check == "outage":
            if not args.redis_pid:
                fail("outage needs --redis-pid")
            check_outage(target, args.redis_pid, args.store_timeout)


if __name__ == "__main__":
    main()
