#!/usr/bin/env python3
"""A headless pjsua2 phone kept alive by netres (or by nothing, to compare): registers one
account over UDP, optionally calls a URI once registered, and prints what happens as JSON lines
on standard output (`netres_pjsua2.report`). The repository's tests and `netres-bench pjsip`
run it in a lab; `--help` lists its options.
"""

import argparse
import os
import signal
import sys
import time

import pjsua2 as pj

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netres_pjsua2 import AdapterAccount, AdapterCall, NetresAdapter, report  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description="A headless pjsua2 phone kept alive by netres.")
    parser.add_argument("--socket", help="netres's control socket; without it, PJSIP alone (no netres)")
    parser.add_argument("--registrar", required=True, help="host[:port] of the registrar")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--domain", help="the account's domain (default: the registrar)")
    parser.add_argument("--call", help="a SIP URI to call once registered")
    parser.add_argument("--port", type=int, default=5060, help="local SIP port (UDP)")
    parser.add_argument("--seconds", type=float, default=3600, help="how long to run")
    parser.add_argument("--ip-change-on-signal", action="store_true",
                        help="without netres: call Endpoint.handleIpChange() on SIGUSR1 (an outside detector)")
    args = parser.parse_args()
    told = []
    if args.ip_change_on_signal:
        signal.signal(signal.SIGUSR1, lambda number, frame: told.append(True))
    domain = args.domain or args.registrar.split(":")[0]

    ep = pj.Endpoint()
    ep.libCreate()
    config = pj.EpConfig()
    config.uaConfig.threadCnt = 0
    config.uaConfig.mainThreadOnly = True
    config.logConfig.level = 0
    config.logConfig.consoleLevel = 0
    ep.libInit(config)
    transport = pj.TransportConfig()
    transport.port = args.port
    ep.transportCreate(pj.PJSIP_TRANSPORT_UDP, transport)
    ep.libStart()
    ep.audDevManager().setNullDev()

    adapter = NetresAdapter(ep, args.socket)
    account_config = pj.AccountConfig()
    account_config.idUri = "sip:%s@%s" % (args.user, domain)
    account_config.regConfig.registrarUri = "sip:%s" % args.registrar
    account_config.sipConfig.authCreds.append(pj.AuthCredInfo("digest", "*", args.user, 0, args.password))
    # What PJSIP does on Endpoint.handleIpChange for this account: register the new Contact and
    # re-INVITE its calls with it; never hang them up.
    account_config.ipChangeConfig.shutdownTp = True
    account_config.ipChangeConfig.hangupCalls = False
    account_config.ipChangeConfig.reinviteFlags = (pj.PJSUA_CALL_REINIT_MEDIA | pj.PJSUA_CALL_UPDATE_CONTACT
                                                   | pj.PJSUA_CALL_UPDATE_VIA)
    account = AdapterAccount(adapter, args.user)
    account.create(account_config)
    adapter.add_account(args.user, account)
    adapter.connect()

    called = False
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        adapter.poll(timeout_ms=2)
        if told:
            del told[:]
            report("told-ip-change")
            ep.handleIpChange(pj.IpChangeParam())
        if args.call and not called and account.getInfo().regIsActive:
            called = True
            call = AdapterCall(adapter, args.user, account)
            adapter.track_call(args.user, call, "outgoing")
            call.makeCall(args.call, pj.CallOpParam(True))
    ep.libDestroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
