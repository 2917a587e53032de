import Foundation

/// The registrar as an RFC 8599 push proxy (``RegistrarOptions/pushService``), Kamailio 5.6's
/// `tsilo` + `msilo` + `http_client`:
/// - a new INVITE for a user whose bound Contact carries `pn-prid` is held (`t_newtran`, 100,
///   `ts_store` under the AoR, no branch) and the push service is asked to wake the device
///   (`GET /push?account=USER&kind=call&prid=TOKEN`); the REGISTER the push causes gets the held
///   INVITE forwarded to the new Contact (`ts_append` after `save`);
/// - a MESSAGE for such a user is stored (`m_store`, 202) and pushed for (`kind=message`); the
///   next REGISTER delivers it (`m_dump`, sent through the proxy itself: `outbound_proxy`);
/// - after each REGISTER it saves, the push service is told the binding's token and lifetime
///   (`GET /binding?account=USER&expires=SECONDS&prid=TOKEN`): it sends the `refresh` push before
///   the binding expires (RFC 8599 §4.1; ``LabPushService``);
/// - every push request is logged as `NRTEST PUSH user=U kind=K at=…`, and the client's answer
///   to a MESSAGE the proxy relays (from its store or at once) as `NRTEST DELIVERED user=FROM
///   to=U status=CODE at=…` (``RegistrarRequest``).
///
/// Invariants: without a push service every placeholder renders empty and the registrar is the
/// plain one; `http_client_query` blocks the one worker, so the push service answers at once and
/// delivers later (``LabPushService``); the held INVITE's transaction lives `wt_timer` (raised
/// here to 30 s), longer than any push delay a test gives.
extension RegistrarConfig {
    /// Placeholders of the shared template this file fills.
    static let pushPlaceholders = ["@PUSH_MODULES@", "@PUSH_INVITE@", "@PUSH_REGISTERED@", "@PUSH_MESSAGE@"]

    /// `text` with the push placeholders filled for a push service at `service` (`host:port`), or
    /// emptied when nil; the push routes are appended when there is a service.
    static func withPush(_ text: String, service: String?, address4: String, port: Int, directory: String) -> String {
        guard let service else {
            return pushPlaceholders.reduce(text) { $0.replacingOccurrences(of: $1, with: "") }
        }
        let values = [
            "@PUSH_MODULES@": pushModules(address4: address4, port: port, directory: directory),
            "@PUSH_INVITE@": "if (uri == myself) { route(PUSH_INVITE); }",
            "@PUSH_REGISTERED@": "route(PUSH_BINDING);\n    ts_append(\"location\", \"$tu\");\n    m_dump();",
            "@PUSH_MESSAGE@": "if (is_method(\"MESSAGE\")) { route(PUSH_MESSAGE); exit; }",
        ]
        let filled = values.reduce(text) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
        return filled + "\n" + pushRoutes(service: service, port: port) + "\n"
    }

    static func pushModules(address4: String, port: Int, directory: String) -> String {
        """
        loadmodule "tsilo.so"
        loadmodule "msilo.so"
        loadmodule "http_client.so"
        # A held INVITE lives wt_timer after its 100 (measured on 5.6.3): longer than any push delay.
        modparam("tm", "wt_timer", 30000)
        modparam("msilo", "db_url", "text://\(directory)/db")
        modparam("msilo", "outbound_proxy", "sip:\(address4):\(port)")
        modparam("http_client", "connection_timeout", 2)
        """
    }

    static func pushRoutes(service: String, port: Int) -> String {
        #"""
        # RFC 8599: the pn-prid of the user's first bound Contact into $var(prid) ("" when none).
        route[PUSH_TOKEN] {
            $var(prid) = "";
            if (reg_fetch_contacts("location", "$ru", "callee")) {
                if ($(ulc(callee=>count)) > 0) {
                    $var(prid) = $(ulc(callee=>addr){uri.param,pn-prid});
                }
                reg_free_contacts("callee");
            }
            if ($var(prid) == $null) {
                $var(prid) = "";
            }
        }

        # Asks the push service to wake $rU for $var(kind); it answers at once (the worker blocks).
        route[PUSH_SEND] {
            xlog("L_NOTICE", "NRTEST PUSH user=$rU kind=$var(kind) at=$TV(Sn)\n");
            http_client_query("http://@SERVICE@/push?account=$rU&kind=$var(kind)&prid=$var(prid)", "$var(answer)");
        }

        # RFC 8599 §4.1: the proxy pushes before a binding expires, so the sleeping device refreshes
        # it. The push service keeps that timer: after each save it is told the AoR's first binding's
        # token and seconds left (no token or 0: nothing to refresh).
        route[PUSH_BINDING] {
            $var(prid) = "";
            $var(left) = 0;
            if (reg_fetch_contacts("location", "sip:$tU@$td", "binding")) {
                if ($(ulc(binding=>count)) > 0) {
                    $var(prid) = $(ulc(binding=>addr){uri.param,pn-prid});
                    $var(left) = $(ulc(binding=>expires)) - $Ts;
                }
                reg_free_contacts("binding");
            }
            if ($var(prid) == $null) {
                $var(prid) = "";
            }
            xlog("L_NOTICE", "binding report user=$tU left=$var(left) prid=$var(prid)\n");
            http_client_query("http://@SERVICE@/binding?account=$tU&expires=$var(left)&prid=$var(prid)", "$var(answer)");
        }

        route[PUSH_INVITE] {
            route(PUSH_TOKEN);
            if ($var(prid) == "") {
                return;
            }
            if (!t_newtran()) {
                sl_reply_error();
                exit;
            }
            t_reply("100", "Trying");
            ts_store("sip:$rU@$rd");
            $var(kind) = "call";
            route(PUSH_SEND);
            exit;
        }

        # A MESSAGE for a user bound now goes to the binding, its 200 logged as delivered.
        route[PUSH_DELIVER] {
            if (!lookup("location")) {
                sl_send_reply("404", "Not Found");
                exit;
            }
            t_on_reply("PUSH_DELIVERED");
            t_relay();
            exit;
        }

        route[PUSH_MESSAGE] {
            # m_dump's deliveries come from the proxy's own port: relay them to the new Contact.
            if (src_ip == myself && $sp == @PORT@) {
                route(PUSH_DELIVER);
            }
            route(PUSH_TOKEN);
            if ($var(prid) == "") {
                route(PUSH_DELIVER);
            }
            if (!t_newtran()) {
                sl_reply_error();
                exit;
            }
            if (!m_store("$ru")) {
                t_reply("500", "Not Stored");
                exit;
            }
            t_reply("202", "Accepted");
            $var(kind) = "message";
            route(PUSH_SEND);
            exit;
        }

        # The client's answer to a MESSAGE relayed to it (stored or not): the witness of a delivery.
        onreply_route[PUSH_DELIVERED] {
            xlog("L_NOTICE", "NRTEST DELIVERED user=$fU to=$tU status=$rs at=$TV(Sn)\n");
        }
        """#.replacingOccurrences(of: "@SERVICE@", with: service).replacingOccurrences(of: "@PORT@", with: "\(port)")
    }

    /// msilo's db_text table: Debian's schema with `callid` and `status` nullable (Debian's schema refuses the rows msilo writes).
    static let siloTable =
        "id(int,auto) src_addr(string) dst_addr(string) username(string) domain(string) inc_time(int) "
        + "exp_time(int) snd_time(int) ctype(string) body(string,null) extra_hdrs(string,null) callid(string,null) "
        + "status(int,null) \n"
}
