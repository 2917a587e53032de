#!/usr/bin/env python3
"""Keeps a PJSIP (pjsua2) application's registrations and calls alive with netres.

PJSIP documents that the application must detect an IP address change itself and call
`Endpoint.handleIpChange()`. netres detects it (netlink, microseconds), decides per service
what to do (its policy), and hands each action to this adapter over its control socket (the
external plugin protocol, see examples/netres_client.py and the DocC article "External
plugins"). The adapter carries the actions out through pjsua2:

    close-stale-transports   Endpoint.handleIpChange(IpChangeParam): restart the listener, shut
                             the transports bound to the old address; PJSIP then registers the
                             new Contact and re-INVITEs the calls (AccountIpChangeConfig)
    register                 waits for the REGISTER of that IP change, or Account.setRegistration(True)
    refresh-registration     Account.setRegistration(True)
    unregister               Account.setRegistration(False)
    reinvite-call            waits for the IP change's re-INVITE, or Call.reinvite() with a new
                             Contact and Via
    hold-call / resume-call  Call.setHold() / Call.reinvite(PJSUA_CALL_UNHOLD)

It declares each account as `ACCOUNT.registration` and each call as `ACCOUNT.call-N` (added,
changed and removed as the call goes), so netres's rules order the calls after their account's
registration. When the rules decide nothing (a flap within the hold-down that kept the address)
nothing reaches PJSIP.

Use it in an application that already runs an Endpoint (threadCnt 0, mainThreadOnly, as PJSIP
recommends for Python):

    adapter = NetresAdapter(endpoint, "/run/netres/control.sock")
    adapter.add_account("alice", account)            # your pjsua2.Account subclass, see below
    while running:
        adapter.poll(timeout_ms=2)                   # netres's messages and PJSIP's events

Your Account and Call subclasses forward their callbacks to the adapter (`on_reg_state`,
`on_call_state`, `on_invite_answered`), as AdapterAccount and AdapterCall below do.
`headless_phone.py` beside this file is a small phone built on it, for tests and benchmarks.
"""

import json
import os
import select
import sys
import time

import pjsua2 as pj

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from netres_client import Session  # noqa: E402  (the protocol client beside this folder)

# How long a change must stand before PJSIP's IP-change cycle starts (see perform()).
SETTLE = 0.003

ACTIONS = ["close-stale-transports", "register", "refresh-registration", "unregister", "reinvite-call",
           "hold-call", "resume-call"]


def report(event, **fields):
    """One JSON line on standard output: what tests and benchmarks read."""
    fields.update(event=event, mono_ns=time.monotonic_ns())
    print(json.dumps(fields), flush=True)


class AdapterAccount(pj.Account):
    def __init__(self, adapter, name):
        pj.Account.__init__(self)
        self.adapter, self.name = adapter, name

    def onRegState(self, prm):
        self.adapter.on_reg_state(self.name, prm.code, prm.reason, prm.expiration)

    def onIncomingCall(self, prm):
        call = AdapterCall(self.adapter, self.name, self, prm.callId)
        answer = pj.CallOpParam()
        answer.statusCode = 200
        call.answer(answer)
        self.adapter.track_call(self.name, call, "incoming")


class AdapterCall(pj.Call):
    def __init__(self, adapter, account_name, account, call_id=pj.PJSUA_INVALID_ID):
        pj.Call.__init__(self, account, call_id)
        self.adapter, self.account_name = adapter, account_name

    def onCallState(self, prm):
        self.adapter.on_call_state(self)

    def onCallTsxState(self, prm):
        if prm.e.type != pj.PJSIP_EVENT_TSX_STATE:
            return
        tsx = prm.e.body.tsxState.tsx
        if tsx.method == "INVITE" and tsx.role == pj.PJSIP_ROLE_UAC and tsx.statusCode >= 200:
            self.adapter.on_invite_answered(self, tsx.statusCode, tsx.statusText)

    def onCallMediaState(self, prm):
        pass


class NetresAdapter:
    """The external plugin `pjsua2`: netres's actions in, pjsua2 calls out, outcomes back."""

    def __init__(self, endpoint, socket_path=None, plugin="pjsua2"):
        self.ep, self.plugin = endpoint, plugin
        self.session = Session(socket_path) if socket_path else None
        self.accounts = {}    # name -> Account
        self.calls = {}       # service id -> Call
        self.waiting = []     # (perform id, account or call service, done(*args) -> outcome or None)
        # After handleIpChange: per account and call, "expected" until PJSIP's own REGISTER or
        # re-INVITE is answered, then that answer (result, reason) until netres's action takes it.
        self.after_ip_change = {}
        self.ip_change_started = 0.0
        self.ip_change_trigger = None
        self.ip_change_addresses = None
        self.ip_change_owed = False
        self.next_call = 0
        self.welcomed = False

    # -- the application's side --------------------------------------------------------------

    def add_account(self, name, account):
        self.accounts[name] = account
        if self.welcomed:
            self.send({"type": "service-added", "service": self.registration(name)})

    def connect(self):
        """Sends the hello with every account added so far."""
        if not self.session:
            return
        welcome = self.session.hello(self.plugin, [self.registration(n) for n in self.accounts], ACTIONS)
        self.welcomed = True
        report("welcome", services=welcome.get("services", []))

    def poll(self, timeout_ms=2):
        """Handles what netres sent, then PJSIP's events for up to `timeout_ms` (1 ms while an
        IP change is owed, so it starts once settled)."""
        if self.session:
            # Lines already read into the session's buffer first: select() sees only the socket.
            while self.session.has_line() or select.select([self.session.sock], [], [], 0)[0]:
                message = self.session.receive()
                if message is None:
                    raise SystemExit("netres closed the connection")
                self.handle(message)
        self.start_ip_change()
        self.ep.libHandleEvents(1 if self.ip_change_owed else timeout_ms)

    @staticmethod
    def registration(name):
        return {"id": name + ".registration", "kind": "registration", "account": name}

    def send(self, message):
        if self.session:
            self.session.send(message)

    # -- netres's side ------------------------------------------------------------------------

    def handle(self, message):
        kind = message.get("type")
        if kind == "perform":
            report("perform", action=message["action"], service=message["service"], trigger=message["trigger"],
                   id=message["id"])
            try:
                self.perform(message)
            except pj.Error as error:
                self.outcome(message["id"], "failed", error.info())
        elif kind == "cancel":
            self.waiting = [entry for entry in self.waiting if entry[0] != message["id"]]
        elif kind == "error":
            report("netres-error", reason=message.get("reason"))

    def outcome(self, perform_id, result, reason=None):
        report("outcome", id=perform_id, result=result, reason=reason)
        self.session.outcome(perform_id, result, reason=reason)

    def perform(self, message):
        action, service, pid = message["action"], message["service"], message["id"]
        name, _, what = service.partition(".")
        account = self.accounts.get(name)
        if account is None:
            return self.outcome(pid, "failed", "no account %s" % name)
        # Whether PJSIP's own IP-change handling sends (or sent) this action's request.
        by_ip_change = self.announced(name if what == "registration" else service, message["trigger"])
        if what == "registration":
            if action == "close-stale-transports":
                addresses = sorted(message.get("path", {}).get("addresses", []))
                if self.ip_change_addresses == addresses and by_ip_change:
                    return self.outcome(pid, "succeeded")  # one IP change serves every account
                # PJSIP now registers each account's new Contact and re-INVITEs its calls
                # (AccountIpChangeConfig): the register and reinvite-call actions that follow
                # wait for those instead of sending their own. It starts once no newer change
                # came for SETTLE seconds: a make-before-break change is two transitions a
                # millisecond apart (the new address added, the old one removed), and PJSIP's
                # cycle at the first would register from the address about to vanish. A change
                # while one runs starts another once PJSIP lets it.
                for key in list(self.accounts) + list(self.calls):
                    self.after_ip_change[key] = "expected"
                self.ip_change_started = time.monotonic()
                self.ip_change_trigger = message["trigger"]
                self.ip_change_addresses = addresses
                self.ip_change_owed = True
                return self.outcome(pid, "succeeded")
            if action == "register" and by_ip_change:
                return self.wait_registration(pid, name)
            if action in ("register", "refresh-registration"):
                account.setRegistration(True)
                return self.wait_registration(pid, name)
            if action == "unregister":
                account.setRegistration(False)
                return self.outcome(pid, "succeeded")
            return self.outcome(pid, "skipped", "%s: nothing to do for a registration" % action)
        call = self.calls.get(service)
        if call is None:
            return self.outcome(pid, "failed", "no call %s" % service)
        if action == "reinvite-call":
            if not by_ip_change:
                param = pj.CallOpParam(True)
                param.opt.flag = pj.PJSUA_CALL_UPDATE_CONTACT | pj.PJSUA_CALL_UPDATE_VIA
                call.reinvite(param)
            return self.wait_invite(pid, service)
        if action == "hold-call":
            call.setHold(pj.CallOpParam(True))
            return self.wait_invite(pid, service)
        if action == "resume-call":
            param = pj.CallOpParam(True)
            param.opt.flag = pj.PJSUA_CALL_UNHOLD
            call.reinvite(param)
            return self.wait_invite(pid, service)
        return self.outcome(pid, "skipped", "%s: nothing to do for a call" % action)

    def start_ip_change(self):
        """Calls Endpoint.handleIpChange() if one is owed and settled; PJSIP refuses a second
        while the first runs, so poll() tries again until it takes it."""
        if not self.ip_change_owed or time.monotonic() - self.ip_change_started < SETTLE:
            return
        param = pj.IpChangeParam()
        param.restartListener = True
        param.shutdownTransport = True
        try:
            self.ep.handleIpChange(param)
            self.ip_change_owed = False
            report("ip-change")
        except pj.Error:
            pass

    def announced(self, key, trigger):
        """Whether the last IP change will register (or re-INVITE) `key` itself, or did. It counts
        only for the actions of the same trigger (a later flap's actions send their own
        requests) and for 10 s."""
        if self.after_ip_change.get(key) is None:
            return False
        if trigger == self.ip_change_trigger and time.monotonic() - self.ip_change_started < 10:
            return True
        del self.after_ip_change[key]
        return False

    def wait(self, pid, key, done):
        """Answers `pid` from what already happened after the IP change, or when it happens."""
        state = self.after_ip_change.get(key)
        if state is not None and state != "expected":
            del self.after_ip_change[key]
            return self.outcome(pid, *state)
        self.waiting.append((pid, key, done))

    @staticmethod
    def registration_verdict(code, reason, expiration):
        """The outcome a REGISTER's answer gives, or None while PJSIP is not done (a challenge it
        answers itself, the old Contact's removal)."""
        if 200 <= code < 300 and expiration > 0:
            return ("succeeded", None)
        if code in (401, 407) or 200 <= code < 300:
            return None
        return ("failed", "%d %s" % (code, reason))

    @staticmethod
    def invite_verdict(code, text):
        """The outcome an INVITE's final answer gives, or None for a challenge PJSIP answers."""
        if code in (401, 407):
            return None
        return ("succeeded", None) if 200 <= code < 300 else ("failed", "%d %s" % (code, text))

    def wait_registration(self, pid, name):
        self.wait(pid, name, self.registration_verdict)

    def wait_invite(self, pid, service):
        self.wait(pid, service, self.invite_verdict)

    def resolve(self, key, *args):
        """What PJSIP reported for `key` (an account, a call): answers the action waiting for it,
        or keeps it for the action an IP change announced."""
        for entry in list(self.waiting):
            if entry[1] != key:
                continue
            result = entry[2](*args)
            if result is not None:
                self.waiting.remove(entry)
                self.after_ip_change.pop(key, None)
                self.outcome(entry[0], *result)
            return
        if self.after_ip_change.get(key) == "expected":
            verdict = self.registration_verdict if key in self.accounts else self.invite_verdict
            result = verdict(*args)
            if result is not None:
                self.after_ip_change[key] = result

    # -- PJSIP's callbacks ----------------------------------------------------------------------

    def on_reg_state(self, name, code, reason, expiration):
        report("registration", account=name, code=code, reason=reason, expires=expiration)
        self.resolve(name, code, reason, expiration)

    def on_invite_answered(self, call, code, text):
        service = self.service_of(call)
        report("invite-answered", service=service, code=code)
        if service is not None:
            self.resolve(service, code, text)

    def track_call(self, name, call, direction):
        self.next_call += 1
        service = "%s.call-%d" % (name, self.next_call)
        call.netres_service, call.netres_direction = service, direction
        self.calls[service] = call

    def service_of(self, call):
        return getattr(call, "netres_service", None)

    def on_call_state(self, call):
        info = call.getInfo()
        service = self.service_of(call)
        report("call", service=service, state=info.stateText, code=info.lastStatusCode)
        if service is None:
            return
        if info.state == pj.PJSIP_INV_STATE_DISCONNECTED:
            self.calls.pop(service, None)
            self.send({"type": "service-removed", "service": service})
            return
        state = {pj.PJSIP_INV_STATE_CONFIRMED: "active", pj.PJSIP_INV_STATE_EARLY: "progressing",
                 pj.PJSIP_INV_STATE_CALLING: "progressing", pj.PJSIP_INV_STATE_INCOMING: "alerting"}.get(info.state)
        if state is None:
            return
        if state == "progressing" and call.netres_direction == "incoming":
            state = "alerting"
        self.send({"type": "service-added" if not getattr(call, "netres_declared", False) else "service-changed",
                   "service": {"id": service, "kind": "call", "direction": call.netres_direction, "state": state,
                               "account": call.account_name}})
        call.netres_declared = True
