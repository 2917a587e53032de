import Foundation

/// The Kamailio configuration of ``LabRegistrar``: registrar with digest auth (user U's password is
/// `secret-U`), presence (presence, reg, message-summary, dialog), a request log (`NRTEST` lines,
/// ``RegistrarRequest``, replies the proxy relays included), and a proxy for calls: a new INVITE is
/// challenged (407) unless it comes from the registrar's own host in a lab (a far end such as sipp
/// beside the registrar; on loopback every INVITE is challenged),
/// record-routed (unless ``RegistrarOptions/recordRoute`` is off) and relayed to the registered contact of its Request-URI's user, or to the URI
/// itself when it names another host:port; in-dialog requests follow their Route,
/// or reach the contact bound to the GRUU that is their Request-URI.
///
/// Faults come two ways: switched at run time through the `faults` htable (``RegistrarFault``), and
/// by user name: `hostile*` gets 503 with `Retry-After: 2^63-1`, `busy*` 503 with `Retry-After: 3`,
/// `brief*` 423 with `Min-Expires: 120` below 120 s. A TLS listener on 5061 exists when Kamailio is
/// started with `-A WITH_TLS` (its settings in `DIR/tls.cfg`).
///
/// Placeholders: `@ADDR4@`, `@ADDR6@` (the IPv6 listeners are dropped when it is empty), `@PORT@`,
/// `@DIR@`, `@MODULES@`, `@AUTH_ALGORITHM@` (`""` for MD5 without an algorithm parameter, `MD5`, `SHA-256`),
/// `@UDP_WORKERS@` (Kamailio's `children`, see ``RegistrarOptions/udpWorkers``),
/// `@RECORD_ROUTE@` (`record_route();`, or a comment: then a dialog's in-dialog requests go
/// straight between the parties' Contacts and never reach the proxy). The `# @RELAY_…@` comment
/// lines are filled by ``RegistrarConfig/relay(_:control:)`` when calls go through rtpengine.
/// `@PUSH_*@` is the RFC 8599 push proxy of `RegistrarConfig+Push.swift` (empty without a push
/// service). `# @NAT_…@` comment lines are filled by ``RegistrarConfig/withNAT(_:_:)``, the last
/// one (a call's reply route, shared by NAT and relay) by ``RegistrarConfig/callReply(_:nat:relay:)``.
/// `# @GRUU_ROUTE@` is `route[GRUU]` of `RegistrarConfig+GRUU.swift`: an in-dialog request whose
/// Request-URI is a GRUU (a phone's Contact) reaches the proxy, record-routed or not, and is relayed
/// to the contact bound to that GRUU.
enum RegistrarConfig {
    static let template = #"""
        #!KAMAILIO
        debug=2
        log_stderror=yes
        log_prefix="NR "
        children=@UDP_WORKERS@
        tcp_children=2
        auto_aliases=no
        listen=udp:@ADDR4@:@PORT@
        listen=tcp:@ADDR4@:@PORT@
        listen=udp:[@ADDR6@]:@PORT@
        listen=tcp:[@ADDR6@]:@PORT@
        # A TLS listener on 5061 when started with -A WITH_TLS; the harness writes DIR/tls.cfg (server
        # certificate and key it generated).
        #!ifdef WITH_TLS
        enable_tls=yes
        listen=tls:@ADDR4@:5061
        #!endif
        dns=no
        rev_dns=no

        mpath="@MODULES@"
        loadmodule "kex.so"
        loadmodule "corex.so"
        loadmodule "tm.so"
        loadmodule "sl.so"
        loadmodule "pv.so"
        loadmodule "xlog.so"
        loadmodule "maxfwd.so"
        loadmodule "textops.so"
        loadmodule "siputils.so"
        loadmodule "usrloc.so"
        loadmodule "registrar.so"
        loadmodule "auth.so"
        loadmodule "ctl.so"
        loadmodule "cfg_rpc.so"
        loadmodule "htable.so"
        loadmodule "db_text.so"
        loadmodule "presence.so"
        loadmodule "presence_xml.so"
        loadmodule "presence_reginfo.so"
        loadmodule "presence_mwi.so"
        loadmodule "presence_dialoginfo.so"
        loadmodule "pua.so"
        loadmodule "pua_reginfo.so"
        loadmodule "rr.so"
        # @NAT_MODULES@
        # @RELAY_MODULES@
        @PUSH_MODULES@
        #!ifdef WITH_TLS
        loadmodule "tls.so"
        modparam("tls", "config", "@DIR@/tls.cfg")
        #!endif

        modparam("ctl", "binrpc", "unix:@DIR@/ctl.sock")
        modparam("htable", "htable", "faults=>size=4;initval=0")
        modparam("usrloc", "db_mode", 0)
        modparam("registrar", "max_expires", 3600)
        modparam("registrar", "default_expires", 600)
        modparam("auth", "nonce_expire", 300)
        # "" (MD5, algorithm omitted from the challenge), "MD5" or "SHA-256"; set by the harness.
        modparam("auth", "algorithm", "@AUTH_ALGORITHM@")

        # subs_db_mode 0 crashes 5.6.3 on presence.winfo; 2 with db_text works (measured).
        modparam("presence|pua", "db_url", "text://@DIR@/db")
        modparam("presence", "subs_db_mode", 2)
        modparam("presence", "server_address", "sip:@ADDR4@:@PORT@")
        modparam("presence_xml", "force_active", 1)
        # The reg package needs pua + pua_reginfo, or its NOTIFY has no body (measured).
        modparam("pua_reginfo", "default_domain", "@ADDR4@")
        modparam("pua_reginfo", "server_address", "sip:reginfo@@ADDR4@:@PORT@")
        modparam("pua_reginfo", "outbound_proxy", "sip:@ADDR4@:@PORT@")

        request_route {
            # cseq= counts transactions (a retransmission repeats it); event=, to= (the To user) and
            # expires= tell subscriptions apart and show an unsubscribe (<null> when absent); at= is
            # CLOCK_REALTIME (sec.usec, not cached) when the request entered the script, and stays the
            # last word of the line.
            xlog("L_NOTICE", "NRTEST $rm user=$fU src=$si:$sp proto=$pr cseq=$cs callid=$ci event=$hdr(Event) to=$tU expires=$hdr(Expires) at=$TV(Sn)\n");
            if (!mf_process_maxfwd_header("10")) {
                sl_send_reply("483", "Too Many Hops");
                exit;
            }
            # @NAT_REQUEST@
            if (has_totag() && $sht(faults=>reject481) > 0) {
                $sht(faults=>reject481) = 0;
                xlog("L_NOTICE", "NRTEST FAULT481 user=$fU method=$rm at=$TV(Sn)\n");
                sl_send_reply("481", "Call/Transaction Does Not Exist");
                exit;
            }
            if (is_method("REGISTER")) {
                route(REGISTRAR);
                exit;
            }
            if (is_method("PUBLISH|SUBSCRIBE")) {
                route(PRESENCE);
                exit;
            }
            if (is_method("OPTIONS")) {
                sl_send_reply("200", "OK");
                exit;
            }
            if (is_method("INVITE|ACK|BYE|CANCEL|UPDATE")) {
                route(CALLS);
                exit;
            }
            @PUSH_MESSAGE@
            sl_send_reply("404", "Not Here");
        }

        # Replies the proxy relays to a call's requests are logged too (the witness of a 200 OK to a
        # re-INVITE); the presence server's own PUBLISH/NOTIFY replies would crowd the log.
        onreply_route {
            if (is_method("INVITE|UPDATE|BYE|CANCEL")) {
                xlog("L_NOTICE", "NRTEST REPLY$rs user=$fU method=$rm cseq=$cs callid=$ci at=$TV(Sn)\n");
            }
        }

        # Calls. A new INVITE is authenticated (407), record-routed (when the harness says so) and relayed to the
        # registered contact of its Request-URI's user, or to the URI itself when it names another
        # host:port (sipp as the far end). In-dialog requests follow their Route (loose routing) or
        # their Request-URI; a CANCEL or a non-2xx ACK goes the way of its transaction.
        route[CALLS] {
            # @RELAY_CALLS@
            if (is_method("CANCEL|ACK") && t_check_trans()) {
                t_relay();
                exit;
            }
            if (has_totag()) {
                if (loose_route()) {
                    route(GRUU);
                    t_relay();
                    exit;
                }
                route(GRUU);
                # An ACK to a reply of this proxy's own (the 407 below) ends here.
                if (is_method("ACK")) {
                    exit;
                }
                if (uri != myself) {
                    t_relay();
                    exit;
                }
                sl_send_reply("404", "Not Here");
                exit;
            }
            if (!is_method("INVITE")) {
                sl_send_reply("404", "Not Here");
                exit;
            }
            # A far end on the registrar's host of a lab (sipp beside the registrar) is not
            # challenged; on loopback every party shares the address, so everyone is.
            if (src_ip != myself || $si == "127.0.0.1" || $si == "::1") {
                $var(password) = "secret-" + $fU;
                if (!pv_auth_check("$fd", "$var(password)", "0", "1")) {
                    auth_challenge("$fd", "1");
                    exit;
                }
                consume_credentials();
            }
            @RECORD_ROUTE@
            @PUSH_INVITE@
            if (uri == myself && !lookup("location")) {
                sl_send_reply("404", "Not Found");
                exit;
            }
            t_relay();
        }

        route[REGISTRAR] {
            if ($sht(faults=>unavailable) > 0) {
                $sht(faults=>unavailable) = $sht(faults=>unavailable) - 1;
                if ($sht(faults=>retryafter) > 0) {
                    append_to_reply("Retry-After: $sht(faults=>retryafter)\r\n");
                }
                xlog("L_NOTICE", "NRTEST FAULT503 user=$fU retry-after=$sht(faults=>retryafter) at=$TV(Sn)\n");
                sl_send_reply("503", "Service Unavailable");
                exit;
            }
            if ($fU =~ "^hostile") {
                append_to_reply("Retry-After: 9223372036854775807\r\n");
                sl_send_reply("503", "Service Unavailable");
                exit;
            }
            if ($fU =~ "^busy") {
                append_to_reply("Retry-After: 3\r\n");
                sl_send_reply("503", "Service Unavailable");
                exit;
            }
            if ($fU =~ "^brief" && $hdr(Expires) != $null) {
                $var(expires) = $(hdr(Expires){s.int});
                if ($var(expires) > 0 && $var(expires) < 120) {
                    append_to_reply("Min-Expires: 120\r\n");
                    sl_send_reply("423", "Interval Too Brief");
                    exit;
                }
            }
            $var(password) = "secret-" + $fU;
            if (!pv_auth_check("$fd", "$var(password)", "0", "1")) {
                auth_challenge("$fd", "1");
                exit;
            }
            consume_credentials();
            # @NAT_REGISTER@
            if ($sht(faults=>drop200) > 0) {
                $sht(faults=>drop200) = 0;
                # 0x02: update the binding but send no reply, as if the 200 OK were lost.
                save("location", "0x02");
                xlog("L_NOTICE", "NRTEST FAULTDROP200 user=$fU contact=$ct at=$TV(Sn)\n");
                exit;
            }
            if (!save("location")) {
                sl_reply_error();
                exit;
            }
            # A query (no Contact, RFC 3261 §10.2.3) bound nothing: it is logged as QUERIED.
            if ($hdr(Contact) == $null) { xlog("L_NOTICE", "NRTEST QUERIED user=$fU src=$si:$sp at=$TV(Sn)\n"); exit; }
            # Logged right after save() has sent the 200 OK: the instant the binding was confirmed.
            xlog("L_NOTICE", "NRTEST REGISTERED user=$fU contact=$ct at=$TV(Sn)\n");
            @PUSH_REGISTERED@
        }

        route[PRESENCE] {
            # Requests pua sends to itself come from the server's own port and are not challenged.
            if ($sp != @PORT@) {
                $var(password) = "secret-" + $fU;
                if (!pv_auth_check("$fd", "$var(password)", "0", "1")) {
                    auth_challenge("$fd", "1");
                    exit;
                }
                consume_credentials();
                # A client's request that passed the challenge: one per request the client meant to
                # send (a challenged first try and its answered retry make one); a retransmission
                # repeats cseq=.
                xlog("L_NOTICE", "NRTEST AUTHORIZED user=$fU method=$rm src=$si:$sp cseq=$cs event=$hdr(Event) to=$tU at=$TV(Sn)\n");
            }
            if (!t_newtran()) {
                sl_reply_error();
                exit;
            }
            if (is_method("PUBLISH")) {
                handle_publish();
            } else {
                handle_subscribe();
            }
            t_release();
        }
        # @NAT_RELAY_REPLY_ROUTE@
        # @GRUU_ROUTE@
        """#
}

extension RegistrarConfig {
    /// The template with its placeholders filled; without `address6` the IPv6 listeners are left out.
    static func render(
        address4: String, address6: String?, port: Int, directory: String, modules: String, digestAlgorithm: String,
        recordRoute: Bool = true, udpWorkers: Int = 1, pushService: String? = nil
    ) -> String {
        let text = withPush(template, service: pushService, address4: address4, port: port, directory: directory)
            .replacingOccurrences(of: "@ADDR4@", with: address4)
            .replacingOccurrences(of: "@ADDR6@", with: address6 ?? "").replacingOccurrences(
                of: "@PORT@", with: "\(port)"
            )
            .replacingOccurrences(of: "@DIR@", with: directory).replacingOccurrences(of: "@MODULES@", with: modules)
            .replacingOccurrences(of: "@AUTH_ALGORITHM@", with: digestAlgorithm)
            .replacingOccurrences(of: "@UDP_WORKERS@", with: "\(min(max(udpWorkers, 1), 8))")
            .replacingOccurrences(of: "# @GRUU_ROUTE@", with: gruuRoute)
            .replacingOccurrences(
                of: "@RECORD_ROUTE@", with: recordRoute ? "record_route();" : "# not record-routed (RegistrarOptions)")
        guard address6 == nil else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("[]:") }
            .joined(separator: "\n")
    }
}
