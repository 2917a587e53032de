import Testing

@testable import SIPPlugin

/// The name rule a TLS flow applies on top of NIO SSL's (which also accepts the peer's IP
/// address, whatever name was configured).
@Suite struct SIPTLSNameTests {
    @Test(arguments: [
        (["registrar.test"], "registrar.test", true),
        (["Registrar.Test."], "registrar.test", true),
        (["*.example.test"], "sip.example.test", true),
        (["*.example.test"], "example.test", false),
        (["*.example.test"], "a.sip.example.test", false),
        (["registrar.test"], "other.test", false),
        ([], "registrar.test", false),
    ])
    func aCertificateCoversOnlyItsOwnNames(names: [String], host: String, covered: Bool) {
        #expect(SIPTLS.names(names, cover: host) == covered)
    }

    @Test func anIPLiteralRegistrarSendsNoSNIAndAConfiguredNameWins() {
        #expect(SIPTLS.serverName(SIPTLSSettings(), host: "198.18.0.1") == nil)
        #expect(SIPTLS.serverName(SIPTLSSettings(), host: "sip.example.test") == "sip.example.test")
        #expect(SIPTLS.serverName(SIPTLSSettings(serverName: "x.test"), host: "198.18.0.1") == "x.test")
    }
}
