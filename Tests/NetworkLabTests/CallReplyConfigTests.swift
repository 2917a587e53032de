import Foundation
import Testing

@testable import NetworkLab

/// The reply route a registrar with NAT handling and a media relay shares between them
/// (`RegistrarConfig+CallReply.swift`), as the text Kamailio gets, without namespaces.
struct CallReplyConfigTests {
    static func render(nat: Bool, relay: Bool) -> String {
        let template = RegistrarConfig.render(
            address4: "198.18.0.1", address6: nil, port: 5060, directory: "/tmp/nr-test", modules: "/usr/lib/kamailio",
            digestAlgorithm: "")
        let relayed = RegistrarConfig.relay(template, control: relay ? "udp:198.18.0.1:2223" : nil, behindNAT: nat)
        return RegistrarConfig.callReply(
            RegistrarConfig.withNAT(nat ? RegistrarNAT(flowTimer: 2) : nil, relayed), nat: nat, relay: relay)
    }

    /// The names `t_on_reply` arms in `text`.
    static func armedReplyRoutes(_ text: String) -> Set<String> {
        let pattern = #/t_on_reply\("([A-Z_]+)"\)/#
        return Set(text.matches(of: pattern).map { String($0.output.1) })
    }

    @Test func withNATAndARelayOneReplyRouteFixesTheContactAndHandsTheAnswerToTheRelay() throws {
        let text = Self.render(nat: true, relay: true)
        #expect(Self.armedReplyRoutes(text) == ["CALL_REPLY"], "one reply route per transaction, the same for both")
        #expect(text.components(separatedBy: "onreply_route[").count == 2, "exactly one named reply route")
        let start = try #require(text.range(of: "onreply_route[CALL_REPLY] {"))
        let route = String(text[start.upperBound...].prefix(900))
        let fix = try #require(route.range(of: "fix_nated_contact();"))
        let answer = try #require(
            route.range(of: "rtpengine_manage(\"replace-origin replace-session-connection SIP-source-address\");"))
        #expect(fix.lowerBound < answer.lowerBound, "the Contact is fixed in the same route as the answer is relayed")
        // The offer of a client behind the NAT: its private c= is replaced by where it came from.
        #expect(text.contains("if (nat_uac_test(\"50\")) {"))
        #expect(text.contains("address-family=IP4 SIP-source-address\");"))
        #expect(!text.contains("NAT_REPLY") && !text.contains("@NAT_") && !text.contains("@RELAY_"), "all filled")
    }

    @Test func eachOptionAloneKeepsItsOwnHalfOfTheReplyRoute() {
        let nat = Self.render(nat: true, relay: false)
        #expect(Self.armedReplyRoutes(nat) == ["CALL_REPLY"])
        #expect(nat.contains("fix_nated_contact();") && !nat.contains("rtpengine"))
        let relay = Self.render(nat: false, relay: true)
        #expect(Self.armedReplyRoutes(relay) == ["CALL_REPLY"])
        #expect(relay.contains("rtpengine_manage(\"replace-origin replace-session-connection\");"))
        #expect(!relay.contains("fix_nated_contact") && !relay.contains("SIP-source-address"), "every c= trusted")
        let neither = Self.render(nat: false, relay: false)
        #expect(Self.armedReplyRoutes(neither).isEmpty && !neither.contains("onreply_route["))
        #expect(neither.contains("# @NAT_RELAY_REPLY_ROUTE@"), "the placeholder stays a comment")
    }
}
