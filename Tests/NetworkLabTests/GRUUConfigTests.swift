import Foundation
import Testing

@testable import NetworkLab

/// The registrar's routing of in-dialog requests to a GRUU, without namespaces: the text Kamailio
/// gets (``LinphoneCallTests`` in FaultInjectionTests runs it against linphonec). RFC 5627: "A URI
/// that routes to a specific UA instance is called a Globally Routable UA URI (GRUU)"; the
/// registrar that handed it out is the one that can route it.
struct GRUUConfigTests {
    static func render(recordRoute: Bool) -> String {
        RegistrarConfig.render(
            address4: "198.18.0.1", address6: nil, port: 5060, directory: "/tmp/nr-test", modules: "/usr/lib/kamailio",
            digestAlgorithm: "", recordRoute: recordRoute)
    }

    /// The body of `route[NAME]` in `text` (up to the next line that starts a route), or "".
    static func route(_ name: String, in text: String) -> String {
        guard let start = text.range(of: "route[\(name)] {") else { return "" }
        let rest = text[start.upperBound...]
        let end = rest.range(of: "\nroute[")?.lowerBound ?? rest.range(of: "\n# RFC")?.lowerBound ?? rest.endIndex
        return String(rest[..<end])
    }

    @Test(arguments: [true, false])
    func anInDialogRequestToAGRUUIsLookedUpAfterTheProxysOwnRouteIsTakenOff(recordRoute: Bool) throws {
        let text = Self.render(recordRoute: recordRoute)
        #expect(!text.contains("@GRUU"))
        #expect(text.components(separatedBy: "route[GRUU] {").count == 2, "route[GRUU] defined once")
        let gruu = Self.route("GRUU", in: text)
        for needle in ["uri == myself", "$ru =~ \";gr(=|;|>|$)\"", "lookup(\"location\")", "t_relay();", "404"] {
            #expect(gruu.contains(needle), "route[GRUU] lacks \(needle): \(gruu)")
        }
        // In route[CALLS], once a request has a To tag: loose_route() first (with a Route of this
        // proxy's, the GRUU is the Request-URI that remains), then route(GRUU), then the relay;
        // without a Route, route(GRUU) before the paths that end or relay the request unresolved.
        let calls = Self.route("CALLS", in: text)
        let dialog = try #require(calls.range(of: "if (has_totag()) {")).upperBound
        let steps = [
            "loose_route()", "route(GRUU);", "t_relay();", "route(GRUU);", "is_method(\"ACK\")", "uri != myself",
        ]
        var cursor = dialog
        for step in steps {
            let found = try #require(calls[cursor...].range(of: step), "\(step) after the previous step: \(calls)")
            cursor = found.upperBound
        }
    }

    @Test func onlyAGRUUParameterMatchesNotAnotherParameterOrUser() throws {
        let pattern = try Regex(RegistrarConfig.gruuParameter)
        for gruu in [
            "sip:dave@198.18.0.1;gr=urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "sip:tgruu.7hs==@198.18.0.1;gr",
            "sip:dave@198.18.0.1:5060;gr;transport=udp", "<sip:dave@198.18.0.1;gr=urn:uuid:1>",
        ] {
            #expect(gruu.contains(pattern), "\(gruu)")
        }
        for other in ["sip:dave@198.18.0.1", "sip:gr@198.18.0.1", "sip:dave@198.18.0.1;grid=7", "sip:dave@gr.example"] {
            #expect(!other.contains(pattern), "\(other)")
        }
    }
}
