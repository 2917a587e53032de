#!/usr/bin/env python3
"""A minimal client of netres's external plugin protocol (version 1), standard library only.

The protocol is one JSON object per line over the daemon's control socket (a unix stream
socket, `control-socket:` in netres.yaml). The DocC article "External plugins" specifies it;
this file is a reading aid for a client in any language:

    client                                   netres run
    {"type":"hello","protocol":1,            ->
     "plugin":"demo","services":[...],
     "actions":["register"],"events":false}
                                             <- {"type":"welcome","protocol":1,...}
                                             <- {"type":"perform","id":7,"action":"register",...}
    {"type":"outcome","id":7,                ->
     "result":"succeeded"}

Used as a program it is a plugin that carries one registration service and answers every
action with the outcome given on the command line (a stand-in to watch what netres decides):

    netres_client.py --socket /run/netres/control.sock --plugin demo \
        --service alice.registration:registration:alice --action register --answer succeeded

`--events` prints the event stream only (what `netres ctl events` prints).
"""

import argparse
import json
import socket
import sys

PROTOCOL = 1
MAX_LINE = 65536  # the daemon refuses longer lines; it never sends longer ones


class Session:
    """One connection to the control socket, speaking JSON lines."""

    def __init__(self, path, timeout=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buffer = b""

    def send(self, message):
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def has_line(self):
        """Whether a whole message is already read (a caller that select()s on the socket must
        take these first: the socket is not readable for what is buffered here)."""
        return b"\n" in self.buffer

    def receive(self):
        """The next message from netres, or None when the connection ended."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_LINE:
                raise ValueError("line too long")
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def hello(self, plugin=None, services=(), actions=(), events=False):
        """Sends the hello; returns the welcome, or raises with netres's error."""
        message = {"type": "hello", "protocol": PROTOCOL, "services": list(services), "actions": list(actions),
                   "events": events}
        if plugin is not None:
            message["plugin"] = plugin
        self.send(message)
        answer = self.receive()
        if answer is None or answer.get("type") != "welcome":
            raise RuntimeError("netres refused the hello: %r" % (answer,))
        return answer

    def outcome(self, perform_id, result, reason=None, retryable=True, retry_after=None):
        message = {"type": "outcome", "id": perform_id, "result": result}
        if result == "failed":
            message["reason"] = reason or "failed"
            message["retryable"] = retryable
            if retry_after is not None:
                message["retry_after"] = retry_after
        self.send(message)

    def push(self, account, kind="call", payload=None):
        message = {"type": "push", "account": account, "kind": kind}
        if payload is not None:
            message["payload"] = payload
        self.send(message)

    def close(self):
        self.sock.close()


def service(text):
    """ID:KIND[:ACCOUNT], e.g. alice.registration:registration:alice."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError("expected ID:KIND[:ACCOUNT]")
    entry = {"id": parts[0], "kind": parts[1]}
    if len(parts) == 3:
        entry["account"] = parts[2]
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", default="/run/netres/control.sock")
    parser.add_argument("--plugin", default="demo")
    parser.add_argument("--service", type=service, action="append", default=[])
    parser.add_argument("--action", action="append", default=[])
    parser.add_argument("--answer", choices=["succeeded", "failed", "skipped"], default="succeeded")
    parser.add_argument("--events", action="store_true", help="print the event stream only")
    args = parser.parse_args()
    session = Session(args.socket)
    if args.events:
        session.send({"type": "hello", "protocol": PROTOCOL, "events": True})
    else:
        print(json.dumps(session.hello(args.plugin, args.service, args.action)), flush=True)
    while True:
        message = session.receive()
        if message is None:
            return 0
        print(json.dumps(message), flush=True)
        if message.get("type") == "perform":
            session.outcome(message["id"], args.answer, reason="answered %s by netres_client.py" % args.answer)


if __name__ == "__main__":
    sys.exit(main())
