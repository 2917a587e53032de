import Foundation

/// The media relay's part of Kamailio's configuration (``RegistrarOptions/mediaRelay``): the
/// `rtpengine` module talking to ``LabMediaRelay`` over its ng control socket, and every SDP of a
/// call rewritten so media flows through the relay:
/// - a request's offer (INVITE, re-INVITE, UPDATE) in a branch route, as it leaves towards its
///   target, asking the relay for addresses of the target's family (`address-family=IP4|IP6`
///   from the Request-URI's host), so an IPv6-only party and an IPv4-only one reach each other;
/// - a reply's answer (any reply with SDP) in the call's reply route, in the family of the offerer
///   (``RegistrarConfig/callReply(_:nat:relay:)``, shared with NAT handling);
/// - a BYE ends the relay's session;
/// - behind a NAT (`behindNAT`), an offer from a client whose request shows NAT (the same
///   `nat_uac_test` as NAT handling's) is given the address it came from (`SIP-source-address`),
///   not its private `c=`.
///
/// A NAT rebinding moves a client's media to a new public port: the relay (rtpengine) learns a
/// stream's source from its first packets after each offer/answer (its endpoint learning), so
/// a client that re-INVITEs after a rebinding and then sends a packet is followed.
///
/// `o=` is rewritten with `c=` (`replace-origin`), so a party never sees an origin of another
/// family than the connection (RFC 4566 §5.2 leaves `o=`'s address to the creator; some stacks
/// refuse a mismatch).
extension RegistrarConfig {
    static let relayFlags = "replace-origin replace-session-connection"

    /// `config` (a rendered template) with its `# @RELAY_…@` lines filled for a relay whose ng
    /// control socket is `control` (`udp:ADDRESS:PORT`); without one they stay comments.
    static func relay(_ config: String, control: String?, behindNAT: Bool = false) -> String {
        guard let control else { return config }
        let modules = """
            loadmodule "rtpengine.so"
                    modparam("rtpengine", "rtpengine_sock", "\(control)")
                    modparam("rtpengine", "rtpengine_tout_ms", 2000)
            """
        let calls = #"if (is_method("INVITE|UPDATE|BYE")) { t_on_branch("RELAY_MEDIA"); t_on_reply("CALL_REPLY"); }"#
        // The offer leaves for its target: ask for addresses of the target's family.
        func offer(_ extra: String) -> String {
            """
            if ($(ru{uri.host}) =~ ":") {
                        rtpengine_manage("\(relayFlags) address-family=IP6\(extra)");
                    } else {
                        rtpengine_manage("\(relayFlags) address-family=IP4\(extra)");
                    }
            """
        }
        let offers =
            behindNAT
            ? "if (nat_uac_test(\"50\")) {\n        \(offer(" SIP-source-address"))\n    } else {\n        \(offer(""))\n    }"
            : offer("")
        let branch = """

            branch_route[RELAY_MEDIA] {
                if (is_method("BYE")) {
                    rtpengine_manage();
                } else if (has_body("application/sdp")) {
                    \(offers)
                }
            }

            """
        return config.replacingOccurrences(of: "# @RELAY_MODULES@", with: modules)
            .replacingOccurrences(of: "# @RELAY_CALLS@", with: calls) + branch
    }
}
