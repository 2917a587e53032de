/// The Kamailio configuration of ``LabRegistrar``: registrar with digest auth (user U's password is
/// `secret-U`), presence (presence, reg, message-summary, dialog), a request log, and fault routes
/// switched at run time through the `faults` htable (``RegistrarFault``), and a proxy for calls:
/// a new INVITE is challenged (407), record-routed and relayed to the registered contact of its
/// Request-URI's user, or to the URI itself when it names another host:port (a far end such as
/// sipp); in-dialog requests follow their Route.
///
/// Placeholders: `@ADDR4@`, `@ADDR6@`, `@PORT@`, `@DIR@`, `@MODULES@`.
enum RegistrarConfig {
    static let template = #"""
        #!KAMAILIO
        debug=2
        log_stderror=yes
        log_prefix="NR "
        children=2
        tcp_children=2
        auto_aliases=no
        listen=udp:@ADDR4@:@PORT@
        listen=tcp:@ADDR4@:@PORT@
        listen=udp:[@ADDR6@]:@PORT@
        listen=tcp:[@ADDR6@]:@PORT@
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

        modparam("ctl", "binrpc", "unix:@DIR@/ctl.sock")
        modparam("htable", "htable", "faults=>size=4;initval=0")
        modparam("usrloc", "db_mode", 0)
        modparam("registrar", "max_expires", 3600)
        modparam("registrar", "default_expires", 600)
        modparam("auth", "nonce_expire", 300)
        modparam("presence|pua", "db_url", "text://@DIR@/db")
        modparam("presence", "subs_db_mode", 2)
        modparam("presence", "server_address", "sip:@ADDR4@:@PORT@")
        modparam("presence_xml", "force_active", 1)
        modparam("pua_reginfo", "default_domain", "@ADDR4@")
        modparam("pua_reginfo", "server_address", "sip:reginfo@@ADDR4@:@PORT@")
        modparam("pua_reginfo", "outbound_proxy", "sip:@ADDR4@:@PORT@")

        request_route {
            # One log line per request; at= (CLOCK_REALTIME) stays the last word.
            xlog("L_NOTICE", "NRTEST $rm user=$fU src=$si:$sp proto=$pr cseq=$cs callid=$ci event=$hdr(Event) to=$tU expires=$hdr(Expires) at=$TV(Sn)\n");
            if (!mf_process_maxfwd_header("10")) {
                sl_send_reply("483", "Too Many Hops");
                exit;
            }
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
            sl_send_reply("404", "Not Here");
        }

        # Replies the proxy relays are logged too (the witness of a 200 OK to a re-INVITE).
        onreply_route {
            xlog("L_NOTICE", "NRTEST REPLY$rs user=$fU method=$rm cseq=$cs callid=$ci at=$TV(Sn)\n");
        }

        route[CALLS] {
            if (is_method("CANCEL|ACK") && t_check_trans()) {
                t_relay();
                exit;
            }
            if (has_totag()) {
                if (loose_route()) {
                    t_relay();
                    exit;
                }
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
            # Requests from a far end on this host (sipp beside the registrar) are not challenged.
            if (src_ip != myself) {
                $var(password) = "secret-" + $fU;
                if (!pv_auth_check("$fd", "$var(password)", "0", "1")) {
                    auth_challenge("$fd", "1");
                    exit;
                }
                consume_credentials();
            }
            record_route();
            if (uri == myself && !lookup("location")) {
                sl_send_reply("404", "Not Found");
                exit;
            }
            t_relay();
        }

        route[REGISTRAR] {
            if ($sht(faults=>unavailable) > 0) {
                $sht(faults=>unavailable) = $sht(faults=>unavailable) - 1;
                append_to_reply("Retry-After: $sht(faults=>retryafter)\r\n");
                xlog("L_NOTICE", "NRTEST FAULT503 user=$fU retry-after=$sht(faults=>retryafter) at=$TV(Sn)\n");
                sl_send_reply("503", "Service Unavailable");
                exit;
            }
            $var(password) = "secret-" + $fU;
            if (!pv_auth_check("$fd", "$var(password)", "0", "1")) {
                auth_challenge("$fd", "1");
                exit;
            }
            consume_credentials();
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
            xlog("L_NOTICE", "NRTEST REGISTERED user=$fU contact=$ct at=$TV(Sn)\n");
        }

        route[PRESENCE] {
            if ($sp != @PORT@) {
                $var(password) = "secret-" + $fU;
                if (!pv_auth_check("$fd", "$var(password)", "0", "1")) {
                    auth_challenge("$fd", "1");
                    exit;
                }
                consume_credentials();
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
        """#
}
