import Foundation

/// The reply route of a call's transactions when the registrar fixes NAT, relays media, or both:
/// `onreply_route[CALL_REPLY]`, armed with `t_on_reply("CALL_REPLY")` by both options' request
/// parts (``RegistrarConfig/withNAT(_:_:)``, ``RegistrarConfig/relay(_:control:behindNAT:)``).
///
/// Decision: one route for both. A transaction has exactly one reply route of its own (a later
/// `t_on_reply` replaces the earlier), and with a NAT and a relay together the answer of a client
/// behind the NAT needs both at once: its Contact fixed to the mapping (`fix_nated_contact`) and
/// its SDP handed to the relay with the address the reply came from (`SIP-source-address`: the
/// client's `c=` is its private address, which nothing outside the NAT reaches). Kamailio's own
/// sample configuration keeps both in one reply route the same way.
///
/// Invariants: the route exists only when one of the options is on (the placeholder stays a
/// comment otherwise); a reply "from a client" is one not from the registrar's own host, where
/// the lab's far ends (sipp) run; without NAT handling the relay trusts every `c=`.
extension RegistrarConfig {
    static func callReply(_ config: String, nat: Bool, relay: Bool) -> String {
        guard nat || relay else { return config }
        let fixContact = """
                # A reply from a client gets its source as Contact, so the far end's in-dialog
                # requests reach the mapping.
                if (src_ip != myself) {
                    fix_nated_contact();
                }
            """
        let relayFlags = Self.relayFlags
        let answer =
            nat
            ? """
                if (has_body("application/sdp")) {
                    if (src_ip != myself) {
                        rtpengine_manage("\(relayFlags) SIP-source-address");
                    } else {
                        rtpengine_manage("\(relayFlags)");
                    }
                }
            """
            : """
                if (has_body("application/sdp")) {
                    rtpengine_manage("\(relayFlags)");
                }
            """
        let body = [nat ? fixContact : nil, relay ? answer : nil].compactMap(\.self).joined(separator: "\n")
        return config.replacingOccurrences(
            of: "# @NAT_RELAY_REPLY_ROUTE@",
            with: """
                # A call's replies: NAT fixing and the relay's answer (RegistrarConfig+CallReply.swift).
                onreply_route[CALL_REPLY] {
                \(body)
                }
                """)
    }
}
