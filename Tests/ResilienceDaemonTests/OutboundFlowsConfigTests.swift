import ResilienceDaemon
import ResiliencePolicyFile
import SIPPlugin
import Testing

/// `outbound: { ..., flows: 2 }` of an account (RFC 5626 §4.2): one flow unless asked, two only
/// with an instance and a reg-id, nothing else.
struct OutboundFlowsConfigTests {
    static func config(_ outbound: String) -> String {
        "accounts:\n  - name: a\n    registrar: example.test\n    user: a\n    domain: example.test\n    password: x\n"
            + "    outbound: \(outbound)\n"
    }

    @Test func anOutboundAccountKeepsOneFlowUnlessItAsksForTwo() throws {
        let one = try DaemonConfigFile.parse(
            Self.config("{ instance-id: \"urn:uuid:00000000-0000-0000-0000-000000000001\", reg-id: 1 }"),
            file: "netres.yaml", directory: "/tmp")
        #expect(one.accounts.first?.account.outboundFlows == 1)
        let two = try DaemonConfigFile.parse(
            Self.config("{ instance-id: \"urn:uuid:00000000-0000-0000-0000-000000000001\", reg-id: 1, flows: 2 }"),
            file: "netres.yaml", directory: "/tmp")
        #expect(two.accounts.first?.account.outboundFlows == 2)
    }

    @Test func twoFlowsWithoutARegIDOrMoreThanTwoAreLocatedErrors() {
        for (outbound, problem) in [
            (
                "{ instance-id: \"urn:uuid:00000000-0000-0000-0000-000000000001\", flows: 2 }",
                "needs instance-id and reg-id"
            ),
            ("{ instance-id: \"urn:uuid:00000000-0000-0000-0000-000000000001\", reg-id: 1, flows: 3 }", "flows"),
        ] {
            do {
                _ = try DaemonConfigFile.parse(Self.config(outbound), file: "bad.yaml", directory: "/tmp")
                Issue.record("\(outbound) accepted")
            } catch {
                #expect(error.line == 7, "\(error)")
                #expect("\(error)".contains(problem), "\(error)")
            }
        }
    }
}
