import Foundation

/// The media relay's part of Kamailio's configuration (``RegistrarOptions/mediaRelay``): the
/// `rtpengine` module talking to ``LabMediaRelay`` over its ng control socket, and every SDP of a
/// call rewritten so media flows through the relay:
/// - a request's offer (INVITE, re-INVITE, UPDATE) in a branch route, as it leaves towards its
///   target, asking the relay for addresses of the target's family (`address-family=IP4|IP6`
///   from the Request-URI's host), so an IPv6-only party and an IPv4-only one reach each other;
/// - a reply's answer (any reply with SDP) in the reply route, in the family of the offerer;
/// - a BYE ends the relay's session.
///
/// `o=` is rewritten with `c=` (`replace-origin`), so a party never sees an origin of another
/// family than the connection (RFC 4566 §5.2 leaves `o=`'s address to the creator; some stacks
/// refuse a mismatch).
extension RegistrarConfig {
    static let relayFlags = "replace-origin replace-session-connection"

    /// `config` (a rendered template) with its `# @RELAY_…@` lines filled for a relay whose ng
    /// control socket is `control` (`udp:ADDRESS:PORT`); without one they stay comments.
    static func relay(_ config: String, control: String?) -> String {
        guard let control else { return config }
        let modules = """
            loadmodule "rtpengine.so"
                    modparam("rtpengine", "rtpengine_sock", "\(control)")
                    modparam("rtpengine", "rtpengine_tout_ms", 2000)
            """
        let calls = #"if (is_method("INVITE|UPDATE|BYE")) { t_on_branch("RELAY_MEDIA"); }"#
        let reply = #"if (has_body("application/sdp")) { rtpengine_manage("\#(relayFlags)"); }"#
        let branch = """

            branch_route[RELAY_MEDIA] {
                if (is_method("BYE")) {
                    rtpengine_manage();
                } else if (has_body("application/sdp")) {
                    if ($(ru{uri.host}) =~ ":") {
                        rtpengine_manage("\(relayFlags) address-family=IP6");
                    } else {
                        rtpengine_manage("\(relayFlags) address-family=IP4");
                    }
                }
            }

            """
        return config.replacingOccurrences(of: "# @RELAY_MODULES@", with: modules)
            .replacingOccurrences(of: "# @RELAY_CALLS@", with: calls)
            .replacingOccurrences(of: "# @RELAY_REPLY@", with: reply) + branch
    }
}
