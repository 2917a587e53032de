import Foundation

/// The proxy's handling of GRUUs (RFC 5627, "Obtaining and Using Globally Routable User Agent
/// URIs (GRUUs)": "A URI that routes to a specific UA instance is called a Globally Routable UA
/// URI (GRUU)"). Kamailio's registrar hands them out on its own (`gruu_enabled`, on by default):
/// a REGISTER with `Supported: gruu` and a `+sip.instance` gets `pub-gruu` and `temp-gruu` in the
/// 200, and a phone such as linphonec then puts its GRUU in every Contact of a dialog. The far
/// end's in-dialog requests (ACK, BYE, re-INVITE, UPDATE) then carry a Request-URI of this proxy's
/// own domain with a `gr` parameter, record-routed or not.
///
/// `route[GRUU]`, called for every in-dialog request (after `loose_route()` has taken this proxy's
/// own Route off): a Request-URI of this proxy's with a `gr` parameter is resolved with
/// `lookup("location")`, which maps a public GRUU (`;gr=urn:uuid:…`) to the contact registered
/// with that instance and a temporary one (`;gr`, no value) to the contact it encodes, and the
/// request is relayed there; no such binding: 404 (an ACK, which gets no reply, is dropped). Any
/// other request returns to `route[CALLS]` unchanged.
///
/// Invariant: the route only ever ends requests whose Request-URI is this proxy's and names a
/// GRUU; every other in-dialog request takes the path it took before.
extension RegistrarConfig {
    /// A URI with a `gr` parameter, valued (public GRUU) or not (temporary GRUU), as a POSIX
    /// extended regular expression (Kamailio's `=~`): `;grid=1` or a user `gr` does not match.
    static let gruuParameter = ";gr(=|;|>|$)"

    /// The text that replaces the template's `# @GRUU_ROUTE@` line.
    static let gruuRoute = #"""
        # RFC 5627: an in-dialog request to a GRUU of this registrar goes to the contact bound to it.
        route[GRUU] {
            if (uri == myself && $ru =~ "\#(gruuParameter)") {
                if (!lookup("location")) {
                    if (!is_method("ACK")) {
                        sl_send_reply("404", "Not Found");
                    }
                    exit;
                }
                xlog("L_NOTICE", "NRTEST GRUU method=$rm user=$fU gruu=$ru callid=$ci at=$TV(Sn)\n");
                t_relay();
                exit;
            }
        }
        """#
}
