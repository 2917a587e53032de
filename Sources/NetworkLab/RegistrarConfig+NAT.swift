import Foundation

/// What a lab registrar does for clients behind a NAT (``RegistrarOptions/nat``).
///
/// Invariant: ``flowTimer`` is nil or in 1...3600 seconds (clamped at init); it is written into
/// Kamailio's configuration.
public struct RegistrarNAT: Hashable, Sendable {
    /// The `Flow-Timer` (RFC 5626 §5.4) every 2xx to a REGISTER carries: how often the registrar
    /// wants the client's keep-alives, chosen to outrun the NAT's UDP timeout. nil sends none.
    public var flowTimer: Int?

    public init(flowTimer: Int? = nil) {
        self.flowTimer = flowTimer.map { min(max($0, 1), 3600) }
    }
}

/// Kamailio's NAT handling in ``LabRegistrar``, filled into the template's `# @NAT_…@` comment
/// lines (left comments when the registrar does no NAT handling; a reply's Contact is fixed in the
/// call's transaction reply route, `onreply_route[CALL_REPLY]` of ``RegistrarConfig/callReply(_:nat:relay:)``,
/// which it shares with the media relay):
/// - `nathelper` (RFC 3581 symmetric response routing already is Kamailio's): a REGISTER's
///   source address and port are saved as the binding's `received` (`fix_nated_register`), so
///   `lookup` sends a call to the NAT's mapping while the Contact keeps the client's private
///   address; other requests and replies from behind a NAT get their Contact rewritten to their
///   source (`fix_nated_contact`), so in-dialog requests reach the mapping too;
/// - `stun`: STUN Binding requests (RFC 5389) on the SIP UDP port are answered there, the
///   keep-alive of RFC 5626 §4.4.1;
/// - with ``RegistrarNAT/flowTimer``, every 2xx to a REGISTER carries `Flow-Timer`.
///
/// NAT is told by the address: a request whose top Via or Contact differs from its source
/// (`nat_uac_test` flags 2 + 16 + 32; the lab's 198.18.0.0/15 is no RFC 1918 range, flag 1 would
/// miss it); a reply by coming from another host than the registrar's (where the lab's far ends run).
extension RegistrarConfig {
    static func withNAT(_ nat: RegistrarNAT?, _ config: String) -> String {
        guard let nat else { return config }
        let flowTimer = nat.flowTimer.map { "append_to_reply(\"Flow-Timer: \($0)\\r\\n\");" } ?? ""
        return config.replacingOccurrences(
            of: "# @NAT_MODULES@",
            with: """
                loadmodule "nathelper.so"
                loadmodule "stun.so"
                modparam("nathelper", "received_avp", "$avp(RECEIVED)")
                modparam("registrar", "received_avp", "$avp(RECEIVED)")
                """
        )
        .replacingOccurrences(
            of: "# @NAT_REQUEST@",
            with: """
                if (!is_method("REGISTER") && nat_uac_test("50")) {
                        force_rport();
                        fix_nated_contact();
                    }
                    if (is_method("INVITE|UPDATE|SUBSCRIBE")) {
                        t_on_reply("CALL_REPLY");
                    }
                """
        )
        .replacingOccurrences(of: "# @NAT_REGISTER@", with: "fix_nated_register();\n    \(flowTimer)")
    }
}
